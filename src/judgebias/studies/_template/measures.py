"""The template study's statistic: a judge's preference for length at equal quality.

For each judge, the ordinary least squares fit (statsmodels) of its score on the answer's
facts and its length in tens of words,

    score_k = a + b * facts_k + c * words_k / 10 + e_k,

and ``c``, the points the judge adds per ten words an answer is longer while stating the
same facts. The interval and test use heteroskedasticity-robust HC3 standard errors with
t quantiles (MacKinnon and White 1985), because scores are bounded, rounded integers whose
spread changes with their level; benchmarks/template_slope.py measures the test's
rejection rate under no bias (skewed and discrete noise included) and the interval's
coverage of a planted slope (2,000 data sets of 60 answers per world, Monte-Carlo error
+-0.010; the pseudo-true slope is the best linear fit to the rounded scores):

    noise      rejection rate at 0.05, no bias   pseudo-true slope   coverage of it
    normal     0.041                             0.484               0.948
    skewed     0.042                             0.487               0.952
    discrete   0.044                             0.557               0.942

Only answers with status "ok" are scores: a failed or
unparseable answer is counted, never imputed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import statsmodels.api as sm


def length_slope(scores: np.ndarray, facts: np.ndarray, words: np.ndarray,
                 ci: float = 0.95) -> dict[str, float]:
    """The slope on length per ten words, its HC3 interval and two-sided p-value."""
    design = sm.add_constant(np.column_stack([facts, words / 10]), has_constant="add")
    fit = sm.OLS(scores.astype(float), design).fit(cov_type="HC3", use_t=True)
    low, high = fit.conf_int(alpha=1 - ci)[2]
    return {"slope": float(fit.params[2]), "ci_low": float(low), "ci_high": float(high),
            "p_value": float(fit.pvalues[2]), "n": len(scores)}


def slopes(scores: pd.DataFrame, items: pd.DataFrame, ci: float = 0.95) -> pd.DataFrame:
    """One row per judge: its length slope (`length_slope`) and how many answers failed."""
    rows = []
    for judge, group in scores.groupby("judge", sort=False):
        joined = group.merge(items, on="item_id", validate="one_to_one")
        ok = joined[joined["status"] == "ok"]
        rows.append({"judge": judge, **length_slope(ok["value"].to_numpy(),
                                                    ok["n_facts"].to_numpy(),
                                                    ok["n_words"].to_numpy(), ci),
                     "n_failed": int(len(joined) - len(ok))})
    return pd.DataFrame(rows)
