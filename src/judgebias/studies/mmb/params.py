"""The `mmb:` params block: the checks its schema cannot express, and the typed view its
steps receive (judgebias.workflow.step_dispatch passes `MmbParams` to a step whose ``params``
argument is annotated with it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from judgebias.abilities import Need
from judgebias.config import path_errors
from judgebias.io.yamlread import load_yaml
from judgebias.models.gpu import device_errors
from judgebias.prompts import available_prompts, fields
from judgebias.study import simulated_models, study_models

SIM_TRAITS = ("gamma", "position_bias", "brightness_bias", "noise", "miscalibrated")
BUILTIN_POOL = Path(__file__).with_name("instructions.yaml")  # the built-in instructions


@dataclass(frozen=True)
class Grow:
    """``mmb.instructions.grow``: the writer model adds `n` rephrasings (drawn with `seed`)."""

    writer: str
    n: int
    seed: int


@dataclass(frozen=True)
class Instructions:
    """``mmb.instructions``: the `extra` instruction file and the `grow` writer (or None)."""

    extra: str | None
    grow: Grow | None


@dataclass(frozen=True)
class Sampled:
    """``mmb.probability`` for a judge read from samples: `n` verdicts per (pair,
    instruction, order), `prior` pseudo-counts per label (jobs.sampled_p_first)."""

    n: int
    prior: float


def sampled(params: Mapping[str, Any], judge: str) -> Sampled | None:
    """How `judge`'s p(y | x, a) is read: from samples (its `Sampled`), or from the
    answer token's log-probs (None). ``mmb.probability.by_judge`` overrides ``source``."""
    block = params["mmb"].get("probability") or {}
    source = (block.get("by_judge") or {}).get(judge, block.get("source", "logprobs"))
    if source != "samples":
        return None
    return Sampled(n=int(block.get("samples", 8)), prior=float(block.get("prior", 1.0)))


def probability_keys(params: Mapping[str, Any], judge: str) -> list[str]:
    """The ``mmb.probability`` keys `judge`'s judgements depend on: its source, and n and
    the prior only where it is sampled (a log-prob judge's step is not rerun by them)."""
    block = params["mmb"].get("probability") or {}
    keys = ["mmb.probability.source"] if "source" in block else []
    if judge in (block.get("by_judge") or {}):
        keys.append(f"mmb.probability.by_judge.{judge}")
    if sampled(params, judge):
        keys += [f"mmb.probability.{key}" for key in ("samples", "prior") if key in block]
    return keys


@dataclass(frozen=True)
class Clustering:
    """``mmb.clustering``: the cluster counts `ks`, the clustering `seeds` per K, D_sup's
    size (`support_per_cluster` x K, or x max K for every K with `support` max_k), the
    temperature `tau` of p(z|x) and its sweep, how a pair's p(z|pair) is formed (`pair`)
    and the k-means iterations (`niter`)."""

    ks: tuple[int, ...]
    seeds: int
    support_per_cluster: int
    support: Literal["per_k", "max_k"]
    tau: float
    tau_sweep: tuple[float, ...]
    pair: Literal["mean_prob", "mean_embedding"]
    niter: int


@dataclass(frozen=True)
class BpeReference:
    """``mmb.design.bpe_reference``: amzn/BayesPE's BPE with these `regularisers` at
    `weight` (none: left out)."""

    regularisers: tuple[str, ...]
    weight: float


@dataclass(frozen=True)
class DesignParams:
    """``mmb.design``: the factorial's prompt counts, validation sizes, training and
    sampling seeds, the error-coverage points, the calibration bins and the reference BPE
    (measures.factorial.Design is built from it with the block's entropy)."""

    n_prompts: tuple[int, ...]
    n_val: tuple[int, ...]
    train_seeds: int
    sampling_seeds: int
    coverages: int
    calibration_bins: int
    bpe_reference: BpeReference


@dataclass(frozen=True)
class Report:
    """``mmb.report``: the reported cell (`n_prompts`, `n_val`) and K, and the settings of
    the significance tests (`n_resamples`, `alpha`, `seed`) and bootstrap bands (`n_boot`)."""

    n_prompts: int
    n_val: int
    k: int
    n_resamples: int
    alpha: float
    n_boot: int
    seed: int

    @property
    def cell(self) -> tuple[int, int]:
        """The report's cell of the design: (prompts, validation pairs)."""
        return self.n_prompts, self.n_val


@dataclass(frozen=True)
class MmbParams:
    """What MMB's steps read, resolved once from the validated params.

    The analysis, figure and data steps receive it instead of the params mapping; the
    model jobs keep the mapping (the core's job runner reads the panel and the journal).

    Attributes
    ----------
    models : tuple of str
        The judges (``mmb.models``).
    dataset : Mapping
        ``mmb.dataset`` as validated: the data builder (data.pairs.build_dataset)
        consumes it whole.
    prompt : str
        The pairwise question's template id.
    instructions : Instructions
        The extra instruction file and the pool's writer.
    order, order_seed
        The answer order of each (pair, instruction) and its seed.
    embedding : Mapping
        ``mmb.embedding`` as validated (embed.EmbeddingSpec.from_params reads it, and
        ``cache_dir`` names the embedding cache).
    clustering : Clustering
    entropy : str
        ``per_group`` or ``per_sample`` (the MMB objective's entropy term).
    design : DesignParams
    report : Report
    simulated : frozenset of str
        The judges the sim backend answers for (figures and the report mark them).
    experts : Mapping
        Each simulated judge's planted experts (``panel.<judge>.sim.mmb.experts``: style
        -> instruction phrase), which the top prompts are checked against.
    sampled : Mapping
        The judges read from samples (``mmb.probability``) and how (`Sampled`).
    """

    models: tuple[str, ...]
    dataset: Mapping[str, Any]
    prompt: str
    instructions: Instructions
    order: Literal["random", "both"]
    order_seed: int
    embedding: Mapping[str, Any]
    clustering: Clustering
    entropy: Literal["per_group", "per_sample"]
    design: DesignParams
    report: Report
    simulated: frozenset[str]
    experts: Mapping[str, Mapping[str, str]]
    sampled: Mapping[str, Sampled]

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> MmbParams:
        """The view of validated `params` (the schema filled every default in)."""
        block = params["mmb"]
        models = tuple(study_models(params, "mmb"))
        simulated = frozenset(simulated_models(params, list(models)))
        grow, design = block["instructions"]["grow"], block["design"]
        clustering, report = block["clustering"], block["report"]
        return cls(
            models=models, dataset=block["dataset"], prompt=block["prompt"],
            instructions=Instructions(
                extra=block["instructions"]["extra"],
                grow=Grow(writer=grow["writer"], n=grow["n"], seed=grow.get("seed", 0))
                if grow else None),
            order=block["order"], order_seed=block["order_seed"],
            embedding=block["embedding"],
            clustering=Clustering(
                ks=tuple(clustering["ks"]), seeds=clustering["seeds"],
                support_per_cluster=clustering["support_per_cluster"],
                support=clustering["support"], tau=clustering["tau"],
                tau_sweep=tuple(clustering["tau_sweep"]), pair=clustering["pair"],
                niter=clustering["niter"]),
            entropy=block["entropy"],
            design=DesignParams(
                n_prompts=tuple(design["n_prompts"]), n_val=tuple(design["n_val"]),
                train_seeds=design["train_seeds"], sampling_seeds=design["sampling_seeds"],
                coverages=design["coverages"], calibration_bins=design["calibration_bins"],
                bpe_reference=BpeReference(
                    regularisers=tuple(design["bpe_reference"]["regularisers"]),
                    weight=design["bpe_reference"]["weight"])),
            report=Report(**{key: report[key] for key in (
                "n_prompts", "n_val", "k", "n_resamples", "alpha", "n_boot", "seed")}),
            simulated=simulated,
            experts={judge: params["panel"][judge]["sim"]["mmb"]["experts"]
                     for judge in models if judge in simulated},
            sampled={judge: how for judge in models
                     if (how := sampled(params, judge)) is not None})


def builtin_pool() -> list[dict[str, str]]:
    """The built-in instruction pool (instructions.yaml in this package)."""
    return load_yaml(BUILTIN_POOL.read_text(encoding="utf-8"))


def validate(params: Mapping[str, Any]) -> list[str]:
    """Judges and writer in the panel, simulated judges with their planted traits, the
    report cell inside the design, enough instructions for the largest ensemble, the
    prompt's placeholders, and every file the block names."""
    mmb, panel = params["mmb"], params["panel"]
    errors = [f"mmb.models[{i}]: model {key!r} is not defined under panel"
              for i, key in enumerate(mmb["models"]) if key not in panel]
    errors += _probability_errors(params)
    for key in mmb["models"]:
        if key in panel and panel[key]["backend"] == "sim":
            errors += _sim_trait_errors(f"panel.{key}.sim.mmb", panel[key]["sim"].get("mmb"))
    grow = mmb["instructions"]["grow"]
    if grow and grow["writer"] not in panel:
        errors.append(f"mmb.instructions.grow.writer: model {grow['writer']!r} is not "
                      "defined under panel")
    if mmb["prompt"] not in available_prompts():
        errors.append(f"mmb.prompt: unknown prompt id {mmb['prompt']!r}")
    elif fields(mmb["prompt"]) != {"Instruction", "Prompt"}:
        errors.append(f"mmb.prompt: {mmb['prompt']!r} must have the placeholders "
                      "Instruction and Prompt")
    errors += _design_errors(mmb)
    errors += _dataset_errors(mmb["dataset"])
    embedding = mmb["embedding"]
    if embedding["pretrained"] and embedding["checkpoint"]:
        errors.append("mmb.embedding: give pretrained or checkpoint, not both")
    errors += path_errors("mmb.embedding.checkpoint", embedding["checkpoint"])
    errors += device_errors("mmb.embedding", embedding["device"], embedding["gpus"])
    errors += path_errors("mmb.instructions.extra", mmb["instructions"]["extra"])
    return errors


def _probability_errors(params: Mapping[str, Any]) -> list[str]:
    """``by_judge`` names MMB judges; a sampled judge samples at a temperature above 0
    (at 0 its n verdicts would repeat one answer and p would be 1/(n+2) or (n+1)/(n+2))."""
    mmb, panel = params["mmb"], params["panel"]
    by_judge = (mmb.get("probability") or {}).get("by_judge") or {}
    errors = [f"mmb.probability.by_judge.{key}: {key!r} is not one of mmb.models"
              for key in by_judge if key not in mmb["models"]]
    for key in mmb["models"]:
        temperature = panel.get(key, {}).get("sampling", {}).get("temperature")
        if sampled(params, key) and temperature is not None and temperature <= 0:
            errors.append(f"mmb.probability: judge {key!r} is read from samples, but "
                          f"panel.{key}.sampling.temperature is {temperature}: its "
                          "verdicts would all be one answer; sample at a temperature "
                          "above 0")
    return errors


def _sim_trait_errors(where: str, block: Any) -> list[str]:
    if not isinstance(block, Mapping):
        return [f"{where}: a simulated judge needs its planted MMB traits (experts: "
                "{style: phrase of its best instruction}; see judgebias.studies.mmb.sim)"]
    errors = []
    experts = block.get("experts")
    if not isinstance(experts, Mapping) or not all(
            isinstance(v, str) and v for v in experts.values()):
        errors.append(f"{where}.experts: must map styles to instruction phrases")
    errors += [f"{where}.{key}: must be a number" for key in SIM_TRAITS
               if key in block and not isinstance(block[key], int | float)]
    share = block.get("miscalibrated", 1.0)
    if isinstance(share, int | float) and not 0 <= share <= 1:
        errors.append(f"{where}.miscalibrated: must lie in [0, 1], got {share}")
    errors += [f"{where}.{key}: unknown trait (known: experts, {', '.join(SIM_TRAITS)})"
               for key in block if key not in ("experts", *SIM_TRAITS)]
    return errors


def _design_errors(mmb: Mapping[str, Any]) -> list[str]:
    design, report, ks = mmb["design"], mmb["report"], mmb["clustering"]["ks"]
    errors = []
    if "k" in report and report["k"] not in ks:
        errors.append(f"mmb.report.k: {report['k']} is not one of mmb.clustering.ks {ks}")
    for key in ("n_prompts", "n_val"):
        if report[key] not in design[key]:
            errors.append(f"mmb.report.{key}: {report[key]} is not one of "
                          f"mmb.design.{key} {design[key]}")
    largest, pool = max(design["n_prompts"]), pool_size_bound(mmb["instructions"])
    if pool is not None and largest > pool:
        errors.append(f"mmb.design.n_prompts: {largest} prompts per ensemble, but the pool "
                      f"can hold at most {pool} (built-in {len(builtin_pool())}, "
                      "mmb.instructions.extra and grow.n)")
    return errors


def pool_size_bound(instructions: Mapping[str, Any]) -> int | None:
    """The most instructions the pool can hold: the built-in ones, the `extra` file's
    entries and the `grow` writer's n (it may add fewer: the pool step checks again).
    None when the extra file cannot be read (its own check reports it)."""
    extra = 0
    if instructions["extra"]:
        try:
            entries = load_yaml(Path(instructions["extra"]).read_text(encoding="utf-8"))
        except (OSError, ValueError, yaml.YAMLError):
            return None
        extra = len(entries) if isinstance(entries, list) else 0
    grown = instructions["grow"]["n"] if instructions["grow"] else 0
    return len(builtin_pool()) + extra + grown


def _dataset_errors(dataset: Mapping[str, Any]) -> list[str]:
    name = dataset["name"]
    if name not in dataset:
        return [f"mmb.dataset.{name}: mmb.dataset.name is {name!r} but that block is missing"]
    errors = []
    if name == "hpdv2":
        hpd = dataset["hpdv2"]
        for key, directory in (("test", False), ("train", False), ("image_root", True)):
            errors += path_errors(f"mmb.dataset.hpdv2.{key}", hpd[key], directory=directory,
                                  what=DOWNLOADS[f"hpdv2.{key}"])
    if dataset.get("mjbench"):
        for key, directory in (("path", False), ("image_root", True)):
            errors += path_errors(f"mmb.dataset.mjbench.{key}", dataset["mjbench"][key],
                                  directory=directory, what=DOWNLOADS[f"mjbench.{key}"])
    return errors


# What belongs at each data path and where to get it (seed 002 §5), for `judgebias
# validate` to say beside a path that does not exist yet (configs/mmb.yaml ships
# placeholders).
_HPD = "https://huggingface.co/datasets/zhwang/HPDv2 (HPSv2's README: github.com/tgxs002/HPSv2)"
DOWNLOADS = {
    "hpdv2.test": f"HPDv2's test.json (400 prompts x 9 ranked images; seed 002 §5), from {_HPD}",
    "hpdv2.train": f"HPDv2's train.json (~107k prompts' preference pairs), from {_HPD}",
    "hpdv2.image_root": f"the unpacked HPD folder holding train/ and test/ images, from {_HPD}",
    "mjbench.path": ("an MJ-Bench bias file (one row per image: prompt, images_dir, ...), "
                     "from MJ-Bench's bias subset (Chen et al. 2024; "
                     "github.com/MJ-Bench/MJ-Bench)"),
    "mjbench.image_root": "the folder MJ-Bench's images_dir paths are relative to",
}


def needs(params: Mapping[str, Any]) -> list[Need]:
    """MMB's judges compare two images in one request and are read through p(y | x, a),
    the answer token's probability (seed 002 §3); the writer rephrases text only."""
    block = params["mmb"]
    judges = study_models(params, "mmb")
    by_logprobs = [j for j in judges if not sampled(params, j)]
    by_samples = [j for j in judges if sampled(params, j)]
    out = []
    if by_logprobs:
        out.append(Need("mmb", "judge", by_logprobs, images_per_request=2,
                        answer_logprobs=True,
                        why={"answer_logprobs": "p(y | x, a) is the answer token's "
                                                "probability (mmb.probability.source: "
                                                "logprobs)"},
                        fallback="mmb.probability.by_judge.<model>: samples (p(y | x, a) "
                                 "from n sampled verdicts, n calls each), or leave the "
                                 "model out of mmb.models"))
    if by_samples:
        out.append(Need("mmb", "judge", by_samples, images_per_request=2, temperature=True,
                        why={"temperature": "p(y | x, a) is estimated from verdicts "
                                            "sampled at a temperature above 0"},
                        fallback="leave the model out of mmb.models"))
    grow = (block.get("instructions") or {}).get("grow")
    if grow:
        out.append(Need("mmb", "writer", [grow["writer"]],
                        fallback="another mmb.instructions.grow.writer"))
    return out
