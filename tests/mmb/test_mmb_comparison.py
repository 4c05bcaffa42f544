"""Issue 20 (MMB): the comparison of MMB with AVG and BPE over test groups (Brier,
tested; ECE, estimated), the power curve, and the simulated world without images. Hand
cases, the factorial's own numbers, a judge with no bias at all and a world the default
does not use (nothing significant), and the planted difference found. Level and coverage
in full: benchmarks/mmb_power.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.mmb import random_split
from scipy.special import expit

from judgebias.studies.mmb.data.synthetic import STYLES
from judgebias.studies.mmb.measures.comparison import (
    cell_predictions,
    compare_brier,
    compare_ece,
    group_differences,
    judge_comparisons,
    verdicts,
    weighted_ece,
)
from judgebias.studies.mmb.measures.factorial import Design, run_factorial
from judgebias.studies.mmb.measures.metrics import batch_metrics
from judgebias.studies.mmb.measures.power import per_cluster_grid, recovery
from judgebias.studies.mmb.params import builtin_pool
from judgebias.studies.mmb.report import COMPARISON_COLUMNS, comparison_table
from judgebias.studies.mmb.sim import JudgeTraits, landscape_key
from judgebias.studies.mmb.world import simulate_world

EXPERTS = {"pastel landscape": "landscape painter", "neon sci-fi": "graphic designer",
           "ink sketch": "comic book inker", "pixel mosaic": "pixel artist"}
POOL = [p["text"] for p in builtin_pool()]


def test_weighted_ece_hand_case():
    # gaps hit - conf: .05 (bin 14), -.95 (14), .15 (12), -.65 (9), .35 (9), .45 (8)
    p = np.array([0.95, 0.05, 0.85, 0.65, 0.35, 0.55])
    y = np.array([1, 1, 1, 0, 0, 1])
    ones = np.ones(6)
    assert weighted_ece(p, y, ones)[0, 0] == pytest.approx(batch_metrics(p, y)["ece"][0])
    # the first pair twice, the second left out: |.1| + .15 + |-.3| + .45 over 6
    assert weighted_ece(p, y, [2, 0, 1, 1, 1, 1])[0, 0] == pytest.approx(1.0 / 6)


def test_weighted_ece_equals_the_metrics_module():
    rng = np.random.default_rng(0)
    p, y = np.round(rng.random((4, 80)), 2), rng.integers(0, 2, 80)
    np.testing.assert_allclose(weighted_ece(p, y, np.ones(80))[0],
                               batch_metrics(p, y)["ece"], atol=1e-12)


def test_cell_predictions_are_the_factorial_runs():
    split = random_split(np.random.default_rng(4))
    design = Design(n_prompts=[4], n_val=[12], train_seeds=[0, 1], sampling_seeds=[0, 1, 2])
    runs = cell_predictions(split, design, 4, 12, 3)
    frame = run_factorial(split, design)
    ones = np.ones(len(split.y_test))
    for method, k in (("AVG", 0), ("BPE", 0), ("MMB", 3)):
        mine = frame[(frame["method"] == method) & (frame["k"] == k)]
        expected = mine.sort_values(["sampling_seed", "train_seed", "cluster_seed"])["ece"]
        np.testing.assert_allclose(weighted_ece(runs[method], split.y_test, ones)[0],
                                   expected.to_numpy(), atol=1e-12)


def test_group_differences_hand_case():
    # Brier MMB .04 .16 | .16 .01, baseline .16 .25 | .01 .09: pairs -.12 -.09 | .15 -.08
    p_mmb, p_base = np.array([[0.8, 0.4, 0.6, 0.9]]), np.array([[0.6, 0.5, 0.9, 0.7]])
    found = group_differences(p_mmb, p_base, [1, 0, 1, 1], ["g", "g", "h", "h"])
    np.testing.assert_allclose(found, [-0.105, 0.035])


def test_compare_brier_hand_case():
    """Two MMB runs averaged per pair (Brier .10, .25, .10), a perfect baseline (0), one
    pair per group: d = (.10, .25, .10), D = .15, se = .05, t = 3 on 2 df: p = 1 -
    3 / sqrt(11), interval .15 -+ t_.975,2 x .05; sign flip: only the all-plus and
    all-minus flips reach |mean| .15, 2 of 8."""
    p_mmb = np.array([[0.6, 0.5, 0.2], [0.8, 0.5, 0.4]])
    found = compare_brier(p_mmb, np.array([[1.0, 1.0, 0.0]]), [1, 1, 0], ["b", "a", "c"])
    half = 4.302652729911275 * 0.05
    assert found == pytest.approx({"difference": 0.15, "low": 0.15 - half,
                                   "high": 0.15 + half, "p_value": 1 - 3 / np.sqrt(11),
                                   "p_sign_flip": 0.25, "n_groups": 3})


def test_identical_methods_differ_by_nothing():
    rng = np.random.default_rng(1)
    p, y = rng.random((3, 40)), rng.integers(0, 2, 40)
    groups = np.repeat(np.arange(8), 5)
    assert compare_brier(p, p, y, groups) == {"difference": 0.0, "low": 0.0, "high": 0.0,
                                              "p_value": 1.0, "p_sign_flip": 1.0,
                                              "n_groups": 8}
    found = compare_ece(p, p, y, groups, n_boot=200)
    assert found == {"difference": 0.0, "low": 0.0, "high": 0.0, "p_value": 1.0}


@pytest.mark.parametrize("compare", [compare_brier, compare_ece])
def test_bad_shapes_are_a_clear_error(compare):
    with pytest.raises(ValueError, match="same test pairs"):
        compare(np.zeros((1, 3)), np.zeros((1, 4)), [0, 1, 0], [0, 1, 2])
    with pytest.raises(ValueError, match="at least 2"):
        compare(np.zeros((1, 3)), np.zeros((1, 3)), [0, 1, 0], [0, 0, 0])


def _runs(rng, scale, n_groups=20, per_group=10):
    x = rng.normal(0.0, 1.5, n_groups * per_group)
    y = (rng.random(len(x)) < expit(x)).astype(int)
    mmb = expit(x + rng.normal(0, 0.5, (4, len(x))))
    base = expit(scale * x + rng.normal(0, 0.5, (4, len(x))))
    return mmb, base, y, np.repeat(np.arange(n_groups), per_group)


def test_planted_difference_is_found_and_null_is_not():
    """An under-confident baseline (logits times 0.3) loses clearly; a baseline of the
    same law as MMB (equally good by construction) is rejected at about the nominal rate
    (40 data sets: at most 6 rejections, P < 0.01 at a true 5 %)."""
    rng = np.random.default_rng(2)
    planted = compare_brier(*_runs(rng, 0.3))
    assert planted["difference"] < 0 and planted["high"] < 0 and planted["p_value"] < 0.01
    assert planted["p_sign_flip"] < 0.01
    nulls = [compare_brier(*_runs(rng, 1.0), n_perm=999, seed=i) for i in range(40)]
    assert sum(f["p_value"] < 0.05 for f in nulls) <= 6
    assert sum(f["p_sign_flip"] < 0.05 for f in nulls) <= 6


def test_verdicts_adjust_over_every_row():
    table = pd.DataFrame({"difference": [-0.1, 0.1, -0.1], "p_value": [0.001, 0.001, 0.5]})
    out = verdicts(table, 0.05)
    assert out["verdict"].tolist() == ["MMB better", "MMB worse", "not distinguishable"]
    assert out["p_adjusted"].iloc[0] == pytest.approx(0.001 * 3 * (1 + 1 / 2 + 1 / 3) / 2)


def test_judge_comparisons_fill_the_report_table():
    """Each baseline's row carries the Brier test and the ECE estimate, the verdict comes
    from the Brier p, and the report table shows every column."""
    split = random_split(np.random.default_rng(5))
    design = Design(n_prompts=[4], n_val=[12], train_seeds=[0, 1], sampling_seeds=[0, 1])
    groups = np.repeat(np.arange(16), 5)
    rows = judge_comparisons(split, design, groups, n_prompts=4, n_val=12, k=3, n_boot=100,
                             seed=0)
    runs = cell_predictions(split, design, 4, 12, 3)
    expected = compare_brier(runs["MMB"], runs["AVG"], split.y_test, groups)
    assert rows.iloc[0][list(expected)].to_dict() == pytest.approx(expected)
    assert (rows["ece_low"] <= rows["ece_difference"]).all()
    assert (rows["ece_difference"] <= rows["ece_high"]).all()
    table = comparison_table(verdicts(rows.assign(judge="j"), 0.05), {"alpha": 0.05}, 3,
                             {"n_prompts": 4, "n_val": 12})
    assert list(table.frame.columns) == list(COMPARISON_COLUMNS.values())


def _world(world: str, seed: int, **traits: float):
    judge = JudgeTraits(experts=EXPERTS, world=world, **traits)
    return simulate_world(judge, POOL, styles=list(STYLES), n_test_groups=20,
                          images_per_test_group=5, n_val_pairs=160, purity=0.9,
                          rng=np.random.default_rng(seed))


DESIGN = Design(n_prompts=[10], n_val=[0], train_seeds=range(2), sampling_seeds=range(3))


@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_a_judge_with_no_bias_gives_no_difference(noise):
    """Every instruction calibrated, no position or brightness bias. Without opinion
    noise every ensemble predicts the same: D = 0, p = 1. With the default's noise the
    instructions differ only by noise, and nothing is significant."""
    world = _world(landscape_key(0, "unbiased"), 0, miscalibrated=0.0, position_bias=0.0,
                   brightness_bias=0.0, noise=noise)
    runs = cell_predictions(world.split, DESIGN, 10, 40, 4)
    for base in ("AVG", "BPE"):
        found = compare_brier(runs["MMB"], runs[base], world.split.y_test,
                              world.test_groups)
        assert found["low"] <= 0 <= found["high"] and found["p_value"] >= 0.05
        if noise == 0:
            assert found["p_value"] == 1.0
            assert max(map(abs, (found["difference"], found["low"], found["high"]))) < 1e-12


def test_no_nuisance_world_nothing_without_validation_data_and_recovery_grows():
    """A world the default does not use (no position or brightness bias): with no
    validation pairs MMB is AVG (nothing to find); with the most the candidates allow, MMB
    recovers planted best instructions more often than with 1 pair per cluster."""
    world = _world(landscape_key(3, "clean"), 3, position_bias=0.0, brightness_bias=0.0)
    runs = cell_predictions(world.split, DESIGN, 10, 0, 4)
    found = compare_brier(runs["MMB"], runs["AVG"], world.split.y_test, world.test_groups)
    assert found["p_value"] == 1.0 and abs(found["difference"]) < 1e-12
    R = world.split.R_pool[(4, 0)]
    grid = per_cluster_grid(len(world.split.y_pool), 4)
    assert grid[0] == 0 and grid[-1] == 40
    share = [recovery(world.split, R, n * 4, world.planted, train_seeds=range(3))
             for n in (1, grid[-1])]
    assert share[1] > share[0]
