"""Agreement of caption judges with human judgements: Kendall's tau-b and tau-c.

Seed ``000_dd1ddac0ce03ecfb.txt`` §6.3 (Setup) validates judges and the Pomms ensemble on
Flickr8k-Expert and Nebula with "Kendall's tau_b and tau_c, as evaluation metrics",
following the caption-metric literature. This module computes both, per dataset (and
split), for one or more score columns of a *rating-level* judgement table.

Conventions (caption-metric literature; see ``shared/data/README.md``):

* **One row per human rating.** A candidate caption rated by several annotators appears
  once per rating, and a metric's (judge's) score for that item is repeated on each of
  its rows. Flickr8k-Expert thus has 16,992 rows (5,664 captions x 3 expert ratings),
  not 5,664; Nebula has one rating per row already. `join_scores` attaches an item-level
  score to such a table.
* **tau as is.** Values are Kendall's tau in [-1, 1]; the papers (seed 000 Table 1)
  print them x100 (56.4 means 0.564). Nothing here rescales.
* **Why both variants.** tau-b, ``(P - Q) / sqrt((n0 - n1)(n0 - n2))``, corrects for ties
  in *both* variables (n1, n2: pairs tied in x, in y; n0 = n(n-1)/2). tau-c (Stuart's),
  ``2 (P - Q) / (n^2 (m - 1) / m)`` with ``m = min(#distinct x, #distinct y)``, is meant
  for rectangular contingency tables: with a coarse human scale (Flickr8k-Expert's 1-4)
  against a near-continuous judge score the table is 4 x many and tau-b cannot reach
  +-1, tau-c can. That is why both are reported. Both come from
  `scipy.stats.kendalltau` (``variant="b"`` / ``"c"``).
* **Missing scores are dropped, never imputed.** A NaN score (failed or unparseable judge
  answer) or a NaN human score removes that row pairwise from the computation, and the
  number removed is reported as ``n_missing`` next to ``n`` (rows used). A made-up score
  would be an opinion the judge never gave.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

TAU_VARIANTS = ("tau_b", "tau_c")


def kendall(scores: Any, human: Any) -> dict[str, float | int]:
    """Kendall tau-b and tau-c of judge ``scores`` against ``human`` judgements.

    Seed 000 §6.3 (Setup). Rows where either value is NaN are dropped pairwise and
    counted in ``n_missing``; ``n`` is the number of rows used. With fewer than two rows,
    or a constant input (no ordering to agree with), tau is undefined and NaN is returned
    (without scipy's constant-input warning, which the ensemble's selection loop would
    otherwise print for every degenerate candidate).

    Returns ``{"tau_b", "tau_c", "n", "n_missing"}``.
    """
    x = np.asarray(scores, dtype=float).ravel()
    y = np.asarray(human, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"scores and human differ in length: {x.size} vs {y.size}")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(keep.sum())
    out: dict[str, float | int] = {
        "tau_b": float("nan"),
        "tau_c": float("nan"),
        "n": n,
        "n_missing": int(keep.size - n),
    }
    if n < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    out["tau_b"] = float(stats.kendalltau(x, y, variant="b").statistic)
    out["tau_c"] = float(stats.kendalltau(x, y, variant="c").statistic)
    return out


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def agreement(
    table: pd.DataFrame,
    score_column: str | Sequence[str],
    human_column: str = "human_score",
    by: str | Sequence[str] | None = "dataset",
) -> pd.DataFrame:
    """Kendall tau-b / tau-c of score column(s) against the human column, per group.

    ``table`` is rating-level (one row per human rating, see the module docstring).
    Groups are the ``by`` columns, plus ``split`` when the table has that column and
    ``by`` does not already name it (so train / validation / test are never pooled).
    ``score_column`` may name several columns (e.g. every evaluator and Pomms); each gets
    its own row per group.

    Returns one row per (group, metric) with columns ``*by, [split], metric, tau_b,
    tau_c, n, n_missing`` (``n`` rows used, ``n_missing`` rows dropped for a NaN score or
    NaN human rating). Rows whose group key is NaN form their own group instead of
    disappearing.
    """
    keys = _as_list(by)
    if "split" in table.columns and "split" not in keys:
        keys.append("split")
    metrics = _as_list(score_column)
    needed = [*keys, human_column, *metrics]
    missing = [c for c in needed if c not in table.columns]
    if missing:
        raise ValueError(f"table lacks columns {missing}")
    columns = [*keys, "metric", *TAU_VARIANTS, "n", "n_missing"]
    groups = table.groupby(keys, sort=True, dropna=False) if keys else [((), table)]
    rows: list[dict[str, Any]] = []
    for key, group in groups:
        key_values = key if isinstance(key, tuple) else (key,)
        for metric in metrics:
            rows.append(
                {
                    **dict(zip(keys, key_values, strict=True)),
                    "metric": metric,
                    **kendall(group[metric], group[human_column]),
                }
            )
    return pd.DataFrame(rows, columns=columns)


def read_scores(path: str | Path, on: str = "item_id") -> pd.DataFrame:
    """Read an external tool's score file (CSV or Parquet) for `join_scores`.

    The ``on`` column is read as text so that ids like ``007`` keep their leading zeros.
    """
    path = Path(path)
    if path.suffix.lower() in {".parquet", ".pq"}:
        return pd.read_parquet(path)
    if path.suffix.lower() in {".csv", ".tsv"}:
        sep = "\t" if path.suffix.lower() == ".tsv" else ","
        return pd.read_csv(path, sep=sep, dtype={on: str})
    raise ValueError(f"unsupported score file type: {path} (use .csv, .tsv or .parquet)")


def join_scores(
    judgements: pd.DataFrame,
    scores: pd.DataFrame | str | Path,
    on: str = "item_id",
    score_column: str = "score",
    name: str | None = None,
) -> pd.DataFrame:
    """Attach an item-level score column to the rating-level judgement table.

    ``scores`` has one row per item (``on`` + ``score_column``); it may be a DataFrame or
    the path of an external tool's CSV/TSV/Parquet file (read with `read_scores`). The
    score is repeated on every rating row of its item (the module's convention). Item ids
    are matched as text on both sides, so an integer id in a JSON table matches the same
    id read from a CSV.

    * Duplicate item ids in ``scores`` raise ValueError naming them (which score would
      count?).
    * Judgement rows whose item has no score get NaN (never imputed) and are counted;
      a NaN score in the file stays NaN too. Both are then dropped, and counted, by
      `kendall` / `agreement`.
    * The attached column is called ``name`` (default: ``score_column``); an existing
      column of that name in ``judgements`` raises ValueError instead of being suffixed.

    Returns a copy of ``judgements`` with the new column, in the original row order.
    Counts go to ``result.attrs["join_scores"][name]``: ``n_rows``, ``n_unmatched_rows``
    (rating rows without a score row), ``n_unmatched_items`` (distinct such items),
    ``unmatched_items`` (up to 20 of them), ``n_nan_scores`` (rows matched to a NaN
    score) and ``n_unused_items`` (score rows for items not in the judgement table).
    """
    if not isinstance(scores, pd.DataFrame):
        scores = read_scores(scores, on=on)
    name = score_column if name is None else name
    if on not in judgements.columns:
        raise ValueError(f"judgement table lacks the key column {on!r}")
    missing = [c for c in (on, score_column) if c not in scores.columns]
    if missing:
        raise ValueError(f"score table lacks columns {missing}")
    if name in judgements.columns:
        raise ValueError(f"judgement table already has a column {name!r}")
    keys = scores[on].astype(str)
    duplicated = keys[keys.duplicated(keep=False)]
    if len(duplicated):
        dups = sorted(set(duplicated))
        raise ValueError(f"duplicate {on} in score table: {dups[:20]} ({len(dups)} ids)")
    lookup = pd.Series(scores[score_column].to_numpy(dtype=float), index=keys.to_numpy())
    judge_keys = judgements[on].astype(str)
    matched = judge_keys.isin(lookup.index).to_numpy()
    values = judge_keys.map(lookup).to_numpy(dtype=float)
    out = judgements.copy()
    out[name] = values
    unmatched = sorted(set(judge_keys[~matched]))
    report = {
        "n_rows": len(out),
        "n_unmatched_rows": int((~matched).sum()),
        "n_unmatched_items": len(unmatched),
        "unmatched_items": unmatched[:20],
        "n_nan_scores": int((matched & np.isnan(values)).sum()),
        "n_unused_items": int((~lookup.index.isin(judge_keys)).sum()),
    }
    out.attrs = {**judgements.attrs}
    out.attrs["join_scores"] = {**judgements.attrs.get("join_scores", {}), name: report}
    return out
