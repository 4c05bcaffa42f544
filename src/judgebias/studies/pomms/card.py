"""Pomms' rows of the judge card (judgebias.card): each judge's agreement with humans,
and whether the Pomms ensemble agrees better than it does alone.

Per judge and judgement dataset, on the held-out test split (seed 000 §6.3;
judgebias.stats.agreement), from the agreement table:

* ``human_tau_b``, ``human_tau_c``: Kendall tau-b and tau-c of its scores against the
  human ratings, with the table's 95% interval (``tau_b_low``/``tau_b_high``: a
  percentile bootstrap over images, ``pomms.n_bootstrap``; benchmarks/kendall_interval.py
  measures its coverage). The table's test of tau = 0 is not a test of a bias (every
  useful judge agrees with people), so these rows carry no p-value and stay out of the
  card's FDR family.
* ``pomms_gain`` (the fix Pomms offers, issue 22 item 4): tau-b of the ensemble minus
  tau-b of the judge alone on the same ratings, with the paired interval and bootstrap
  test of no difference (``tau_b_diff*``: both taus on the same image resamples;
  benchmarks/kendall_difference.py measures size and coverage). It is tested (the
  question a user asks: should I score with the ensemble instead?), and where the
  ensemble is better the row recommends it, naming whether the judge is one of its
  members (metrics.json ``coef``). The ensemble was fitted on the train split, so the test
  split's difference is not flattered by its selection. tau-c's difference is in the
  note only: the two variants answer one question, and counting both would test it twice.

The ensemble's own row is not a panel judge and is left out. Without resamples
(``pomms.n_bootstrap: 0``) the rows say so and carry no interval or test.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.card.schema import card_row
from judgebias.card.text import number, signed_phrase
from judgebias.studies.pomms.tables import METRICS, table_path

STUDY = "pomms"
SPLIT = "test"
VARIANTS = {"tau_b": "Kendall tau-b with humans", "tau_c": "Kendall tau-c with humans"}
BOOTSTRAP = "percentile bootstrap 95% over images"
NO_RESAMPLES = "no interval (pomms.n_bootstrap: 0)"
MIN_IMAGES = 40
FEW_IMAGES = ("; fewer than 40 images: the paired test is liberal here (0.06-0.10 at 10 "
              "images, benchmarks/kendall_difference.py) and the interval optimistic")


def inputs(params: Mapping[str, Any]) -> dict[str, str]:
    return {"agreement": table_path("agreement"), "metrics": METRICS}


def rows(params: Mapping[str, Any], files: Mapping[str, Path]) -> pd.DataFrame:
    from judgebias.study import study_models

    judged = set(study_models(params, STUDY))
    table = pd.read_parquet(files["agreement"])
    if "split" in table:
        table = table[table["split"] == SPLIT]
    weights = json.loads(Path(files["metrics"]).read_text()).get("coef", {})
    source = str(files["agreement"])
    out = []
    for record in table[table["metric"].isin(judged)].to_dict("records"):
        out += [_agreement_row(record, variant, label, source)
                for variant, label in VARIANTS.items()]
        out.append(_gain_row(record, weights, source))
    return pd.DataFrame(out)


def _interval(record: Mapping[str, Any], prefix: str) -> tuple[float, float]:
    low, high = (float(record.get(f"{prefix}_{k}", np.nan)) for k in ("low", "high"))
    return low, high


def _agreement_row(record: Mapping[str, Any], variant: str, label: str, source: str
                   ) -> dict[str, Any]:
    low, high = _interval(record, variant)
    has_interval = bool(np.isfinite(low) and np.isfinite(high))
    return card_row(record["metric"], STUDY, f"human_{variant}",
                    setting=str(record["dataset"]), label=label, unit="tau",
                    estimate=float(record[variant]), ci_low=low, ci_high=high,
                    interval=BOOTSTRAP if has_interval else "", n=int(record["n"]),
                    null_value=0.0, source=source, note="" if has_interval else NO_RESAMPLES)


def _gain_row(record: Mapping[str, Any], weights: Mapping[str, float], source: str
              ) -> dict[str, Any]:
    judge = record["metric"]
    row = card_row(judge, STUDY, "pomms_gain", setting=str(record["dataset"]),
                   label="Kendall tau-b, Pomms ensemble - this judge alone", unit="tau",
                   n=int(record["n"]), null_value=0.0, source=source)
    if "tau_b_diff" not in record or not np.isfinite(record.get("tau_b_diff_p", np.nan)):
        return {**row, "note": NO_RESAMPLES}
    estimate = float(record["tau_b_diff"])
    low, high = _interval(record, "tau_b_diff")
    member = (f"a member, weight {number(weights[judge])}" if judge in weights
              else "not one of its members")
    recommendation = "" if not estimate > 0 else signed_phrase(
        estimate, low, high, f"scoring with the Pomms ensemble (it is {member}) agrees "
        "better with people by {} tau-b", "")
    return {**row, "estimate": estimate, "ci_low": low, "ci_high": high,
            "interval": f"paired {BOOTSTRAP}", "p_value": float(record["tau_b_diff_p"]),
            "test": "paired cluster-bootstrap test over images (no difference)",
            "n": int(record["n_clusters"]), "recommendation": recommendation,
            "note": (f"tau-b {number(record['tau_b'])} alone vs "
                     f"{number(record['tau_b'] + estimate)} for the ensemble, on the "
                     f"{SPLIT} split ({int(record['n'])} ratings, n = images); tau-c "
                     f"difference {number(record.get('tau_c_diff'))} "
                     f"[{number(record.get('tau_c_diff_low'))}, "
                     f"{number(record.get('tau_c_diff_high'))}]; the judge is {member}"
                     + (FEW_IMAGES if record["n_clusters"] < MIN_IMAGES else ""))}
