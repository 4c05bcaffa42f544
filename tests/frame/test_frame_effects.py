"""FRAME's score-change statistics (judgebias.studies.frame.measures.effects) on hand-computed
cases, the paper's own numbers (seed 004 Tables 3, 4, 5, 12; Fig. 2) and the spec's
correction of Table 3 (cross-fitting, the permutation null of the max over the grid)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from judgebias.studies.frame.measures import effects
from judgebias.studies.frame.recipes import TABLE_ORDER


def _rows(domain, recipe, values, prompt="standard", named="", judge="j", prefix=None):
    if recipe == "original":
        manipulation, setting, n_steps = "original", "", 0
    else:
        parts = recipe.split("+")
        n_steps = len(parts)
        manipulation = "+".join(p.split("=")[0] for p in parts)
        setting = parts[0].split("=")[1] if n_steps == 1 else ""
    prefix = prefix or domain[0]
    return [{"item_id": f"{prefix}{k}", "domain": domain, "judge": judge, "prompt": prompt,
             "recipe": recipe, "manipulation": manipulation, "setting": setting,
             "n_steps": n_steps, "named": named, "score": float(v)}
            for k, v in enumerate(values)]


def frame(*groups) -> pd.DataFrame:
    return pd.DataFrame([row for group in groups for row in group])


# --- paired design and Table 3 ------------------------------------------------------------

def test_paired_drops_unusable_scores_and_matches_the_named_original():
    scores = frame(
        _rows("people", "original", [1, 1], "bias_definition", "brightness"),
        _rows("people", "original", [2, np.nan], "bias_definition", "gamma"),
        _rows("people", "brightness=1.1", [3, 3], "bias_definition", "brightness"),
        _rows("people", "gamma=1.1", [2, 2], "bias_definition", "gamma"),
        _rows("people", "original", [9, 9], judge="other"))
    pairs = effects.paired(scores, "j", "bias_definition").set_index(["recipe", "item_id"])
    assert pairs.loc[("brightness=1.1", "p0"), "original"] == 1  # not gamma's original 2
    assert pairs.loc[("brightness=1.1", "p1"), "difference"] == 2
    assert len(pairs.loc["gamma=1.1"]) == 1  # p1's original is unusable: left out
    assert pairs.loc[("gamma=1.1", "p0"), "difference"] == 0


def test_in_sample_table_picks_the_largest_increase_on_paired_items():
    scores = frame(
        _rows("people", "original", [1, 2, 3]),
        _rows("people", "brightness=1.1", [1.5, 2.0, 3.5]),
        _rows("people", "brightness=1.5", [1.0, 3.0, np.nan]),
        _rows("people", "bounding_box=annotated", [1.0, 2.0, 2.4]),
        _rows("animal", "original", [2, 2]),
        _rows("animal", "padding=10", [2, 2]),
        _rows("animal", "padding=40", [2, 2]))
    table = effects.in_sample_table(scores, "j").set_index(["domain", "manipulation"])
    # by hand: 1.1 on 3 items: 2.0 -> 7/3 (+1/3); 1.5 on items 0-1: 1.5 -> 2.0 (+0.5)
    row = table.loc[("people", "brightness")]
    assert row["setting"] == "1.5" and row["n"] == 2 and row["n_settings"] == 2
    assert row["original_mean"] == pytest.approx(1.5)
    assert row["manipulated_mean"] == pytest.approx(2.0)
    assert row["percent_change"] == pytest.approx(100 / 3)
    box = table.loc[("people", "bounding_box")]
    assert box["percent_change"] == pytest.approx((5.4 / 3 - 2) / 2 * 100)  # -10 %
    assert table.loc[("animal", "padding"), "setting"] == "10"  # a tie: first in the grid
    assert table.loc[("animal", "padding"), "percent_change"] == 0.0
    # rows in Table 3's order: domains, then its columns
    assert list(table.index) == [("people", "brightness"), ("people", "bounding_box"),
                                 ("animal", "padding")]


def test_best_settings_and_the_table9_layout():
    scores = frame(
        _rows("people", "original", [1, 1]),
        _rows("people", "brightness=0.9", [2, 2]), _rows("people", "brightness=1.3", [1, 2]),
        _rows("people", "instruction_overlay=center", [1, 1]),
        _rows("people", "instruction_overlay=top-left", [1, 3]),
        _rows("people", "bounding_box=annotated", [3, 3]),
        _rows("indoor", "original", [2, 2]), _rows("indoor", "brightness=1.7", [3, 3]))
    best = effects.best_settings(scores, "j").set_index(["domain", "manipulation"])
    assert best.loc[("people", "brightness"), "recipe"] == "brightness=0.9"
    assert best.loc[("people", "instruction_overlay"), "setting"] == "top-left"
    assert best.loc[("people", "bounding_box"), "recipe"] == "bounding_box=annotated"
    table = effects.recipe_table(best.reset_index())
    assert list(table.columns) == ["brightness", "instruction_overlay"]  # no box column
    assert table.loc[("j", "people")].tolist() == ["0.9", "top-left"]
    assert table.loc[("j", "indoor")].tolist() == ["1.7", "-"]


# --- cross-fitting and the null of the maximum ------------------------------------------

def test_cross_fit_by_hand_two_folds():
    d = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 2.0], [0.0, 2.0]])
    folds = np.array([0, 0, 1, 1])
    cross, in_sample, chosen = effects.cross_fit(*effects.fold_sums(d, folds))
    # fold 0's setting is chosen on fold 1 (means 0, 2 -> setting 1), scored on fold 0:
    # 0, 0; fold 1's on fold 0 (means 1, 0 -> setting 0), scored on fold 1: 0, 0
    assert chosen[0].tolist() == [1, 0] and cross[0] == 0.0
    assert in_sample[0] == pytest.approx(1.0)  # max(0.5, 1.0)
    # fold 1's rows flipped: [[0, -2], [0, -2]]; fold 0 now picks 0 (scored: 1 + 1),
    # fold 1 picks 0 (scored: 0 + 0); in-sample means (2/4, -4/4)
    flipped = d * np.array([[1.0], [1.0], [-1.0], [-1.0]])
    cross, in_sample, _ = effects.cross_fit(*effects.fold_sums(flipped, folds))
    assert cross[0] == pytest.approx(0.5) and in_sample[0] == pytest.approx(0.5)


def test_cross_fit_by_hand_three_folds_and_ties():
    d = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [2, 0], [0, 0]], dtype=float)
    folds = np.array([0, 0, 1, 1, 2, 2])
    cross, in_sample, chosen = effects.cross_fit(*effects.fold_sums(d, folds))
    # fold 0 trained on items 2-5: means (0.5, 0.5), a tie -> setting 0, scored 1 + 1;
    # fold 1 on items 0, 1, 4, 5: (1, 0) -> 0, scored 0 + 0; fold 2 on items 0-3: tie -> 0,
    # scored 2 + 0. Cross-fitted: 4 / 6; in-sample: max(4/6, 2/6)
    assert chosen[0].tolist() == [0, 0, 0]
    assert cross[0] == pytest.approx(4 / 6) and in_sample[0] == pytest.approx(4 / 6)


def _grid_cell(effect: float, n: int = 60, seed: int = 0, domain: str = "indoor",
               manipulation: str = "gamma") -> pd.DataFrame:
    """One cell, 16 settings: the judge's score of a manipulated image = its original's
    plus noise; setting 1.3 adds `effect` (0: a judge with no susceptibility)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(2.0, 0.5, n)
    groups = [_rows(domain, "original", base)]
    for k in range(16):
        setting = f"{0.8 + k / 10:g}"
        bump = effect if setting == "1.3" else 0.0
        groups.append(_rows(domain, f"{manipulation}={setting}",
                            base + bump + rng.normal(0, 0.3, n)))
    return frame(*groups)


def test_no_effect_judge_gains_in_sample_but_not_cross_fitted():
    rows = pd.concat([effects.cross_fitted_table(_grid_cell(0.0, seed=s), "j",
                                                 n_permutations=199, seed=s)
                      for s in range(25)], ignore_index=True)
    # the max of 16 noisy means (sd 0.3 / sqrt(60) = 0.039) sits near 1.77 sd above 0
    assert rows["in_sample_gain"].mean() > 0.05
    assert rows["null_mean"].mean() == pytest.approx(rows["in_sample_gain"].mean(), abs=0.02)
    assert abs(rows["cross_fitted_gain"].mean()) < 0.015  # unbiased: about 0
    assert (rows["in_sample_p"] > 0.05).mean() >= 0.8
    assert (rows["p_value"] > 0.05).mean() >= 0.8
    assert ((rows["ci_low"] < 0) & (rows["ci_high"] > 0)).mean() >= 0.8
    one = rows.iloc[0]
    assert one["n"] == 60 and one["n_settings"] == 16
    assert one["null_q95"] > one["null_mean"] > 0


def test_real_effect_is_found_by_both():
    row = effects.cross_fitted_table(_grid_cell(0.5), "j", n_permutations=999).iloc[0]
    assert row["in_sample_setting"] == "1.3" and row["cross_fitted_settings"] == "1.3|1.3"
    assert row["cross_fitted_gain"] == pytest.approx(0.5, abs=0.1)
    assert row["in_sample_p"] == row["p_value"] == pytest.approx(1 / 1000)
    assert row["ci_low"] > 0.3 and row["in_sample_gain"] > row["null_q95"]
    assert row["cross_fitted_percent"] == pytest.approx(
        row["cross_fitted_gain"] / row["original_mean"] * 100)
    assert row["cross_fitted_mean"] == pytest.approx(row["original_mean"]
                                                     + row["cross_fitted_gain"])


def test_cross_fitted_table_is_seeded_and_splits_within_domain():
    scores = pd.concat([_grid_cell(0.2), _grid_cell(0.0, manipulation="brightness")])
    a = effects.cross_fitted_table(scores, "j", n_permutations=99, seed=3)
    b = effects.cross_fitted_table(scores, "j", n_permutations=99, seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert list(a["manipulation"]) == ["brightness", "gamma"]  # Table 3's column order
    alone = effects.cross_fitted_table(_grid_cell(0.2), "j", n_permutations=99, seed=3)
    pd.testing.assert_frame_equal(alone.iloc[[0]].drop(columns="in_sample_q").reset_index(
        drop=True), a.iloc[[1]].drop(columns="in_sample_q").reset_index(drop=True))
    assert a["in_sample_q"].tolist() == pytest.approx(multipletests(
        a["in_sample_p"], method="fdr_bh")[1])  # the FDR runs over the judge's cells
    folds = effects._fold_of_items(effects.paired(scores, "j"), 2, seed=3)
    assert folds.value_counts().tolist() == [16 * 60, 16 * 60]  # halves of 30 items each


def test_single_setting_cell_cross_fits_to_the_plain_mean():
    scores = frame(_rows("people", "original", [1, 2, 3, 4]),
                   _rows("people", "bounding_box=annotated", [2, 2, 4, 4]))
    row = effects.cross_fitted_table(scores, "j", n_permutations=15).iloc[0]
    assert row["cross_fitted_gain"] == row["in_sample_gain"] == pytest.approx(0.5)
    assert row["cross_fitted_percent"] == pytest.approx(0.5 / 2.5 * 100)
    d = np.array([1.0, 0, 1, 0])
    half = stats.t.ppf(0.975, 3) * d.std(ddof=1) / 2
    assert row["ci_low"] == pytest.approx(0.5 - half)


def _world(items: int, seed: int, noise, planted: float = 0.0) -> pd.DataFrame:
    """Five domains x four gridded manipulations (16, 16, 7, 5 settings); `noise(rng,
    latent)` makes a score; `planted` lifts Indoor's gamma at setting 13."""
    rng = np.random.default_rng(seed)
    groups = []
    for domain in ("people", "animal", "illustration", "indoor", "outdoor"):
        base = rng.normal(2.5, 0.7, items)
        groups.append(_rows(domain, "original", noise(rng, base)))
        for manipulation, grid in (("brightness", 16), ("gamma", 16), ("padding", 7)):
            for k in range(grid):
                lift = planted if (domain, manipulation, k) == ("indoor", "gamma", 3) else 0
                groups.append(_rows(domain, f"{manipulation}={10 + k}",
                                    noise(rng, base + lift)))
        for position in ("bottom-right", "bottom-left", "top-right", "top-left", "center"):
            groups.append(_rows(domain, f"instruction_overlay={position}",
                                noise(rng, base)))
    return frame(*groups)


def _normal(rng, latent):
    return latent + rng.normal(0, 0.3, len(latent))


def test_whole_table_null_takes_seconds():
    # the paper's 100 items per domain, the default 2000 null draws per cell
    table = effects.cross_fitted_table(_world(100, 1, _normal), "j")
    assert len(table) == 20 and (table["n"] == 100).all()


# --- the exact null, chance levels and the simultaneous interval -------------------------

def test_rotations_call_each_version_the_original_once():
    turned = effects.rotations(np.array([[1.0, 2.0, 3.0]]))
    assert turned[0].tolist() == [[1, 2, 3], [2, 3, 1], [3, 1, 2]]


def test_monte_carlo_p_counts_the_observed_and_breaks_ties_at_random():
    null = np.array([1.0, 2.0, 2.0, 3.0])
    assert effects.monte_carlo_p(null, 5.0, np.random.default_rng(0)) == 1 / 5
    assert effects.monte_carlo_p(null, 0.0, np.random.default_rng(0)) == 1.0
    # one draw above, two tied: 1 + 1 + J over 5, J uniform on 0, 1, 2
    seen = {effects.monte_carlo_p(null, 2.0, np.random.default_rng(s)) for s in range(50)}
    assert seen == {2 / 5, 3 / 5, 4 / 5}


def test_max_abs_t_by_hand():
    mean, variance = np.array([[0.5, 0.0, -1.0]]), np.array([[0.25, 0.0, 1.0]])
    # 0.5 / sqrt(0.25 / 4) = 2; 0 / 0 -> 0; 1 / sqrt(1 / 4) = 2
    assert effects.max_abs_t(mean, variance, 4).tolist() == [2.0]
    assert effects.max_abs_t(np.array([[0.5, 0.2]]), np.array([[0.25, 0.0]]), 4
                             ).tolist() == [np.inf]  # a constant nonzero gain


def test_grid_null_of_one_setting_is_the_swap_of_original_and_manipulated():
    # two items, one setting: four equally likely relabellings, gains (1 + 3) / 2 = 2,
    # (-1 + 3) / 2 = 1, (1 - 3) / 2 = -1, -2
    versions = np.array([[0.0, 1.0], [0.0, 3.0]])
    null = effects.grid_null(versions, np.array([0, 1]), np.random.default_rng(0), 4000)
    values, counts = np.unique(null["in_sample"], return_counts=True)
    assert values.tolist() == [-2, -1, 1, 2]
    assert counts / 4000 == pytest.approx([0.25] * 4, abs=0.03)
    assert (null["tied"] == 1).all()  # never a tie: the chance of a success is 1/2


def _enumerated_chance(versions: np.ndarray) -> float:
    """P(some setting's mean > the original's) over every rotation of every item."""
    turned = effects.rotations(versions)
    wins = []
    for called in itertools.product(range(versions.shape[1]), repeat=len(versions)):
        means = turned[np.arange(len(versions)), called].mean(axis=0)
        wins.append(means[1:].max() > means[0] + 1e-12)
    return float(np.mean(wins))


def test_chance_level_counts_ties_as_failures():
    # discrete scores: each item has two versions scored 0 and one scored 1
    versions = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    folds = np.array([0, 0, 1, 1])
    row = effects.cell_statistics(versions, ["a", "b"], folds, np.random.default_rng(0),
                                  20000, 0.95)
    # each item's 1 lands in column 0, 1 or 2 with chance 1/3: the original's count is
    # at least both others' in (4,0,0), (3,1,0) x2, (2,2,0) x2 and (2,1,1): 1 + 8 + 12 +
    # 12 = 33 of 81, so a no-bias judge succeeds 48/81, below S / (S + 1) = 2/3
    exact = _enumerated_chance(versions)
    assert exact == pytest.approx(48 / 81)
    assert row["chance_in_sample"] == pytest.approx(exact, abs=0.01)
    # all versions equal: every draw ties, no success is possible
    flat = effects.cell_statistics(np.ones((4, 3)), ["a", "b"], folds,
                                   np.random.default_rng(0), 200, 0.95)
    assert flat["chance_in_sample"] == flat["chance_cross_fitted"] == 0.0
    assert flat["in_sample_p"] <= 1.0 and flat["best_low"] == flat["best_high"] == 0.0


def test_continuous_chance_is_s_over_s_plus_1_and_the_interval_is_max_t():
    table = effects.cross_fitted_table(_grid_cell(0.0), "j", n_permutations=999)
    row = table.iloc[0]
    assert row["chance_in_sample"] == pytest.approx(16 / 17)
    assert 0.4 < row["chance_cross_fitted"] < 0.55
    d = (_grid_cell(0.0).pipe(effects.paired, "j").pivot(index="item_id", columns="setting",
                                                          values="difference"))
    gains, se = d.mean(), d.std(ddof=1) / np.sqrt(len(d))
    assert row["best_low"] == pytest.approx((gains - row["max_t_critical"] * se).max())
    assert row["best_high"] == pytest.approx((gains + row["max_t_critical"] * se).max())
    # the studentised max of 16 settings lies above a single t quantile
    assert row["max_t_critical"] > stats.t.ppf(0.975, 59)


def _whole_numbers(rng, latent):
    return np.clip(np.round(latent + rng.normal(0, 0.5, len(latent))), 0, 5)


@pytest.mark.parametrize("noise", [_whole_numbers, _normal])
def test_no_bias_judge_in_another_world_finds_nothing(noise):
    """A judge with no visual bias in a world the default does not use (whole-number or
    continuous scores, 20 items per domain): no cell survives the FDR and the best
    setting's simultaneous interval covers 0 (nominally in 95 % of the cells)."""
    table = effects.cross_fitted_table(_world(20, 7, noise), "j", n_permutations=499)
    assert (table["in_sample_q"] < 0.05).sum() == 0
    assert ((table["best_low"] <= 0) & (table["best_high"] >= 0)).mean() >= 0.9


def test_no_bias_judge_succeeds_at_its_chance_level():
    """Attack success of a no-bias judge with whole-number scores, over five worlds of 20
    cells: the cells of a domain share their originals, so one world's rate moves in
    blocks of four cells; the average sits at the reported chance levels."""
    rates = []
    for seed in range(5):
        scores = _world(12, seed, _whole_numbers)
        table = effects.cross_fitted_table(scores, "j", n_permutations=199, seed=seed)
        in_sample = effects.in_sample_table(scores, "j").merge(
            table[[*effects.CELL, "chance_in_sample"]], on=effects.CELL)
        rates.append([effects.attack_success(in_sample, chance="chance_in_sample"),
                      effects.attack_success(table.assign(
                          percent_change=table["cross_fitted_percent"]),
                          chance="chance_cross_fitted")])
    for reading in (0, 1):
        both = pd.concat([r[reading] for r in rates])
        assert both["success_rate"].mean() == pytest.approx(both["chance_rate"].mean(), abs=8)
    assert pd.concat([r[0] for r in rates])["chance_rate"].mean() > 75  # in-sample: ~S/(S+1)
    assert 30 < pd.concat([r[1] for r in rates])["chance_rate"].mean() < 52  # ~1/2 - ties


def test_a_planted_cell_stands_out_of_the_same_world():
    table = effects.cross_fitted_table(_world(20, 7, _whole_numbers, planted=1.0), "j",
                                       n_permutations=499).set_index(effects.CELL)
    planted = table.loc[("indoor", "gamma")]
    assert planted["in_sample_q"] < 0.05 and planted["best_low"] > 0
    assert (table.drop(("indoor", "gamma"))["in_sample_q"] >= 0.05).all()


# --- Fig. 2: attack success on the paper's own numbers -----------------------------------

# Seed 004 Table 3 (GPT-4o) and Table 12 (GPT-4o-mini): Orig. and, per domain, the printed
# (mean, parenthesised % change) in Table 3's column order Bright., Gamma., Refer.,
# Keyword., Inst., Padding., Bounding.; "beauty": Table 4 (Orig., Beauty., %).
PAPER = {
    "gpt-4o": {
        "people": (1.14, [(1.12, -2.2), (1.18, 3.5), (1.14, -0.4), (1.23, 7.9),
                          (1.31, 14.9), (1.07, -6.1), (1.70, 49.1)]),
        "animal": (0.67, [(0.67, 0.6), (0.72, 7.5), (0.64, -4.2), (0.66, -1.2),
                          (0.72, 7.5), (0.66, -0.5), (1.19, 77.9)]),
        "illustration": (1.09, [(1.08, -1.4), (1.19, 8.7), (1.01, -7.6), (1.10, 0.6),
                                (1.27, 16.5), (1.17, 6.9), (1.16, 5.7)]),
        "indoor": (1.14, [(1.29, 13.7), (1.31, 15.4), (1.10, -3.1), (1.25, 9.7),
                          (1.64, 44.1), (1.29, 13.7), (2.05, 80.2)]),
        "outdoor": (2.37, [(2.41, 1.7), (2.37, 0.1), (2.33, -1.5), None, (2.71, 14.2),
                           (2.38, 0.6), None]),
        "beauty": (1.14, 1.05, -8.3)},
    "gpt-4o-mini": {
        "people": (2.32, [(2.32, 0.0), (2.32, 0.0), (2.30, -1.0), (2.42, 4.3),
                          (2.60, 11.8), (2.29, -1.3), (3.07, 32.2)]),
        "animal": (1.76, [(1.80, 2.7), (1.82, 3.5), (1.77, 0.8), (1.81, 3.4),
                          (1.94, 10.4), (1.78, 1.3), (2.48, 41.4)]),
        "illustration": (1.98, [(1.98, 0.0), (1.98, -0.5), (1.97, -0.8), (2.01, 1.3),
                                (2.18, 9.9), (1.90, -4.1), (2.00, 0.8)]),
        "indoor": (2.69, [(2.72, 1.0), (2.70, 0.5), (2.63, -2.1), (2.74, 2.1),
                          (3.06, 13.8), (2.65, -1.2), (3.07, 14.1)]),
        "outdoor": (3.25, [(3.29, 1.2), (3.31, 1.8), (3.22, -1.1), None, (3.57, 9.6),
                           (3.31, 1.6), None]),
        "beauty": (2.32, 2.31, -0.5)},
}


def _paper_changes() -> pd.DataFrame:
    rows = []
    for judge, table in PAPER.items():
        for domain, (original, cells) in ((d, v[:2]) for d, v in table.items()):
            if domain == "beauty":
                rows.append({"judge": judge, "domain": "people",
                             "manipulation": "beauty_filter", "original": original,
                             "mean": table["beauty"][1], "printed": table["beauty"][2]})
                continue
            rows += [{"judge": judge, "domain": domain, "manipulation": m,
                      "original": original, "mean": cell[0], "printed": cell[1]}
                     for m, cell in zip(TABLE_ORDER[:7], cells, strict=True)
                     if cell is not None]
    out = pd.DataFrame(rows)
    return out.assign(recomputed=(out["mean"] - out["original"]) / out["original"] * 100)


def test_attack_success_reproduces_the_papers_fig2_numbers():
    changes = _paper_changes()
    success = effects.attack_success(changes, percent="printed").set_index("judge")
    assert success.loc["gpt-4o-mini", "cells"] == success.loc["gpt-4o", "cells"] == 34
    assert success.loc["gpt-4o-mini", "successes"] == 22  # the 0.0 % cells are no success
    assert success.loc["gpt-4o", "successes"] == 23
    assert success.loc["gpt-4o-mini", "success_rate"] == pytest.approx(64.71, abs=0.005)
    assert success.loc["gpt-4o", "success_rate"] == pytest.approx(67.65, abs=0.005)
    # mean change over the successful cells only (Fig. 2 right), by hand for GPT-4o-mini
    wins = [4.3, 11.8, 32.2, 2.7, 3.5, 0.8, 3.4, 10.4, 1.3, 41.4, 1.3, 9.9, 0.8, 1.0, 0.5,
            2.1, 13.8, 14.1, 1.2, 1.8, 9.6, 1.6]
    assert success.loc["gpt-4o-mini", "mean_gain"] == pytest.approx(np.mean(wins))
    # the other reading, changes recomputed from the printed 2-decimal means, does not
    # reproduce GPT-4o's 67.65 % (Animal Bright. 0.67 -> 0.67 and Outdoor Gamma.
    # 2.37 -> 2.37 are printed +0.6 % and +0.1 %): the paper used unrounded means
    other = effects.attack_success(changes, percent="recomputed").set_index("judge")
    assert other.loc["gpt-4o", "successes"] == 21
    assert other.loc["gpt-4o-mini", "successes"] == 22


def test_attack_success_counts_only_applicable_cells():
    changes = pd.DataFrame({"judge": "j", "domain": ["outdoor", "outdoor", "animal", "people"],
                            "manipulation": ["keyword_overlay", "padding", "beauty_filter",
                                             "gamma"],
                            "percent_change": [50.0, 0.0, 10.0, np.nan]})
    row = effects.attack_success(changes).iloc[0]
    assert row["cells"] == 1 and row["successes"] == 0 and row["success_rate"] == 0.0
    assert row["cells_missing"] == 1 and np.isnan(row["mean_gain"])


def test_attack_success_beside_its_chance_level():
    changes = pd.DataFrame({"judge": "j", "domain": ["people", "animal", "indoor"],
                            "manipulation": ["gamma", "gamma", "padding"],
                            "percent_change": [4.0, 1e-12, -3.0],  # 1e-12: a float tie
                            "chance": [16 / 17, 16 / 17, 7 / 8]})
    row = effects.attack_success(changes, chance="chance").iloc[0]
    assert row["successes"] == 1 and row["success_rate"] == pytest.approx(100 / 3)
    assert row["chance_rate"] == pytest.approx(100 * (32 / 17 + 7 / 8) / 3)
    assert np.isnan(effects.attack_success(changes).iloc[0]["chance_rate"])


# --- Table 5 -------------------------------------------------------------------------------

def test_table5_standard_column_from_table3s_gpt41_mini_rows():
    # seed 004 Table 3, GPT-4.1-mini, the four non-Outdoor domains
    originals = {"people": 1.55, "animal": 1.02, "illustration": 1.51, "indoor": 1.38}
    means = {"people": [1.61, 1.60, 1.55, 1.63, 1.62, 1.68, 1.55],
             "animal": [1.13, 1.13, 1.07, 1.13, 1.07, 1.16, 1.09],
             "illustration": [1.53, 1.54, 1.50, 1.57, 1.55, 1.57, 1.39],
             "indoor": [1.50, 1.53, 1.46, 1.49, 1.53, 1.61, 1.38]}
    per_domain = pd.DataFrame([
        {"domain": d, "manipulation": m, "n": 100, "original_mean": originals[d],
         "manipulated_mean": v} for d, row in means.items()
        for m, v in zip(TABLE_ORDER[:7], row, strict=True)])
    table5 = {"brightness": (1.44, 5.9), "gamma": (1.45, 6.2),
              "authenticity_overlay": (1.39, 2.3), "keyword_overlay": (1.45, 6.6),
              "instruction_overlay": (1.44, 5.8), "padding": (1.50, 10.4),
              "bounding_box": (1.35, -1.0)}
    got = effects.domain_average(per_domain, ["manipulation"]).set_index("manipulation")
    assert (got["n_domains"] == 4).all() and (got["n"] == 400).all()
    for m, (mean, change) in table5.items():
        assert got.loc[m, "original_mean"] == pytest.approx(1.365)  # Table 5: 1.36
        assert got.loc[m, "manipulated_mean"] == pytest.approx(mean, abs=0.006)
        assert got.loc[m, "percent_change"] == pytest.approx(change, abs=0.3)
    # averaging the domains' % changes instead misses Table 5 (Bounding.: -0.3 vs -1.0)
    percent = per_domain.assign(p=(per_domain["manipulated_mean"] / per_domain["original_mean"]
                                   - 1) * 100).groupby("manipulation")["p"].mean()
    assert abs(percent["bounding_box"] - (-1.0)) > 0.5


def test_mitigation_table_by_hand():
    bd = "bias_definition"
    scores = frame(
        _rows("people", "original", [1, 3]), _rows("people", "brightness=1.1", [2, 4]),
        _rows("people", "gamma=1.2", [1, 3]), _rows("people", "brightness=1.5", [5, 5]),
        _rows("animal", "original", [2, 2]), _rows("animal", "brightness=1.1", [2, 2]),
        _rows("animal", "gamma=1.2", [3, 3]),
        _rows("outdoor", "original", [5]), _rows("outdoor", "brightness=1.1", [0]),
        _rows("people", "original", [1, 1], bd, "brightness"),
        _rows("people", "original", [2, 2], bd, "gamma"),
        _rows("people", "brightness=1.1", [2, np.nan], bd, "brightness"),
        _rows("people", "gamma=1.2", [3, 3], bd, "gamma"),
        _rows("animal", "original", [2, 2], bd, "brightness"),
        _rows("animal", "original", [4, 4], bd, "gamma"),
        _rows("animal", "brightness=1.1", [3, 3], bd, "brightness"),
        _rows("animal", "gamma=1.2", [4, 4], bd, "gamma"),
        _rows("outdoor", "original", [1], bd, "brightness"),
        _rows("outdoor", "brightness=1.1", [5], bd, "brightness"))
    table = effects.mitigation_table(scores, "j").set_index(["prompt", "manipulation"])
    expected = {  # (original mean, manipulated mean, % change), domain means averaged
        ("standard", "original"): (2.0, 2.0, 0.0),
        ("standard", "brightness"): (2.0, 2.5, 25.0),  # people 2 -> 3, animal 2 -> 2
        ("standard", "gamma"): (2.0, 2.5, 25.0),  # people 2 -> 2, animal 2 -> 3
        (bd, "original"): (2.25, 2.25, 0.0),  # people (1+1+2+2)/4, animal (2+2+4+4)/4
        (bd, "brightness"): (1.5, 2.5, 200 / 3),  # people p0 only: 1 -> 2; animal 2 -> 3
        (bd, "gamma"): (3.0, 3.5, 50 / 3)}  # people 2 -> 3, animal 4 -> 4
    assert list(table.index) == list(expected)
    for key, (orig, manipulated, change) in expected.items():
        assert table.loc[key, "original_mean"] == pytest.approx(orig)
        assert table.loc[key, "manipulated_mean"] == pytest.approx(manipulated)
        assert table.loc[key, "percent_change"] == pytest.approx(change)
    assert table.loc[(bd, "brightness"), "n"] == 3
    best = pd.DataFrame({"judge": "j", "domain": ["people", "animal"],
                         "manipulation": "brightness", "setting": ["1.5", "1.1"]})
    given = effects.mitigation_table(scores, "j", best).set_index(["prompt", "manipulation"])
    assert given.loc[("standard", "brightness"), "manipulated_mean"] == pytest.approx(3.5)


# --- Tables 6 and 11 ---------------------------------------------------------------------

def test_combinations_table_by_hand():
    scores = frame(
        _rows("people", "original", [1, 1]),
        _rows("people", "brightness=1.1", [2, 2]), _rows("people", "padding=40", [1, 2]),
        _rows("people", "instruction_overlay=center", [1.5, 1.5]),
        _rows("people", "brightness=1.5", [4, 4]),  # not a best setting
        _rows("people", "brightness=1.1+padding=40", [2, 3]),
        _rows("people", "brightness=1.1+instruction_overlay=center", [3, 3]),
        _rows("people", "gamma=1.1+padding=40", [5, 5]),  # gamma is not among the best
        _rows("people", "brightness=1.1+instruction_overlay=center+padding=40",
              [2, np.nan]))
    best = pd.DataFrame({"judge": "j", "domain": "people",
                         "manipulation": ["brightness", "padding", "instruction_overlay"],
                         "setting": ["1.1", "40", "center"]})
    table = effects.combinations_table(scores, "j", best).set_index("n_steps")
    assert table.loc[1, "recipe"] == "brightness=1.1"
    assert table.loc[1, "percent_change"] == pytest.approx(100.0)
    assert table.loc[2, "recipe"] == "brightness=1.1+instruction_overlay=center"
    assert table.loc[2, "manipulated_mean"] == 3 and table.loc[2, "percent_change"] == 200
    assert table.loc[3, "n"] == 1 and table.loc[3, "manipulated_mean"] == 2
    detail = effects.combinations_table(scores, "j", best, detail=True)
    assert len(detail) == 6 and "gamma=1.1+padding=40" not in set(detail["recipe"])


# --- beyond the paper: paired tests --------------------------------------------------------

def test_paired_tests_by_hand_and_fdr():
    scores = frame(
        _rows("animal", "original", [1, 1, 1, 1, 1, 1]),
        _rows("animal", "padding=40", [2, 2, 2, 2, 2, 2.5]),
        _rows("animal", "padding=10", [1, 1, 1, 1, 1, 1]))
    tests = effects.paired_tests(scores, "j").set_index("setting")
    assert list(tests.index) == ["10", "40"]
    assert tests.loc["10", "wilcoxon_p"] == 1.0 and tests.loc["10", "t_p"] == 1.0
    # d = (1, 1, 1, 1, 1, 1.5): mean 13/12, sd sqrt(0.25/6) -> se 1/12, t = 13, df 5
    assert tests.loc["40", "mean_difference"] == pytest.approx(13 / 12)
    assert tests.loc["40", "t_p"] == pytest.approx(2 * stats.t.sf(13, 5))
    assert tests.loc["40", "ci_high"] == pytest.approx(13 / 12 + stats.t.ppf(0.975, 5) / 12)
    assert tests.loc["40", "wilcoxon_p"] == pytest.approx(2 / 2**6)  # all 6 signs positive
    assert tests.loc["40", "q_value"] == pytest.approx(2 / 2**6 * 2)  # BH: p * m / rank
    chosen = pd.DataFrame({"domain": ["animal"], "manipulation": ["padding"],
                           "setting": ["40"]})
    one = effects.paired_tests(scores, "j", chosen)
    assert one["setting"].tolist() == ["40"]
    assert one["q_value"].iloc[0] == pytest.approx(2 / 2**6)  # one test: q = p
