"""FRAME's statistics on hand-computed cases (judgebias.studies.frame.effects, humans,
pairwise), and attack success on the paper's own numbers (seed 004 Tables 3, 4, 12)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgebias.studies.frame import effects, humans, pairwise
from judgebias.studies.frame.recipes import TABLE_ORDER


def _rows(judge, domain, recipe, manipulation, setting, values, prompt="standard", named=""):
    return [{"item_id": f"i{k}", "domain": domain, "judge": judge, "prompt": prompt,
             "recipe": recipe, "manipulation": manipulation, "setting": setting,
             "n_steps": 0 if recipe == "original" else recipe.count("+") + 1,
             "named": named, "score": v} for k, v in enumerate(values)]


def scores_frame(*groups) -> pd.DataFrame:
    return pd.DataFrame([row for group in groups for row in group])


def test_in_sample_table_picks_the_highest_mean_and_pairs_items():
    scores = scores_frame(
        _rows("j", "people", "original", "original", "", [1.0, 2.0, 3.0]),
        _rows("j", "people", "brightness=1.1", "brightness", "1.1", [1.5, 2.0, 3.5]),
        _rows("j", "people", "brightness=1.5", "brightness", "1.5", [1.0, 3.0, np.nan]))
    table = effects.in_sample_table(scores, "j")
    row = table.iloc[0]
    # 1.1: mean 7/3 on 3 items; 1.5: items 0-1 only, mean 2.0 -> 1.1 wins
    assert row["setting"] == "1.1" and row["n"] == 3
    assert row["original_mean"] == pytest.approx(2.0)
    assert row["percent_change"] == pytest.approx((7 / 3 - 2) / 2 * 100)
    unpaired = effects.paired(scores, "j")
    assert len(unpaired[unpaired["setting"] == "1.5"]) == 2  # the unusable score drops item 2


def test_cross_fit_by_hand():
    # 4 items, 2 settings; halves {0, 1} and {2, 3}
    d = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 2.0], [0.0, 2.0]])
    halves = np.array([True, True, False, False])
    cross, in_sample = effects.cross_fit(d, halves, np.ones((1, 4)))
    # half A picks setting 0, scored on B: 0, 0; half B picks setting 1, scored on A: 0, 0
    assert cross[0] == 0.0
    assert in_sample[0] == pytest.approx(1.0)  # max(mean 0.5, mean 1.0)
    # B's rows flipped: A picks 0 (scored on B: 0, 0); B now picks 0 too (scored on A: 1, 1)
    flipped = np.array([[1.0, 1.0, -1.0, -1.0]])
    cross, in_sample = effects.cross_fit(d, halves, flipped)
    assert in_sample[0] == pytest.approx(0.5) and cross[0] == pytest.approx(0.5)


def _noise_cell(effect: float, n: int = 40, settings: int = 16, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.normal(2.0, 0.5, n)
    groups = [_rows("j", "indoor", "original", "original", "", base)]
    for k in range(settings):
        bump = effect if k == 3 else 0.0
        groups.append(_rows("j", "indoor", f"gamma={1 + k / 10:g}", "gamma", f"{1 + k / 10:g}",
                            base + bump + rng.normal(0, 0.3, n)))
    return scores_frame(*groups)


def test_a_judge_without_susceptibility_gains_in_sample_but_not_cross_fitted():
    table = effects.cross_fitted_table(_noise_cell(0.0), "j", n_permutations=500)
    row = table.iloc[0]
    assert row["in_sample_gain"] > 0.05  # the max of 16 noisy means
    assert row["null_mean"] > 0.05  # ... and its null says so
    assert row["in_sample_p"] > 0.05
    assert row["ci_low"] < 0 < row["ci_high"] and row["p_value"] > 0.05


def test_a_real_effect_is_found_by_both():
    row = effects.cross_fitted_table(_noise_cell(0.5), "j", n_permutations=500).iloc[0]
    assert row["in_sample_setting"] == "1.3"
    assert row["in_sample_p"] < 0.01 and row["p_value"] < 0.01
    assert row["ci_low"] > 0.2


# Seed 004: the printed % changes (Table 3: GPT-4o; Table 12: GPT-4o-mini), in the order
# Bright., Gamma., Refer., Keyword., Inst., Padding., Bounding.; Table 4's beauty filter.
PAPER = {
    "gpt-4o": {"people": [-2.2, 3.5, -0.4, 7.9, 14.9, -6.1, 49.1],
               "animal": [0.6, 7.5, -4.2, -1.2, 7.5, -0.5, 77.9],
               "illustration": [-1.4, 8.7, -7.6, 0.6, 16.5, 6.9, 5.7],
               "indoor": [13.7, 15.4, -3.1, 9.7, 44.1, 13.7, 80.2],
               "outdoor": [1.7, 0.1, -1.5, None, 14.2, 0.6, None], "beauty": -8.3},
    "gpt-4o-mini": {"people": [0.0, 0.0, -1.0, 4.3, 11.8, -1.3, 32.2],
                    "animal": [2.7, 3.5, 0.8, 3.4, 10.4, 1.3, 41.4],
                    "illustration": [0.0, -0.5, -0.8, 1.3, 9.9, -4.1, 0.8],
                    "indoor": [1.0, 0.5, -2.1, 2.1, 13.8, -1.2, 14.1],
                    "outdoor": [1.2, 1.8, -1.1, None, 9.6, 1.6, None], "beauty": -0.5},
}


def test_attack_success_reproduces_the_papers_34_cell_reading():
    rows = []
    for judge, table in PAPER.items():
        for domain, changes in table.items():
            if domain == "beauty":
                rows.append({"judge": judge, "domain": "people",
                             "manipulation": "beauty_filter", "percent_change": changes})
                continue
            rows += [{"judge": judge, "domain": domain, "manipulation": m,
                      "percent_change": c}
                     for m, c in zip(TABLE_ORDER[:7], changes, strict=True) if c is not None]
    success = effects.attack_success(pd.DataFrame(rows)).set_index("judge")
    assert success.loc["gpt-4o-mini", "cells"] == success.loc["gpt-4o", "cells"] == 34
    assert success.loc["gpt-4o-mini", "successes"] == 22  # 0.0 % is no success
    assert success.loc["gpt-4o-mini", "success_rate"] == pytest.approx(64.71, abs=0.005)
    assert success.loc["gpt-4o", "success_rate"] == pytest.approx(67.65, abs=0.005)


def test_paired_tests_and_fdr():
    scores = scores_frame(
        _rows("j", "animal", "original", "original", "", [1, 1, 1, 1, 1, 1]),
        _rows("j", "animal", "padding=40", "padding", "40", [2, 2, 2, 2, 2, 2.5]),
        _rows("j", "animal", "padding=10", "padding", "10", [1, 1, 1, 1, 1, 1]))
    tests = effects.paired_tests(scores, "j").set_index("setting")
    assert tests.loc["10", "wilcoxon_p"] == 1.0 and tests.loc["10", "mean_difference"] == 0
    assert tests.loc["40", "mean_difference"] == pytest.approx(6.5 / 6)
    assert tests.loc["40", "wilcoxon_p"] == pytest.approx(0.03125)  # 2 / 2^6, exact
    assert (tests["q_value"] >= tests["wilcoxon_p"]).all()


def test_score_distribution_bins_and_inter_annotator():
    items = pd.DataFrame({"domain": ["people"] * 4 + ["animal"] * 3,
                          "human_score": [1.0, 2.0, 2.5, 5.0, 3.0, 4.0, 4.5],
                          "annotator_1": [1, 2, 2, 5, 3, 4, 4],
                          "annotator_2": [1, 2, 3, 5, 3, 4, 5]})
    table = humans.score_distribution(items).set_index("domain")
    assert table.loc["people", ["1-2", "2-3", "3-4", "4-5"]].tolist() == [1, 2, 0, 1]
    assert table.loc["animal", ["1-2", "2-3", "3-4", "4-5"]].tolist() == [0, 0, 1, 2]
    assert table.loc["total", "mean"] == pytest.approx(22 / 7)
    agreement = humans.inter_annotator(items).set_index("domain")
    expected = np.corrcoef([1, 2, 2, 5], [1, 2, 3, 5])[0, 1]
    assert agreement.loc["people", "pearson"] == pytest.approx(expected)


def test_win_rates_average_both_orders_and_count_unusable():
    verdicts = pd.DataFrame([
        {"judge": "j", "domain": "people", "item_id": i, "condition": c, "order": o,
         "verdict": v}
        for i, c, o, v in [("a", "original", "ab", "A"), ("a", "original", "ba", "tie"),
                           ("b", "original", "ab", "B"), ("b", "original", "ba", "B"),
                           ("c", "original", "ab", "A"), ("c", "original", "ba", None),
                           ("a", "manipulated", "ab", "A"), ("a", "manipulated", "ba", "A"),
                           ("b", "manipulated", "ab", "A"), ("b", "manipulated", "ba", "B")]])
    rates = pairwise.win_rates(verdicts).set_index("condition")
    assert rates.loc["original", "a_win_rate"] == pytest.approx((0.75 + 0.0) / 2)
    assert rates.loc["original", "n_unusable"] == 1 and rates.loc["original", "n_items"] == 2
    assert rates.loc["original", "share_tie"] == pytest.approx(1 / 5)
    assert rates.loc["manipulated", "a_win_rate"] == pytest.approx(0.75)
    assert rates.loc["manipulated", "change"] == pytest.approx(((1 - 0.75) + 0.5) / 2)
