"""`judgebias plumbing card-build`: gather every study's card rows, adjust, write the card.

The card is pure computation over the studies' own outputs (the files each study's
``card.inputs`` names and the card rule declares), so a new study result reruns only the
card and the report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.card.schema import ALPHA, CARD, KEY, ROW_FIELDS
from judgebias.io.artifacts import ArtifactError, write_json, write_table


def study_rows(params: Mapping[str, Any], files: Mapping[str, Mapping[str, str]]
               ) -> pd.DataFrame:
    """Every active study's card rows, checked: the columns of `CARD_ROWS`, only models
    the study judged (judgebias.study.study_models), one row per key, and a reason in
    `note` wherever the estimate is missing."""
    from judgebias.study import active, study_models

    frames = []
    for study in active(params):
        if study.card is None:
            continue
        named = {name: Path(path) for name, path in files.get(study.name, {}).items()}
        declared = study.load("card_inputs")(params)
        if set(named) != set(declared):
            raise ValueError(f"card: study {study.name!r} needs files {sorted(declared)}, "
                             f"was given {sorted(named)}")
        rows = study.load("card")(params, named)
        judged = None if study.judges_in_data else set(study_models(params, study.name))
        frames.append(_checked(rows, study.name, judged))
    if not frames:
        return pd.DataFrame({f.name: pd.Series(dtype=object) for f in ROW_FIELDS})
    return pd.concat(frames, ignore_index=True)


def _checked(rows: pd.DataFrame, study: str, judged: set[str] | None) -> pd.DataFrame:
    """The rows in the card's columns, checked: their study, and each model one the study
    judged (`judged`; None for a study whose judges its tables name)."""
    source = f"card rows of study {study!r}"
    names = [f.name for f in ROW_FIELDS]
    missing, extra = sorted(set(names) - set(rows)), sorted(set(rows) - set(names))
    if missing or extra:
        raise ArtifactError(f"{source}: columns differ from card_rows: missing {missing}, "
                            f"unexpected {extra}")
    rows = rows[names].reset_index(drop=True)
    if (rows["study"] != study).any():
        raise ArtifactError(f"{source}: rows name another study")
    stray = sorted(set(rows["model"]) - judged) if judged is not None else []
    if stray:
        raise ArtifactError(f"{source}: rows for models the study did not judge: {stray}")
    duplicated = rows[rows.duplicated(KEY, keep=False)]
    if len(duplicated):
        raise ArtifactError(f"{source}: duplicate rows for "
                            f"{duplicated[KEY].iloc[0].to_dict()}")
    unexplained = rows[rows["estimate"].isna() & (rows["note"] == "")]
    if len(unexplained):
        raise ArtifactError(f"{source}: a missing estimate without a note: "
                            f"{unexplained[KEY].iloc[0].to_dict()}")
    return rows


def adjust(rows: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Add `p_adjusted` and `significant`: Benjamini-Yekutieli over every test on the card.

    One family for the whole card, because a reader scans the whole card for red cells;
    BY rather than Benjamini-Hochberg because the card's tests share data (one judge's
    answers feed several measures; several judges answer the same items) and BY controls
    the FDR under any dependence (specs/judge-card.md §3: "BY FDR across tests", seed
    002 §6; statsmodels ``multipletests(method="fdr_by")``). A row without a test is
    never significant.
    """
    # here, not at the top: the rules import this module (through each study's card
    # inputs) whenever Snakemake reads the workflow, and statsmodels takes ~1 s to import
    from statsmodels.stats.multitest import multipletests

    out = rows.copy()
    p = out["p_value"].to_numpy(dtype=float)
    tested = np.isfinite(p)
    adjusted = np.full(len(out), np.nan)
    if tested.any():
        adjusted[tested] = multipletests(p[tested], alpha=alpha, method="fdr_by")[1]
    out["p_adjusted"] = adjusted
    out["significant"] = np.isfinite(adjusted) & (adjusted < alpha)
    return out


def in_panel_order(params: Mapping[str, Any], card: pd.DataFrame) -> pd.DataFrame:
    """Models in panel order, each model's studies in registry order, and each study's
    rows in the order the study gave them (its most important first)."""
    from judgebias.study import registered

    panel = {model: k for k, model in enumerate(params["panel"])}
    studies = {name: k for k, name in enumerate(registered())}
    order = np.lexsort((np.arange(len(card)), card["study"].map(studies).to_numpy(),
                        card["model"].map(panel).to_numpy()))
    return card.iloc[order].reset_index(drop=True)


def metric_key(row: Mapping[str, Any]) -> str:
    """A row's key under model / study in `card_metrics`: the measure, and its setting."""
    return f"{row['measure']}[{row['setting']}]" if row["setting"] else str(row["measure"])


def card_metrics(card: pd.DataFrame) -> dict[str, Any]:
    """Every row as nested JSON, model -> study -> measure[setting] -> estimate, interval,
    adjusted p, missing numbers null (`judgebias card --json`)."""
    out: dict[str, Any] = {}
    for row in card.to_dict("records"):
        entry = {name: _number(row[name]) for name in
                 ("estimate", "ci_low", "ci_high", "p_adjusted")}
        out.setdefault(row["model"], {}).setdefault(row["study"], {})[metric_key(row)] = entry
    return out


def headline_cells(card: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """The card's headline cells as DVC metrics (issue 42 item 7): per headline measure
    (the compact card's columns, ``headline`` rows), each judge's estimate (null where
    the study gives none), named ``<study>.<measure>``, and ``.<setting>`` after it where
    the study headlines the measure in more than one setting.

    One file per measure and one number per judge, so `dvc metrics show` reads as the
    card turned on its side: a row per measure, a column per judge (6 at the default,
    against the 832 values of every row, interval and p-value, and each study's whole
    metrics.json, before). The interval, test and adjusted p stay in judges.parquet
    (`judgebias card --compare` reads them)."""
    heads = card[card["headline"].astype(bool)]  # an empty card's column is object
    settings = heads.groupby(["study", "measure"])["setting"].nunique()
    cells: dict[str, dict[str, float | None]] = {}
    for row in heads.to_dict("records"):
        name = f"{row['study']}.{row['measure']}"
        if settings[row["study"], row["measure"]] > 1:
            name += f".{row['setting']}"
        cells.setdefault(name, {})[row["model"]] = _number(row["estimate"])
    return cells


def write_headline(card: pd.DataFrame, folder: Path) -> None:
    """`headline_cells` as `folder`/NAME.json, one file per measure; a JSON file already
    there for no measure of this card is removed (the folder is the card's alone)."""
    cells = headline_cells(card)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.json"):
        if stale.stem not in cells:
            stale.unlink()
    for name, values in cells.items():
        write_json(values, folder / f"{name}.json")


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) or math.isinf(value) else float(value)


def write_card(params: Mapping[str, Any], files: Mapping[str, Mapping[str, str]],
               table: Path, metrics: Path) -> pd.DataFrame:
    """Build the card from the studies' named files and write it: every row to `table`,
    the headline cells to the folder `metrics` (DVC's metrics: `write_headline`)."""
    card = in_panel_order(params, adjust(study_rows(params, files)))
    write_table(card, table, CARD)
    write_headline(card, metrics)
    return card
