"""The `mmb:` params block, declared once: its typed view (judgebias.paramsblock).

Each field of :class:`MmbParams` is a key of the block, with its type, default, bounds and
description (the docstring below it); its nested blocks (:class:`Dataset`,
:class:`Embedding`, :class:`Clustering`, :class:`DesignParams`...) likewise. The block's
JSON schema, the view its steps receive (judgebias.workflow.step_dispatch passes it to a
step argument annotated with it) and the keys its rules declare (``block_keys``) all
come from it. The fields marked ``derived()`` are computed from
other keys. What the schema cannot express is checked in ``validate``; it, ``needs`` and
the plan, report and card hooks take the params mapping.

Why this module is long: the block has fourteen keys and twelve nested parts (a dataset in
three formats, the instruction pool, clustering, design, probability, report, the layout
check...), each key
declared once with its description, and the checks the schema cannot express read those
parts; split, the checks would import every part and one block's declaration would be
spread over files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    TypeVar,
)

import yaml
from pydantic import Field

from judgebias.abilities import Need
from judgebias.config import path_errors
from judgebias.io.yamlread import load_yaml
from judgebias.models.gpu import device_errors
from judgebias.paramsblock import Positive, block_keys, block_values, derived, key, part, view
from judgebias.prompts import available_prompts, fields, image_places
from judgebias.study import simulated_models, study_models

SIM_TRAITS = ("gamma", "position_bias", "brightness_bias", "noise", "miscalibrated",
              "layout_shift")
BUILTIN_POOL = Path(__file__).with_name("instructions.yaml")  # the built-in instructions

Part = TypeVar("Part")


class _OneOfNull:
    """``X | None`` as JSON Schema's ``oneOf: [null, X]``, the words the block's reference
    has always used (pydantic writes ``anyOf: [X, null]``, which block_schema turns into
    ``type: [object, "null"]``): the same values, its own description left to the key's."""

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema: dict[str, Any] = handler(core_schema)
        branches = [b for b in schema.pop("anyOf") if b != {"type": "null"}]
        for branch in branches:
            handler.resolve_ref_schema(branch).pop("description", None)
        return {"oneOf": [{"type": "null"}, *branches], **schema}


OrNull = Annotated[Part | None, _OneOfNull]  # a part or null (``oneOf``)
AtLeastOne = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
DegradationParams = Annotated[dict[str, Any], Field(description="One degradation's parameters.")]
Source = Literal["logprobs", "samples"]
JudgeSource = Annotated[Source, Field(description="This judge's source: logprobs or samples.")]


@view
class Synthetic:
    """Generated images in visual styles with a planted quality and simulated human
    preferences, written as HPDv2 and MJ-Bench files and read back by the real importers
    (data.synthetic.generate: a key left out takes its default there)."""

    styles: tuple[str, ...] | None = key(absent=True, min_length=1, unique=True)
    """The visual styles (names of judgebias.studies.mmb.data.synthetic.STYLES); a prompt
    group has one style."""
    n_test_groups: int | None = key(absent=True, ge=1)
    """Test prompt groups (HPSv2: 400); every pair of a group's images is a test pair."""
    images_per_test_group: int | None = key(absent=True, ge=2)
    """Images per test group (HPSv2: 9)."""
    n_train_groups: int | None = key(absent=True, ge=1)
    """Training prompt groups: one validation pair each; their images form the support set
    D_sup."""
    images_per_train_group: int | None = key(absent=True, ge=2)
    """Images per training group."""
    n_mjb_groups: int | None = key(absent=True, ge=0)
    """MJ-Bench-shaped prompt groups (originals, degraded counterparts, folds); 0: none."""
    images_per_mjb_group: int | None = key(absent=True, ge=2)
    """Images per MJ-Bench-shaped group."""
    gamma: float | None = key(absent=True, gt=0)
    """The simulated humans prefer the better image with probability sigmoid(gamma x
    quality difference)."""
    image_size: int | None = key(absent=True, ge=16)
    """Side of each image, in pixels."""
    seed: int | None = key(absent=True)
    """Seeds the images and the simulated humans."""


@view
class Hpdv2:
    """HPDv2 as published (HPSv2's README): the HPD folder holds train/ and test/ with
    train.json and test.json, whose image paths are relative to their own folder."""

    test: str = key()
    """test.json: [{prompt, image_path[], rank[], raw_annotation}]"""
    train: str = key()
    """train.json: [{prompt, image_path[] (file_path[] in the README), human_preference[],
    user_hash}]"""
    image_root: str = key()
    """The HPD folder: test.json's paths resolve inside image_root/test, train.json's inside
    image_root/train."""
    n_test_groups: int | None = key(absent=True, ge=1)
    """test.json's published size in prompts (HPDv2: 400; seed 002 §5), which `judgebias
    plan` counts from while the files are not downloaded yet (with images_per_test_group
    and n_train_groups); the files, once there, are counted exactly."""
    images_per_test_group: int | None = key(absent=True, ge=2)
    """Images per test prompt (HPDv2: 9), for `judgebias plan` before the download."""
    n_train_groups: int | None = key(absent=True, ge=1)
    """train.json's prompts (HPDv2: about 107k), for `judgebias plan` before the download:
    one validation candidate each, capped by val_candidates."""


@view
class Mjbench:
    """An MJ-Bench bias file and the folder its images lie in."""

    path: str = key()
    """An MJ-Bench bias file: [{demographic, occupation, images_dir, prompt, ...}]"""
    image_root: str = key()
    """The folder images_dir paths resolve inside."""
    n_groups: int | None = key(absent=True, ge=1)
    """The file's prompts, for `judgebias plan` before the download (with
    images_per_group); the file, once there, is counted exactly."""
    images_per_group: int | None = key(absent=True, ge=1)
    """Images per prompt, for `judgebias plan` before the download."""


@view
class MjbenchProtocol:
    """Seed 002 §5's MJBench construction: prompts in folds, each original paired with a
    degraded counterpart and preferred."""

    n_folds: int = key(10, ge=2)
    """Folds of prompts (all images of a prompt in one fold), left out one at a time."""
    counterpart: Literal["other", "same"] = key("other")
    """other: the degraded version of another image of the same prompt; same: of the
    original itself."""
    degradations: dict[str, DegradationParams] | None = key(absent=True, min_length=1)
    """The degradations by name with their parameters (the paper names them but prints no
    parameters); each pair draws one."""


@view
class Dataset:
    """The image pairs: synthetic (offline, in HPDv2 and MJ-Bench shapes) or HPDv2, with an
    optional MJ-Bench bias file."""

    name: Literal["synthetic", "hpdv2"] = key()
    """synthetic, or hpdv2 (HPSv2's test.json and train.json)."""
    seed: int = key(0)
    """Draws the validation pair per training group, the support set's order, the MJBench
    folds and (orientation random) which image of each test pair is A."""
    orientation: Literal["random", "listed"] = key("random")
    """Which image of an HPSv2 test pair is A: drawn per pair with seed (spec mmb.md;
    recorded in the data summary), or the file's order (A = the earlier image). AUC-PR and
    F1 take 'A preferred' as the positive class, so they depend on it."""
    val_candidates: int | None = key(None, ge=1)
    """Judge only this many validation candidates (a seeded sample of the training groups'
    pairs): D_val takes at most max(n_val) of them per training seed, and the real HPDv2
    train set has about 107k prompts. null: every candidate."""
    # None where params.yaml leaves the block out (annotated without ``| None``: for an
    # absent ``Part | None``, block_schema keeps the part's ``$ref`` instead of inlining it)
    synthetic: Synthetic = key(absent=True)
    """Generated images in visual styles with a planted quality and simulated human
    preferences, written as HPDv2 and MJ-Bench files and read back by the real
    importers."""
    hpdv2: Hpdv2 = key(absent=True)
    """HPDv2 as published (HPSv2's README): the HPD folder holds train/ and test/ with
    train.json and test.json, whose image paths are relative to their own folder."""
    mjbench: OrNull[Mjbench] = key(None)
    """An MJ-Bench bias file, optional; null: none."""
    mjbench_protocol: MjbenchProtocol = key(absent=True)
    """Seed 002 §5's MJBench construction: prompts in folds, each original paired with a
    degraded counterpart and preferred."""


@view
class Grow:
    """``mmb.instructions.grow``: the writer model adds `n` rephrasings (drawn with `seed`)."""

    writer: str = key()
    """The panel model that writes the rephrasings."""
    n: int = key(ge=1)
    """Rephrasings to write."""
    seed: int = key(0)
    """Seeds the draw of the rephrasings."""


@view
class Instructions:
    """The instruction pool: the 44 built-in instructions, plus `extra` and `grow`."""

    extra: str | None = key(None)
    """A YAML file of more instructions (list of {id, kind, text}) joining the built-in
    pool."""
    grow: OrNull[Grow] = key(None)
    """Grow the pool with a panel model as the writer (seed 002 §5, LLM-driven
    rephrasings)."""


@dataclass(frozen=True)
class Sampled:
    """``mmb.probability`` for a judge read from samples: `n` verdicts per (pair,
    instruction, order), `prior` pseudo-counts per label (jobs.sampled_p_first)."""

    n: int
    prior: float


# mmb.probability's defaults, for a block that leaves a key out (sampled() reads the mapping)
SOURCE, SAMPLES, PRIOR = "logprobs", 8, 1.0


@view
class Probability:
    """How p(y | x, a) is read from a judge (seed 002 §3; studies/mmb/jobs.py): the answer
    token's log-probs, or n sampled verdicts per (pair, instruction, order) for a judge
    without log-probs."""

    source: Source = key(SOURCE)
    """logprobs: the softmax of the two labels' log-probs (one call); samples: (k + prior) /
    (n + 2 prior) from n verdicts sampled at the judge's temperature (n calls)."""
    samples: int = key(SAMPLES, ge=2)
    """Verdicts sampled per (pair, instruction, order) where the source is samples; each is
    a call (the judge's sampling seed + r)."""
    prior: float = key(PRIOR, gt=0)
    """Pseudo-count per label of the sampled estimate: 1 is Laplace's rule of succession
    (the smoothing of a single parsed choice, 2/3 or 1/3), 0.5 Jeffreys."""
    by_judge: dict[str, JudgeSource] = key(default_factory=dict, schema={"default": {}})
    """A source per judge (panel key) that overrides source: a mixed panel reads GPT-4o's
    log-probs and samples Claude."""

    def of(self, judge: str) -> Sampled | None:
        """How `judge`'s p(y | x, a) is read, as :func:`sampled` says: its `Sampled`, or
        None for the answer token's log-probs. The judge step asks it of its typed view,
        so it reads `samples` and `prior` only for a sampled judge, and of `by_judge`
        only the judge's own entry."""
        if self.by_judge.get(judge, self.source) != "samples":
            return None
        return Sampled(n=self.samples, prior=self.prior)


def sampled(params: Mapping[str, Any], judge: str) -> Sampled | None:
    """How `judge`'s p(y | x, a) is read: from samples (its `Sampled`), or from the
    answer token's log-probs (None). ``mmb.probability.by_judge`` overrides ``source``."""
    block = params["mmb"].get("probability") or {}
    source = (block.get("by_judge") or {}).get(judge, block.get("source", SOURCE))
    if source != "samples":
        return None
    return Sampled(n=int(block.get("samples", SAMPLES)),
                   prior=float(block.get("prior", PRIOR)))


def probability_keys(params: Mapping[str, Any], judge: str) -> list[str]:
    """The ``mmb.probability`` keys `judge`'s judgements depend on: its source, and n and
    the prior only where it is sampled (a log-prob judge's step is not rerun by them)."""
    block = params["mmb"].get("probability") or {}
    names = ["source"] if "source" in block else []
    if sampled(params, judge):
        names += [name for name in ("samples", "prior") if name in block]
    keys = block_keys(MmbParams, only=[f"probability.{name}" for name in names])
    if judge in (block.get("by_judge") or {}):
        [by_judge] = block_keys(MmbParams, only=("probability.by_judge",))
        keys.insert(1 if names[:1] == ["source"] else 0, f"{by_judge}.{judge}")
    return keys


@view
class Embedding:
    """The CLIP image embeddings (open_clip) the clusters are computed from."""

    architecture: str = key("ViT-B-16")
    """The open_clip architecture."""
    pretrained: str | None = key(None)
    """An open_clip pretrained tag (downloads weights once); null with no checkpoint:
    random weights from init_seed."""
    checkpoint: str | None = key(None)
    """A local checkpoint file (nothing is downloaded)."""
    init_seed: int = key(0)
    """Seeds the random weights used when neither pretrained nor checkpoint is set."""
    image_size: int | None = key(None, ge=16)
    """Input size (open_clip force_image_size); null: the architecture's own (224 for
    ViT-B-16)."""
    batch_size: int = key(64, ge=1)
    """Images per embedding batch."""
    device: Literal["auto", "cpu", "cuda"] = key("auto")
    """auto: CUDA on the GPUs the job is given (gpus), else the CPU; cuda needs gpus >= 1;
    cpu asks for none."""
    gpus: int = key(0, ge=0)
    """GPUs the embedding rule asks Snakemake (or Slurm) for; the job holds that many
    devices of its own (JUDGEBIAS_GPU_SLOTS lets jobs share one)."""
    cache_dir: str = key(".judgebias/embeddings", run_setting=True)
    """Embeddings cached per (model, image hash); outside every output, like the
    journal."""


@view
class Clustering:
    """The image clusters (FAISS k-means on the embeddings) whose instruction weights MMB
    fits."""

    ks: tuple[AtLeastOne, ...] = key(min_length=1, unique=True)
    """Cluster counts K (seed 002 Table 3: 4, 8, 16, 32, 64)."""
    seeds: int = key(ge=1)
    """Clustering seeds per K (the paper uses 5)."""
    support_per_cluster: int = key(256, ge=1)
    """|D_sup| = support_per_cluster x K (seed 002 §5: 256 x K); the embedding step embeds
    support_per_cluster x max(K)."""
    support: Literal["per_k", "max_k"] = key("per_k")
    """per_k: each K clusters the first support_per_cluster x K images of the seeded
    support order (seed 002 §5: 'always composed of 256 x K samples'); max_k: every K
    clusters the same support_per_cluster x max(K) images, so Table 3's comparison across
    K varies K alone, not the data too (and small K get more images)."""
    tau: float = key(0.05, gt=0)
    """Temperature of p(z|x) (never given by the paper; spec default 0.05)."""
    tau_sweep: tuple[Positive, ...] = key((0.01, 0.03, 0.1, 0.3, 1.0), unique=True)
    """The temperatures of the report's tau sweep."""
    pair: Literal["mean_prob", "mean_embedding"] = key("mean_prob")
    """p(z|pair): mean of the two images' p(z|x), or p(z|normalised mean embedding)."""
    niter: int = key(25, ge=1)
    """k-means iterations."""


@view
class BpeReference:
    """``mmb.design.bpe_reference``: amzn/BayesPE's BPE with these `regularisers` at
    `weight` (none: left out)."""

    regularisers: tuple[Literal["printed", "corrected"], ...] = key(("printed", "corrected"),
                                                                    unique=True)
    """[] leaves the reference BPE out."""
    weight: float = key(0.1, gt=0)
    """The regulariser's weight (the reference's kl_weight, 0.1)."""


@view
class DesignParams:
    """Seed 002 §5's factorial design; every configuration is computed from the judged
    probabilities, without a judge call (measures.factorial.Design is built from it with
    the block's entropy)."""

    n_prompts: tuple[AtLeastOne, ...] = key((5, 10, 20), min_length=1, unique=True)
    """Ensemble sizes: instructions per ensemble."""
    n_val: tuple[NonNegativeInt, ...] = key((5, 10, 20, 50), min_length=1, unique=True)
    """Validation set sizes: pairs in D_val."""
    train_seeds: int = key(3, ge=1)
    """Training seeds: each draws D_val from the validation candidates."""
    sampling_seeds: int = key(50, ge=2)
    """Sampling seeds: each draws the instructions of the ensemble (the paper: 50)."""
    coverages: int = key(20, ge=2)
    """Points of the error-coverage curves (Fig. 3, and Fig. 5 for every prompt count)."""
    calibration_bins: int = key(15, ge=2)
    """Equal-width bins of the top-label confidence for ECE and MCE (spec mmb.md: 15, Guo
    et al.). The reference BPE code (amzn/BayesPE, src/evaluation.py) uses 10; MCE, the
    largest gap over non-empty bins, moves a lot with the binning, so compare published
    MCEs at their own bin count."""
    bpe_reference: BpeReference = key(BpeReference())
    """Extra baselines: BPE as amzn/BayesPE fits it (mixture likelihood inside the log;
    studies/mmb/bpe_reference.py), so a published BPE number can be matched to its
    objective. Each regulariser is its own method: 'BPE-ref (printed)' has the code's sum w
    exp(w), 'BPE-ref (corrected)' the entropy sum w log w its docstring names. The table's
    BPE is eq. 5 (exact softmax of the validation log-likelihoods)."""


@view
class Report:
    """The cell of the design and the K the report shows, and the settings of its tests
    and bands."""

    n_prompts: int = key(10)
    """The cell of Tables 2-3 and Fig. 3 (the paper's 10 prompts, 20 samples)."""
    n_val: int = key(20)
    """The validation size of the reported cell."""
    k: int = key(ge=1)
    """The K of MMB in Tables 1, 2, 4 and Figs. 1, 3."""
    n_resamples: int = key(10000, ge=100)
    """Resamples of the paired permutation tests against the best method."""
    alpha: float = key(0.05, gt=0, lt=1)
    """FDR level of the Benjamini-Yekutieli correction (bold: the best method or not
    significantly different from it)."""
    n_boot: int = key(1000, ge=100)
    """Bootstrap resamples of the error-coverage bands (Fig. 3) and of the card's
    position-bias measures."""
    seed: int = key(0)
    """Seeds the tests and the bootstraps."""

    @property
    def cell(self) -> tuple[int, int]:
        """The report's cell of the design: (prompts, validation pairs)."""
        return self.n_prompts, self.n_val


LAYOUTS = ("paper", "shared_first")
Layout = Literal["paper", "shared_first"]


def judge_prompt(prompt: str, layout: str) -> str:
    """The template a judge is asked with: ``mmb.prompt`` in the paper's layout, its
    ``<prompt>_shared_first`` variant in the shared-first one (``mmb.layout``)."""
    return prompt if layout == "paper" else f"{prompt}_{layout}"


def other_layout(layout: str) -> str:
    """The layout the layout check asks besides ``mmb.layout``."""
    return LAYOUTS[1 - LAYOUTS.index(layout)]


@view
class LayoutCheck:
    """``mmb.layout_check``: the layout's own effect, measured (issue 45). For each judge,
    the (pair, instruction) items of `n_pairs` pairs drawn with `seed` are asked in the
    other layout too (one job per judge, journaled; their answers in ``mmb.layout`` are
    the judge job's), and the paired difference in p(the image shown first is preferred)
    and in the verdicts between the layouts is reported with a 95 % interval over pairs
    (measures/layout.py)."""

    n_pairs: int = key(0, ge=0)
    """Pairs drawn from the pair table (every split) whose items each judge is asked in
    both layouts; 0: off (no job, nothing in the report)."""
    n_instructions: int = key(0, ge=0)
    """Instructions per drawn pair (drawn with seed per pair); 0: every instruction of the
    pool. Each item is one call per sample in the other layout."""
    seed: int = key(0)
    """Draws the pairs and each pair's instructions."""


# Every step receives the view instead of the params mapping; a step that runs a model job
# also takes the run context (judgebias.models.context.RunContext: the journal, the panel)
# and hands the job the values it needs of this view.
@view
class MmbParams:
    """Seed 002 -- calibrating a pairwise image judge with image-cluster-aware Bayesian
    prompt ensembles."""

    PARAMS_KEY: ClassVar[str] = "mmb"

    models: tuple[str, ...] = key(min_length=1, unique=True)
    """The judges (panel keys); each judges every (pair, instruction) once."""
    dataset: Dataset = key()
    """The image pairs: synthetic (offline, in HPDv2 and MJ-Bench shapes) or HPDv2, with
    an optional MJ-Bench bias file."""
    prompt: str = key("mmb_pairwise")
    """Template of the pairwise question (instruction + generation prompt + two
    images)."""
    instructions: Instructions = part(Instructions)
    """The instruction pool: the 44 built-in instructions, plus `extra` and `grow`."""
    order: Literal["random", "both"] = key("random")
    """Answer order: one order per (pair, instruction) drawn with order_seed, or both
    orders averaged."""
    order_seed: int = key(0)
    """Seeds the order each (pair, instruction) is shown in (order: random)."""
    layout: Layout = key("paper")
    """Where the parts of a judge's request go (issue 45). paper: the instruction, the
    generation prompt and the answer format, then the two images (the template
    ``prompt`` as it is); shared_first: the two images in the order shown, the generation
    prompt and the answer format, the instruction last (its variant
    ``<prompt>_shared_first``), so the requests about a pair shown in one order share
    everything but the instruction and a provider's prompt cache serves that prefix. The
    words are the same, their order is not: a judge may answer differently
    (layout_check measures by how much)."""
    layout_check: LayoutCheck = part(LayoutCheck)
    """The layout's own effect, measured on a sample: each judge asked in both layouts,
    and the paired difference with a 95 % interval over pairs (0 pairs: off)."""
    probability: Probability = part(Probability)
    """How p(y | x, a) is read from a judge (seed 002 §3; studies/mmb/jobs.py): the answer
    token's log-probs, or n sampled verdicts per (pair, instruction, order) for a judge
    without log-probs."""
    embedding: Embedding = key()
    """The CLIP image embeddings (open_clip) the clusters are computed from."""
    clustering: Clustering = key()
    """The image clusters (FAISS k-means on the embeddings) whose instruction weights MMB
    fits."""
    entropy: Literal["per_group", "per_sample"] = key("per_group")
    """per_group: the spec's reading (K=1 is BPE); per_sample: eq. 9 as printed."""
    design: DesignParams = key()
    """Seed 002 §5's factorial design; every configuration is computed from the judged
    probabilities, without a judge call."""
    report: Report = key()
    """The cell of the design and the K the report shows, and the settings of its tests
    and bands."""
    simulated: frozenset[str] = derived()
    """The judges the sim backend answers for (figures and the report mark them)."""
    experts: dict[str, dict[str, str]] = derived()
    """Each simulated judge's planted experts (``panel.<judge>.sim.mmb.experts``: style ->
    instruction phrase), which the top prompts are checked against."""
    sampled: dict[str, Sampled] = derived()
    """The judges read from samples (``mmb.probability``) and how (`Sampled`)."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> MmbParams:
        """The view of validated `params` (the schema filled every default in)."""
        models = study_models(params, "mmb")
        simulated = frozenset(simulated_models(params, models))
        return cls(
            **block_values(params, "mmb"),
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
    errors = [f"mmb.models[{i}]: model {judge!r} is not defined under panel"
              for i, judge in enumerate(mmb["models"]) if judge not in panel]
    errors += _probability_errors(params)
    for judge in mmb["models"]:
        if judge in panel and panel[judge]["backend"] == "sim":
            errors += _sim_trait_errors(f"panel.{judge}.sim.mmb",
                                        panel[judge]["sim"].get("mmb"))
    grow = mmb["instructions"]["grow"]
    if grow and grow["writer"] not in panel:
        errors.append(f"mmb.instructions.grow.writer: model {grow['writer']!r} is not "
                      "defined under panel")
    errors += _prompt_errors(mmb)
    errors += _design_errors(mmb)
    errors += _dataset_errors(mmb["dataset"])
    embedding = mmb["embedding"]
    if embedding["pretrained"] and embedding["checkpoint"]:
        errors.append("mmb.embedding: give pretrained or checkpoint, not both")
    errors += path_errors("mmb.embedding.checkpoint", embedding["checkpoint"])
    errors += device_errors("mmb.embedding", embedding["device"], embedding["gpus"])
    errors += path_errors("mmb.instructions.extra", mmb["instructions"]["extra"])
    return errors


def _prompt_errors(mmb: Mapping[str, Any]) -> list[str]:
    """The template of every layout a judge is asked in (``mmb.layout``, and the other
    one where the layout check is on) exists, with the placeholders Instruction and
    Prompt and two image places, or none (the images after the text)."""
    layout = mmb.get("layout", "paper")
    check = (mmb.get("layout_check") or {}).get("n_pairs", 0) > 0
    errors = []
    for asked in (layout, other_layout(layout)) if check else (layout,):
        prompt = judge_prompt(mmb["prompt"], asked)
        where = "mmb.prompt" if asked == "paper" else f"mmb.layout ({asked})"
        if prompt not in available_prompts():
            errors.append(f"{where}: unknown prompt id {prompt!r}"
                          + ("" if asked == "paper" else
                             f" (the {asked} variant of mmb.prompt {mmb['prompt']!r})"))
        elif fields(prompt) != {"Instruction", "Prompt"}:
            errors.append(f"{where}: {prompt!r} must have the placeholders Instruction and "
                          "Prompt")
        elif image_places(prompt) not in (0, 2):
            errors.append(f"{where}: {prompt!r} marks {image_places(prompt)} image places; "
                          "a pairwise judge's template marks 2, or none")
    return errors


def _probability_errors(params: Mapping[str, Any]) -> list[str]:
    """``by_judge`` names MMB judges; a sampled judge samples at a temperature above 0
    (at 0 its n verdicts would repeat one answer and p would be 1/(n+2) or (n+1)/(n+2))."""
    mmb, panel = params["mmb"], params["panel"]
    by_judge = (mmb.get("probability") or {}).get("by_judge") or {}
    errors = [f"mmb.probability.by_judge.{judge}: {judge!r} is not one of mmb.models"
              for judge in by_judge if judge not in mmb["models"]]
    for judge in mmb["models"]:
        temperature = panel.get(judge, {}).get("sampling", {}).get("temperature")
        if sampled(params, judge) and temperature is not None and temperature <= 0:
            errors.append(f"mmb.probability: judge {judge!r} is read from samples, but "
                          f"panel.{judge}.sampling.temperature is {temperature}: its "
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
    errors += [f"{where}.{trait}: must be a number" for trait in SIM_TRAITS
               if trait in block and not isinstance(block[trait], int | float)]
    share = block.get("miscalibrated", 1.0)
    if isinstance(share, int | float) and not 0 <= share <= 1:
        errors.append(f"{where}.miscalibrated: must lie in [0, 1], got {share}")
    errors += [f"{where}.{trait}: unknown trait (known: experts, {', '.join(SIM_TRAITS)})"
               for trait in block if trait not in ("experts", *SIM_TRAITS)]
    return errors


def _design_errors(mmb: Mapping[str, Any]) -> list[str]:
    design, report, ks = mmb["design"], mmb["report"], mmb["clustering"]["ks"]
    errors = []
    if "k" in report and report["k"] not in ks:
        errors.append(f"mmb.report.k: {report['k']} is not one of mmb.clustering.ks {ks}")
    for name in ("n_prompts", "n_val"):
        if report[name] not in design[name]:
            errors.append(f"mmb.report.{name}: {report[name]} is not one of "
                          f"mmb.design.{name} {design[name]}")
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
        for field, directory in (("test", False), ("train", False), ("image_root", True)):
            errors += path_errors(f"mmb.dataset.hpdv2.{field}", hpd[field], directory=directory,
                                  what=DOWNLOADS[f"hpdv2.{field}"])
    if dataset.get("mjbench"):
        for field, directory in (("path", False), ("image_root", True)):
            errors += path_errors(f"mmb.dataset.mjbench.{field}", dataset["mjbench"][field],
                                  directory=directory, what=DOWNLOADS[f"mjbench.{field}"])
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
