"""`judgebias report`: one self-contained HTML report; each study contributes a section."""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

from judgebias.config import fingerprint, get_key, result_keys
from judgebias.io.artifacts import read_table
from judgebias.report.html import Report, write_report


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True, timeout=10)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"


def provenance(params: Mapping[str, Any], params_path: str) -> dict[str, str]:
    return {
        "params file": params_path,
        "params fingerprint": fingerprint({k: get_key(params, k) for k in result_keys(params)}),
        "git commit": _git_commit(),
        "judgebias": version("judgebias"),
        "python": platform.python_version(),
        **{pkg: version(pkg) for pkg in ("numpy", "scipy", "pandas", "snakemake", "dvc")},
    }


def write_full_report(params: Mapping[str, Any], params_path: str,
                      results: Mapping[str, str], data: Mapping[str, Mapping[str, str]],
                      out: Path, card: Path | None = None) -> None:
    """Assemble the judge card (`card`: results/judges.parquet, if given) and then each
    active study's section, in registry order, from the results folder and the named data
    files the report rule gives it (`results`: study name -> folder; `data`: study name
    -> file name -> path, judgebias.study.ReportInputs)."""
    from judgebias.card.schema import CARD
    from judgebias.report.card import card_section, study_anchor
    from judgebias.study import active, answer_sources, simulated_models, study_models

    sections, simulated, models = [], set(), {}
    for study in active(params):
        if study.report is None:
            continue
        if study.name not in results:
            raise ValueError(f"report: no results folder given for study {study.name!r}")
        files = {name: Path(path) for name, path in data.get(study.name, {}).items()}
        section = study.load("report")(params, Path(results[study.name]), files)
        section.anchor = study_anchor(study.name)
        sections.append(section)
        simulated |= simulated_models(params, study_models(params, study.name))
        models.update(dict.fromkeys(study_models(params, study.name)))
    card_rows = read_table(card, CARD) if card is not None else None
    if card_rows is not None and len(card_rows):  # no study judging the judges: no card
        # the panel's judges first, then any the card names from recorded judgements
        judges = list(dict.fromkeys([*params["panel"], *card_rows["model"]]))
        sections.insert(0, card_section(card_rows, judges))
    report = Report(
        title="judgebias report",
        sections=sections,
        provenance={**provenance(params, params_path),
                    "answers": "; ".join(f"{m}: {source}" for m, source in
                                         answer_sources(params, list(models)).items())},
        simulated_models=sorted(simulated),
    )
    write_report(report, out)
