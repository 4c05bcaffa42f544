"""Checks of the `mmb:` params block that its schema cannot express."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from judgebias.config import load_yaml, path_errors
from judgebias.prompts import available_prompts, fields

SIM_TRAITS = ("gamma", "position_bias", "brightness_bias", "noise", "miscalibrated")
BUILTIN_POOL = Path(__file__).with_name("instructions.yaml")  # the built-in instructions


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
    errors += path_errors("mmb.instructions.extra", mmb["instructions"]["extra"])
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
        errors += path_errors("mmb.dataset.hpdv2.test", hpd["test"])
        errors += path_errors("mmb.dataset.hpdv2.train", hpd["train"])
        errors += path_errors("mmb.dataset.hpdv2.image_root", hpd["image_root"], directory=True)
    if dataset.get("mjbench"):
        errors += path_errors("mmb.dataset.mjbench.path", dataset["mjbench"]["path"])
        errors += path_errors("mmb.dataset.mjbench.image_root",
                              dataset["mjbench"]["image_root"], directory=True)
    return errors
