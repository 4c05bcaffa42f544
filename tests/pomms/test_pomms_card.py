"""Pomms' rows of the judge card (studies/pomms/card.py) on an agreement table written by
judgebias.stats.agreement itself: each judge's tau with humans keeps the table's interval and no
test, and `pomms_gain` is the paired difference with its test, recommending the ensemble
only to a judge it beats (a judge as good as the ensemble gets nothing)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from judgebias.card.build import _checked, adjust
from judgebias.card.schema import card_row
from judgebias.stats.agreement import agreement
from judgebias.studies.pomms import card
from judgebias.studies.pomms.measures import POMMS

NOISY, GOOD = "corvid-pro", "lumen-mini"


def _files(tmp_path, n_bootstrap: int = 999):
    """A test split of 80 images x 4 captions x 3 ratings: NOISY scores quality with sd 2
    noise, GOOD and the ensemble with sd 0.3 (GOOD is as good as the ensemble)."""
    rng = np.random.default_rng(0)
    n = 320
    image = np.arange(n) // 4
    q = rng.normal(size=n) + rng.normal(0, 0.7, 80)[image]
    scores = {NOISY: q + rng.normal(0, 2.0, n), GOOD: q + rng.normal(0, 0.3, n),
              POMMS: q + rng.normal(0, 0.3, n)}
    row = np.repeat(np.arange(n), 3)
    ratings = pd.DataFrame({"dataset": "flickr8k_expert", "split": "test",
                            "image_id": image[row],
                            "human_score": np.clip(np.round(2.5 + q[row]
                                                            + rng.normal(0, 0.5, row.size)),
                                                   1, 4),
                            **{k: v[row] for k, v in scores.items()}})
    table = agreement(ratings, [NOISY, GOOD, POMMS], cluster="image_id",
                      n_resamples=n_bootstrap, seed=1,
                      versus=POMMS if n_bootstrap else None)
    table.to_parquet(tmp_path / "agreement.parquet")
    (tmp_path / "metrics.json").write_text(json.dumps({"coef": {GOOD: 0.8}}))
    return {"agreement": tmp_path / "agreement.parquet", "metrics": tmp_path / "metrics.json"}


def test_gain_is_the_paired_difference_and_recommends_only_where_it_helps(
        tmp_path, default_params):
    files = _files(tmp_path)
    rows = _checked(card.rows(default_params, files), "pomms", {NOISY, GOOD})
    table = pd.read_parquet(files["agreement"]).set_index("metric")
    mine = rows.set_index(["model", "measure"])
    for judge in (NOISY, GOOD):
        tau = mine.loc[(judge, "human_tau_b")]
        assert (tau["estimate"], tau["ci_low"], tau["ci_high"]) == tuple(
            table.loc[judge, ["tau_b", "tau_b_low", "tau_b_high"]])
        assert np.isnan(tau["p_value"])  # agreement is not a bias test
        gain = mine.loc[(judge, "pomms_gain")]
        assert (gain["estimate"], gain["ci_low"], gain["ci_high"], gain["p_value"]) == \
            tuple(table.loc[judge, ["tau_b_diff", "tau_b_diff_low", "tau_b_diff_high",
                                    "tau_b_diff_p"]])
        assert gain["n"] == 80 and gain["setting"] == "flickr8k_expert"
    assert POMMS not in set(rows["model"])
    adjusted = adjust(rows).set_index(["model", "measure"])
    noisy = adjusted.loc[(NOISY, "pomms_gain")]
    assert noisy["ci_low"] > 0 and noisy["significant"]
    assert card.FEW_IMAGES not in noisy["note"]  # 80 images: no warning
    assert noisy["recommendation"].startswith(
        "scoring with the Pomms ensemble (it is not one of its members) agrees better")
    good = adjusted.loc[(GOOD, "pomms_gain")]
    assert not good["significant"] and "a member, weight 0.8" in good["note"]


def test_without_resamples_the_rows_say_so(tmp_path, default_params):
    rows = card.rows(default_params, _files(tmp_path, n_bootstrap=0))
    gain = rows[rows["measure"] == "pomms_gain"]
    assert gain["estimate"].isna().all() and gain["p_value"].isna().all()
    assert (gain["note"] == card.NO_RESAMPLES).all()


def test_card_row_fills_defaults_and_refuses_unknown_fields():
    row = card_row("m", "s", "x", estimate=1.0)
    assert row["estimate"] == 1.0 and np.isnan(row["p_value"]) and row["interval"] == ""
    with pytest.raises(KeyError, match="s/x: unknown fields \\['p'\\]"):
        card_row("m", "s", "x", p=0.1)
