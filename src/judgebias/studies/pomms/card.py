"""Pomms' rows of the judge card (judgebias.card): each judge's agreement with humans.

Per judge and judgement dataset, Kendall tau-b and tau-c of its scores against the human
ratings on the held-out test split (seed 000 §6.3; judgebias.agreement), with the
95% interval the agreement table carries (``tau_b_low``/``tau_b_high``: a percentile
bootstrap over images, ``pomms.n_bootstrap``; benchmarks/kendall_interval.py measures its
coverage). The table's test of tau = 0 is not a test of a bias (every useful judge agrees
with people), so it stays out of the card's FDR family: these rows carry no p-value. The
ensemble's own row is not a panel judge and is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.studies.pomms.tables import table_path

SPLIT = "test"
VARIANTS = {"tau_b": "Kendall tau-b with humans", "tau_c": "Kendall tau-c with humans"}


def inputs(params: Mapping[str, Any]) -> dict[str, str]:
    return {"agreement": table_path("agreement")}


def rows(params: Mapping[str, Any], files: Mapping[str, Path]) -> pd.DataFrame:
    from judgebias.study import study_models

    judged = set(study_models(params, "pomms"))
    table = pd.read_parquet(files["agreement"])
    if "split" in table:
        table = table[table["split"] == SPLIT]
    out = []
    for record in table[table["metric"].isin(judged)].to_dict("records"):
        for variant, label in VARIANTS.items():
            low, high = (record.get(f"{variant}_{k}", np.nan) for k in ("low", "high"))
            has_interval = bool(np.isfinite(low) and np.isfinite(high))
            out.append({
                "model": record["metric"], "study": "pomms", "measure": f"human_{variant}",
                "setting": str(record["dataset"]), "label": label, "unit": "tau",
                "estimate": record[variant], "ci_low": low, "ci_high": high,
                "interval": ("percentile bootstrap 95% over images" if has_interval
                             else ""),
                "p_value": np.nan, "test": "",
                "n": int(record["n"]), "null_value": 0.0, "chance": np.nan,
                "headline": False, "reading": "", "recommendation": "",
                "source": str(files["agreement"]),
                "note": "" if has_interval else "no interval (pomms.n_bootstrap: 0)",
            })
    return pd.DataFrame(out)
