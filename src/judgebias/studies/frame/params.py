"""Checks of the `frame:` params block that its schema cannot express."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgebias.config import path_errors
from judgebias.prompts import available_prompts, fields
from judgebias.studies.frame.recipes import DOMAINS, MANIPULATIONS, OVERLAYS, POSITIONS, TONES

PROMPT_FIELDS = {"standard": {"Instruction"}, "bias_aware": {"Instruction"},
                 "bias_definition": {"Instruction", "Perturbation", "Definition"},
                 "cot": {"Instruction"}}
SIM_NUMBERS = ("leniency", "slope", "opinion", "noise", "saturation", "off_target")
SIM_BLOCKS = ("susceptibility", "prompts", "cot", "pairwise")


def validate(params: Mapping[str, Any]) -> list[str]:
    """Judges and writer in the panel, simulated judges with their planted traits, the
    prompts' placeholders, the pairwise manipulation in the grid, and every file named."""
    frame, panel = params["frame"], params["panel"]
    errors = [f"frame.models[{i}]: model {key!r} is not defined under panel"
              for i, key in enumerate(frame["models"]) if key not in panel]
    if frame["analysis_judge"] not in frame["models"]:
        errors.append(f"frame.analysis_judge: {frame['analysis_judge']!r} is not one of "
                      "frame.models")
    for key in frame["models"]:
        if key in panel and panel[key]["backend"] == "sim":
            errors += sim_trait_errors(f"panel.{key}.sim.frame", panel[key]["sim"].get("frame"))
    for kind, prompt in frame["prompts"].items():
        if prompt not in available_prompts():
            errors.append(f"frame.prompts.{kind}: unknown prompt id {prompt!r}")
        elif fields(prompt) != PROMPT_FIELDS[kind]:
            errors.append(f"frame.prompts.{kind}: {prompt!r} must have the placeholders "
                          f"{', '.join(sorted(PROMPT_FIELDS[kind]))}")
    pairwise = frame["pairwise"]
    if pairwise["prompt"] not in available_prompts():
        errors.append(f"frame.pairwise.prompt: unknown prompt id {pairwise['prompt']!r}")
    if pairwise["manipulation"] not in frame["manipulations"]:
        errors.append(f"frame.pairwise.manipulation: {pairwise['manipulation']!r} is not "
                      "in frame.manipulations")
    errors += _dataset_errors(frame["dataset"], panel)
    errors += path_errors("frame.beauty.weights", frame["beauty"]["weights"])
    errors += path_errors("frame.beauty.face_models", frame["beauty"]["face_models"],
                          directory=True)
    return errors


def _dataset_errors(dataset: Mapping[str, Any], panel: Mapping[str, Any]) -> list[str]:
    name = dataset["name"]
    if name not in dataset:
        return [f"frame.dataset.{name}: frame.dataset.name is {name!r} but that block is "
                "missing"]
    if name == "table":
        return (path_errors("frame.dataset.table.path", dataset["table"]["path"])
                + path_errors("frame.dataset.table.image_root", dataset["table"]["image_root"],
                              directory=True))
    writer = dataset["synthetic"]["writer"]
    errors = path_errors("frame.dataset.synthetic.annotators.scores",
                         dataset["synthetic"]["annotators"]["scores"])
    if writer is not None and writer not in panel:
        errors.append(f"frame.dataset.synthetic.writer: model {writer!r} is not defined "
                      "under panel")
    return errors


def sim_trait_errors(where: str, block: Any) -> list[str]:
    """The planted traits of a simulated FRAME judge (judgebias.studies.frame.sim)."""
    if not isinstance(block, Mapping):
        return [f"{where}: a simulated judge needs its planted FRAME traits (leniency, "
                "slope, susceptibility, ...; see judgebias.studies.frame.sim)"]
    errors = [f"{where}.{key}: unknown trait (known: {', '.join(SIM_NUMBERS + SIM_BLOCKS)})"
              for key in block if key not in SIM_NUMBERS + SIM_BLOCKS]
    errors += [f"{where}.{key}: must be a number" for key in SIM_NUMBERS
               if key in block and not isinstance(block[key], int | float)]
    for name, planted in (block.get("susceptibility") or {}).items():
        errors += _susceptibility_errors(f"{where}.susceptibility.{name}", name, planted)
    return errors


def _susceptibility_errors(where: str, name: str, planted: Any) -> list[str]:
    if name not in MANIPULATIONS:
        return [f"{where}: unknown manipulation (known: {', '.join(MANIPULATIONS)})"]
    if not isinstance(planted, Mapping):
        return [f"{where}: must be {{strength, best, domains}}"]
    errors = [f"{where}.{key}: unknown key (known: strength, best, domains)"
              for key in planted if key not in ("strength", "best", "domains")]
    best = planted.get("best")
    if name in (*TONES, "padding") and not isinstance(best, int | float):
        errors.append(f"{where}.best: the planted best {name} setting must be a number")
    if name in OVERLAYS and best not in POSITIONS:
        errors.append(f"{where}.best: must be one of {', '.join(POSITIONS)}")
    errors += [f"{where}.domains.{domain}: unknown domain (known: {', '.join(DOMAINS)})"
               for domain in planted.get("domains") or {} if domain not in DOMAINS]
    return errors
