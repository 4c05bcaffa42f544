"""`judgebias card --compare RUN_A RUN_B`: did a bias move between two runs?

A run is a results folder (holding judges.parquet) or a git revision, whose card DVC
reads from its cache or remote (``dvc.api.open``), so a researcher can compare a new
prompt or model version with the one before without re-running either.

The change of a measure is B - A with an interval from the two runs' own 95% intervals:
each is read as estimate +- 1.96 se, and the difference's interval is
(B - A) +- 1.96 sqrt(se_A^2 + se_B^2). That is exact for independent normal estimates, and
conservative when the two runs judged the same items (their errors are then positively
correlated, and the variance of the difference is smaller); an asymmetric interval
(bootstrap percentile) contributes the mean of its two half-widths. A measure on only one
of the two cards is listed as added or removed, never compared with zero.

benchmarks/card_compare.py (2,000 data sets per row, each run's row a mean with a
percentile bootstrap interval of 999 resamples, as the studies compute them; Monte-Carlo
error of a 0.05 rate +-0.010) measures it through this function:

    noise     design       n    coverage (delta 0.1 sd)   "moved" at delta 0
    normal    independent  30   0.932                     0.064
    normal    independent  100  0.951                     0.056
    normal    independent  400  0.945                     0.046
    skewed    independent  30   0.948                     0.068
    skewed    independent  400  0.949                     0.056
    discrete  independent  30   0.932                     0.069
    discrete  independent  400  0.945                     0.059
    any       paired       any  0.998-1.000               0.000-0.001

With independent runs it inherits the runs' own intervals: a percentile bootstrap of a
mean of 30 items covers about 0.93, so the change's interval does too and "moved" is
called at 0.06-0.07 instead of 0.05; from 100 items on it is within a point of nominal.
When the runs judged the same items it is very conservative (it ignores the positive
correlation), so a small real change on the same items may read "not moved": the card
holds no per-item data to pair them; a paired comparison needs the studies' item-level
tables (a paired bootstrap over items) and is the honest next step.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from judgebias.card.schema import CARD, KEY
from judgebias.io.artifacts import read_table

Z = float(stats.norm.ppf(0.975))


def load_card(run: str, path: str = "results/judges.parquet") -> pd.DataFrame:
    """The card of a run: `run`/judges.parquet if `run` is a folder, else the card at git
    revision `run`, read through DVC (``dvc.api.open``, from the cache or a remote)."""
    folder = Path(run)
    if folder.is_dir():
        return read_table(folder / "judges.parquet", CARD)
    if folder.suffix == ".parquet" and folder.is_file():
        return read_table(folder, CARD)
    import dvc.api

    with dvc.api.open(path, rev=run, mode="rb") as handle, \
            tempfile.TemporaryDirectory() as temporary:
        copy = Path(temporary) / "judges.parquet"
        copy.write_bytes(handle.read())
        return read_table(copy, CARD)


def half_width(card: pd.DataFrame) -> np.ndarray:
    return (card["ci_high"].to_numpy(dtype=float) - card["ci_low"].to_numpy(dtype=float)) / 2


def compare(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Per (model, study, measure, setting): both estimates, the change B - A and its
    interval (module docstring), and `status` "both", "only A" or "only B"."""
    columns = [*KEY, "label", "unit", "estimate", "ci_low", "ci_high"]
    merged = a[columns].merge(b[columns], on=KEY, how="outer", suffixes=("_a", "_b"),
                              indicator=True)
    se = np.sqrt((half_width(merged.rename(columns=lambda c: c.removesuffix("_a")))
                  / Z) ** 2
                 + (half_width(merged.rename(columns=lambda c: c.removesuffix("_b")))
                    / Z) ** 2)
    change = merged["estimate_b"].to_numpy(dtype=float) - merged["estimate_a"].to_numpy(
        dtype=float)
    out = merged[KEY].copy()
    out["label"] = merged["label_a"].fillna(merged["label_b"])
    out["unit"] = merged["unit_a"].fillna(merged["unit_b"])
    out["estimate_a"], out["estimate_b"] = merged["estimate_a"], merged["estimate_b"]
    out["change"] = change
    out["ci_low"], out["ci_high"] = change - Z * se, change + Z * se
    out["moved"] = (out["ci_low"] > 0) | (out["ci_high"] < 0)
    out["status"] = merged["_merge"].map({"both": "both", "left_only": "only A",
                                          "right_only": "only B"}).astype(str)
    return out.reset_index(drop=True)
