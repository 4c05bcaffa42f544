"""FRAME's human-side tables (judgebias.studies.frame.measures.humans) on hand-computed cases:
seed 004 Table 2 (score distribution), Table 7 (inter-annotator agreement) and, beyond
the paper, each judge's agreement with the human scores."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgebias.studies.frame.measures import humans


def test_score_distribution_bins_edges_upward():
    items = pd.DataFrame({"item_id": list("abcdefgh"),
                          "domain": ["people"] * 4 + ["animal"] * 4,
                          "human_score": [1.0, 2.0, 2.5, 5.0, 3.0, 3.999, 4.5, np.nan]})
    table = humans.score_distribution(items).set_index("domain")
    assert list(table.index) == ["people", "animal", "total"]  # Table 2's order
    # [1,2) [2,3) [3,4) [4,5]: 2.0 -> "2-3", 5.0 -> "4-5", 3.999 -> "3-4", NaN left out
    assert table.loc["people", list(humans.BINS)].tolist() == [1, 2, 0, 1]
    assert table.loc["animal", list(humans.BINS)].tolist() == [0, 0, 2, 1]
    assert table.loc["total", list(humans.BINS)].tolist() == [1, 2, 2, 2]
    assert table.loc["animal", "total"] == 3 and table.loc["total", "total"] == 7
    assert table.loc["people", "mean"] == pytest.approx(10.5 / 4)
    assert table.loc["total", "mean"] == pytest.approx((10.5 + 11.499) / 7)


def test_score_distribution_rejects_scores_outside_1_to_5():
    items = pd.DataFrame({"item_id": ["a"], "domain": ["people"], "human_score": [0.5]})
    with pytest.raises(ValueError):
        humans.score_distribution(items)


def test_inter_annotator_by_hand():
    items = pd.DataFrame({
        "item_id": list("abcdefghi"),
        "domain": ["people"] * 4 + ["animal"] * 4 + ["indoor"],
        "annotator_1": [1, 2, 2, 5, 3, 4, 4, 2, 3],
        "annotator_2": [1, 2, 3, 5, 3, 4, 5, np.nan, np.nan]})
    table = humans.inter_annotator(items).set_index("domain")
    assert list(table.index) == ["people", "animal"]  # indoor: no item with both
    # people: deviations (-1.5, -.5, -.5, 2.5), (-1.75, -.75, .25, 2.25): 8.5 / sqrt(9 * 8.75)
    assert table.loc["people", "pearson"] == pytest.approx(8.5 / np.sqrt(9 * 8.75))
    # ranks (1, 2.5, 2.5, 4) and (1, 2, 3, 4): 4.5 / sqrt(4.5 * 5)
    assert table.loc["people", "spearman"] == pytest.approx(4.5 / np.sqrt(4.5 * 5))
    assert table.loc["animal", "n"] == 3
    # (3, 4, 4) vs (3, 4, 5): deviations (-2/3, 1/3, 1/3), (-1, 0, 1): 1 / sqrt(2/3 * 2)
    assert table.loc["animal", "pearson"] == pytest.approx(1 / np.sqrt(4 / 3))
    single = items.assign(annotator_2=np.nan)
    assert humans.inter_annotator(single).empty


def _score(judge, item, value, recipe="original", prompt="standard", named=""):
    return {"judge": judge, "item_id": item, "domain": "people", "prompt": prompt,
            "recipe": recipe, "named": named, "score": value}


def test_human_correlation_by_hand():
    items = pd.DataFrame({"item_id": list("abcd"), "domain": "people",
                          "human_score": [1.0, 2.0, 3.0, 4.0],
                          "alignment": [0.0, 1.0, 2.0, np.nan]})
    scores = pd.DataFrame([
        _score("j", "a", 0.5), _score("j", "b", 1.5), _score("j", "c", 1.5),
        _score("j", "d", 3.5),
        _score("j", "a", 5.0, recipe="brightness=1.1"),  # manipulated: not used
        _score("j", "b", 0.0, prompt="cot"),  # another prompt: not used
        _score("k", "a", 1.0), _score("k", "b", np.nan), _score("k", "c", 3.0),
        _score("k", "d", 4.0)])
    table = humans.human_correlation(scores, items).set_index("judge")
    j = table.loc["j"]
    # x dev (-1.5, -.5, .5, 1.5), y dev (-1.25, -.25, -.25, 1.75): Sxy 4.5, Sxx 5, Syy 4.75
    assert j["n"] == 4
    assert j["slope_on_human"] == pytest.approx(0.9)
    assert j["pearson"] == pytest.approx(4.5 / np.sqrt(5 * 4.75))
    assert j["spearman"] == pytest.approx(4.5 / np.sqrt(4.5 * 5))
    # tau-b: 5 concordant pairs, 0 discordant, one tie in the judge's scores
    assert j["kendall"] == pytest.approx(5 / np.sqrt(6 * 5))
    # on the planted alignment (items a-c): y (0.5, 1.5, 1.5) on x (0, 1, 2): slope 0.5
    assert j["n_alignment"] == 3 and j["slope_on_alignment"] == pytest.approx(0.5)
    k = table.loc["k"]  # the unusable score is left out: 3 items on a line of slope 1
    assert k["n"] == 3 and k["slope_on_human"] == pytest.approx(1.0)
    assert k["pearson"] == pytest.approx(1.0)
    no_truth = humans.human_correlation(scores, items.drop(columns="alignment"))
    assert (no_truth["n_alignment"] == 0).all() and no_truth["slope_on_alignment"].isna().all()
    assert table["kendall_low"].isna().all()  # no resamples asked for


def test_human_correlation_interval_is_agreement_bootstrap_over_items():
    """The interval is judgebias.stats.agreement's percentile bootstrap with each item (one mean
    human score) its own unit, and it covers the estimate; an undefined tau has none."""
    from judgebias.stats.agreement import agreement

    rng = np.random.default_rng(3)
    human = rng.integers(2, 11, 60) / 2  # half points, as means of two annotators
    items = pd.DataFrame({"item_id": [f"i{n}" for n in range(60)], "domain": "people",
                          "human_score": human})
    scores = pd.DataFrame([_score("j", f"i{n}", float(np.round(h + rng.normal(), 0)))
                           for n, h in enumerate(human)]
                          + [_score("flat", f"i{n}", 3.0) for n in range(60)])
    table = humans.human_correlation(scores, items, n_resamples=500, seed=4).set_index("judge")
    j = table.loc["j"]
    assert j["kendall_low"] < j["kendall"] < j["kendall_high"] and j["kendall_low"] > 0
    merged = pd.DataFrame({"judge": np.repeat(["j", "flat"], 60),
                           "score": scores["score"].to_numpy(),
                           "human_score": np.tile(human, 2)})
    direct = agreement(merged, "score", by="judge", n_resamples=500, seed=4).set_index(
        "judge").loc["j"]
    assert (j["kendall_low"], j["kendall_high"]) == (direct["tau_b_low"],
                                                      direct["tau_b_high"])
    assert np.isnan(table.loc["flat", "kendall"]) and np.isnan(table.loc["flat", "kendall_low"])


def test_human_correlation_averages_the_bias_definition_originals():
    items = pd.DataFrame({"item_id": list("abc"), "domain": "people",
                          "human_score": [1.0, 2.0, 3.0]})
    scores = pd.DataFrame([
        _score("j", "a", 1.0, prompt="bias_definition", named="gamma"),
        _score("j", "a", 3.0, prompt="bias_definition", named="padding"),  # a: mean 2
        _score("j", "b", 3.0, prompt="bias_definition", named="gamma"),
        _score("j", "c", 4.0, prompt="bias_definition", named="gamma")])
    row = humans.human_correlation(scores, items, prompt="bias_definition").iloc[0]
    assert row["n"] == 3 and row["slope_on_human"] == pytest.approx(1.0)
