"""Philautia's rows of the judge card (judgebias.card): self-preference in score points.

Per evaluator and setting, from the `selfpref` rule's table (judgebias.studies.philautia
.selfpref: OLS with caption effects absorbed, standard errors clustered by image, t
intervals): the points it adds to its own captions (own), to its siblings' (family), own
minus family, and seed 000's philautia score Phi~_i(i) (§4.1) with its bootstrap interval
over images (no test: it is a relative, standardised score, see selfpref's docstring).

With two families (the default panel) own and family are not identified separately,
only own - family (selfpref's "Identification"); the card then gives own and family no
number, says why, and headlines own - family instead. The first configured setting is the
headline one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.card.schema import card_row
from judgebias.card.text import signed_phrase
from judgebias.io.artifacts import read_table
from judgebias.studies.philautia.tables import SELFPREF, SELFPREF_TABLE, setting_file

WALD = "Wald t, image-clustered SE"
# The interval carries the spread of the judges' preferences for other models (the
# judge x generator interaction variance, selfpref.py) beside the image clusters.
INTERVAL = "t 95%, image-clustered SE + judge x generator variance"
EFFECTS = {  # measure -> (column prefix, label, phrases for the judge's reading: +, -)
    "self_preference": ("own", "Self-preference", "adds {} points to its own captions",
                        "takes {} points off its own captions"),
    "family_preference": ("family", "Family preference",
                          "adds {} points to its siblings' captions",
                          "takes {} points off its siblings' captions"),
    "own_minus_family": ("own_vs_family", "Self- minus family preference",
                         "gives its own captions {} points more than its siblings'",
                         "gives its own captions {} points less than its siblings'"),
}


def inputs(params: Mapping[str, Any]) -> dict[str, str]:
    return {f"selfpref.{setting}": setting_file(setting, SELFPREF_TABLE)
            for setting in params["philautia"]["settings"]}


def rows(params: Mapping[str, Any], files: Mapping[str, Path]) -> pd.DataFrame:
    settings = list(params["philautia"]["settings"])
    out = []
    for setting in settings:
        path = files[f"selfpref.{setting}"]
        table = read_table(path, SELFPREF)
        headline = setting == settings[0]
        own_identified = bool(table["own_identified"].any())
        for record in table.to_dict("records"):
            out += _effect_rows(record, setting, str(path), headline, own_identified)
            out.append(_score_row(record, setting, str(path), headline))
    return pd.DataFrame(out)


def _identified(record: Mapping[str, Any], measure: str) -> str:
    """Why an effect has no number on the card ("" if it has one)."""
    prefix = EFFECTS[measure][0]
    if measure != "self_preference" and not record["family_estimable"]:
        return "no sibling in the panel"
    if measure != "own_minus_family" and not record[f"{prefix}_identified"]:
        return ("own and family preference are not identified apart: the panel is two "
                "families (only own minus family is; judgebias.studies.philautia.selfpref)")
    if not np.isfinite(record[f"{prefix}_effect"]):
        return "not identified on this panel (judgebias.studies.philautia.selfpref)"
    return ""


def _effect_rows(record: Mapping[str, Any], setting: str, source: str, headline: bool,
                 own_identified: bool) -> list[dict[str, Any]]:
    out = []
    for measure, (prefix, label, up, down) in EFFECTS.items():
        why = _identified(record, measure)
        number = {k: (float("nan") if why else record[f"{prefix}_{k}"])
                  for k in ("effect", "ci_low", "ci_high", "p_value")}
        reading = "" if why else signed_phrase(
            number["effect"], number["ci_low"], number["ci_high"], up, down) + f" ({setting})"
        out.append(card_row(
            record["model"], "philautia", measure, setting=setting, label=label,
            unit="score points (0-100)", estimate=number["effect"],
            ci_low=number["ci_low"], ci_high=number["ci_high"],
            interval="" if why else INTERVAL, p_value=number["p_value"],
            test="" if why else WALD,
            n=int(record["own_n"] if prefix != "family" else record["family_n"]),
            null_value=0.0,
            headline=headline and measure == ("self_preference" if own_identified
                                              else "own_minus_family"),
            reading=reading, source=source, note=why))
    return out


def _score_row(record: Mapping[str, Any], setting: str, source: str,
               headline: bool) -> dict[str, Any]:
    return card_row(
        record["model"], "philautia", "philautia_score", setting=setting,
        label="Philautia score (seed 000 §4.1)", unit="SD units",
        estimate=record["philautia_score"], ci_low=record["philautia_ci_low"],
        ci_high=record["philautia_ci_high"],
        interval="percentile bootstrap 95% over images", n=int(record["own_n"]),
        null_value=0.0, source=source,
        note="relative to the panel (standardised per evaluator, then generator): "
             "no test")
