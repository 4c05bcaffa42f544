"""MMB's metrics, significance procedure and factorial experiment (seed 002 §5-6)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.mmb import random_split
from sklearn import metrics as skm
from statsmodels.stats.multitest import multipletests

from judgebias.studies.mmb.bpe_reference import ReferenceBayesianPromptEnsemble
from judgebias.studies.mmb.estimator import BayesianPromptEnsemble, MultimodalBayesianEnsemble
from judgebias.studies.mmb.measures.bands import crossed_bootstrap_band
from judgebias.studies.mmb.measures.factorial import (
    REFERENCE_METHODS,
    Design,
    prompt_order,
    run_factorial,
    run_nopref,
    validation_order,
)
from judgebias.studies.mmb.measures.metrics import (
    BLOCK_ROWS,
    batch_metrics,
    error_coverage,
    mean_confidence,
)
from judgebias.studies.mmb.measures.significance import compare_to_best, sign_flip_pvalue


@pytest.mark.parametrize("decimals", [1, 2, 6])
def test_metrics_equal_scikit_learn(decimals):
    rng = np.random.default_rng(decimals)
    y = rng.integers(0, 2, 60)
    p = np.round(rng.random((5, 60)), decimals)  # 1 decimal: many ties
    got = batch_metrics(p, y)
    for i, row in enumerate(p):
        yhat = (row >= 0.5).astype(int)
        expected = {
            "auc_pr": skm.average_precision_score(y, row), "roc_auc": skm.roc_auc_score(y, row),
            "kappa": skm.cohen_kappa_score(y, yhat), "accuracy": skm.accuracy_score(y, yhat),
            "f1": skm.f1_score(y, yhat, zero_division=0),
            "brier": skm.brier_score_loss(y, row),
            "nll": skm.log_loss(y, np.clip(row, 1e-12, 1 - 1e-12)),
        }
        for name, value in expected.items():
            assert got[name][i] == pytest.approx(value, abs=1e-9), name


def test_ece_and_mce_hand_case():
    # confidences .95 .95 .85 | .65 .65 | .55 ; 15 bins of width 1/15
    p = np.array([0.95, 0.05, 0.85, 0.65, 0.35, 0.55])
    y = np.array([1, 1, 1, 0, 0, 1])
    # bin of .95 (14): conf .95 .95, right 1 of 2 -> |1 - 1.9| = .9
    # bin of .85 (12): .85, right -> .15 ; bin of .65 (9): .65 .65, right 1 -> |1 - 1.3| = .3
    # bin of .55 (8): .55, right -> .45
    got = batch_metrics(p, y)
    assert got["ece"][0] == pytest.approx((0.9 + 0.15 + 0.3 + 0.45) / 6)
    assert got["mce"][0] == pytest.approx(0.45)


def _reference_calibration(p, y, n_bins=15):
    confidence = np.maximum(p, 1 - p)
    correct = (p >= 0.5) == (y == 1)
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    gaps = [abs(correct[bins == b].sum() - confidence[bins == b].sum())
            for b in range(n_bins)]
    means = [g / (bins == b).sum() for b, g in enumerate(gaps) if (bins == b).any()]
    return sum(gaps) / len(p), max(means)


def test_calibration_from_the_score_order_equals_plain_binning():
    rng = np.random.default_rng(7)
    edges = np.concatenate([np.arange(16) / 15, 1 - np.arange(16) / 15])
    for decimals in (2, 8):
        p = np.round(rng.random((6, 200)), decimals)
        p[:, :20] = rng.choice(edges, size=(6, 20))  # values on the bin edges
        y = rng.integers(0, 2, 200)
        got = batch_metrics(p, y)
        for i, row in enumerate(p):
            ece, mce = _reference_calibration(row, y)
            assert got["ece"][i] == pytest.approx(ece, abs=1e-12)
            assert got["mce"][i] == pytest.approx(mce, abs=1e-12)


def test_error_coverage_and_confidence():
    p = np.array([[0.9, 0.2, 0.6, 0.45]])
    y = np.array([1, 1, 0, 0])  # right, wrong, wrong, right; confidence order 0, 1, 2, 3
    np.testing.assert_allclose(error_coverage(p, y, [0.25, 0.5, 0.75, 1.0]),
                               [[0.0, 0.5, 2 / 3, 0.5]])
    assert mean_confidence(p)[0] == pytest.approx((0.9 + 0.8 + 0.6 + 0.55) / 4)


def test_sign_flip_exact_hand_case():
    # differences 1, 2, 3, -1 (sum 5): of the 16 sign patterns, |sum| >= 5 for the
    # identity, flipping -1 (sum 7), flipping 1 and -1 (sum 5), and their 3 negations
    assert sign_flip_pvalue(np.array([1.0, 2, 3, -1]), 10_000,
                            np.random.default_rng(0)) == 6 / 16


def test_compare_to_best_bold_and_by():
    rng = np.random.default_rng(0)
    rows = []
    for unit in range(12):
        for method, value in (("good", 0.1), ("twin", 0.1), ("bad", 0.3)):
            rows.append({"cell": 1, "unit": unit, "method": method,
                         "ece": value + rng.normal(0, 0.01)})
    out = compare_to_best(pd.DataFrame(rows), metric="ece", higher_is_better=False,
                          cell=["cell"], method="method", unit=["unit"], n_resamples=2000)
    marks = out.set_index("method")
    assert marks.loc["good", "is_best"] and marks.loc["good", "bold"]
    assert marks.loc["twin", "bold"] and not marks.loc["bad", "bold"]
    tested = out["p_value"].notna()
    np.testing.assert_allclose(out.loc[tested, "p_adjusted"],
                               multipletests(out.loc[tested, "p_value"], method="fdr_by")[1])


def test_calibration_bins_by_hand():
    # confidences 0.61 (right), 0.68 (wrong), 0.95 (right). 10 bins: the first two share
    # [0.6, 0.7): |1/2 - 0.645| = 0.145, and |1 - 0.95| = 0.05, so ECE = (2 x 0.145 +
    # 0.05) / 3, MCE = 0.145. 15 bins split them at 2/3: gaps 0.39 and 0.68, ECE =
    # (0.39 + 0.68 + 0.05) / 3, MCE = 0.68 (the reference code's 10 vs the spec's 15).
    p, y = np.array([0.61, 0.32, 0.95]), np.array([1, 1, 1])
    ten, fifteen = batch_metrics(p, y, n_bins=10), batch_metrics(p, y, n_bins=15)
    assert ten["ece"][0] == pytest.approx((2 * 0.145 + 0.05) / 3)
    assert ten["mce"][0] == pytest.approx(0.145)
    assert fifteen["ece"][0] == pytest.approx((0.39 + 0.68 + 0.05) / 3)
    assert fifteen["mce"][0] == pytest.approx(0.68)


def test_bootstrap_band_narrows_with_more_runs():
    rng = np.random.default_rng(0)
    few, many = rng.normal(size=(5, 3)), rng.normal(size=(200, 3))
    widths = []
    for values in (few, many):
        mean, low, high = crossed_bootstrap_band(values[None], n_boot=500)
        assert np.all(low <= mean) and np.all(mean <= high)
        widths.append((high - low).mean())
    assert widths[1] < widths[0]


@pytest.mark.parametrize("entropy", ["per_group", "per_sample"])
def test_factorial_equals_the_estimators_one_at_a_time(entropy):
    rng = np.random.default_rng(4)
    split = random_split(rng)
    design = Design(n_prompts=[2, 4], n_val=[0, 5, 12], train_seeds=[0, 1],
                    sampling_seeds=[0, 1, 2], entropy=entropy, coverages=[0.5, 1.0],
                    calibration_bins=10, bpe_reference=("printed", "corrected"))
    frame = run_factorial(split, design)
    assert len(frame) == 2 * 3 * 2 * 3 * (6 + 2 * 2)
    assert frame["error_coverage"].notna().all()  # curves for every prompt count (Fig. 5)
    variants = {label: variant for variant, label in REFERENCE_METHODS.items()}
    for row in frame.groupby("method").sample(8, random_state=0).itertuples():
        cols = prompt_order(row.sampling_seed, 6)[:row.n_prompts]
        val = validation_order(row.train_seed, len(split.y_pool))[:row.n_val]
        X_val, y_val = split.P_pool[np.ix_(val, cols)], split.y_pool[val]
        X_test = split.P_test[:, cols]
        if row.method == "MMB":
            key = (row.k, row.cluster_seed)
            model = MultimodalBayesianEnsemble(entropy=entropy).fit(
                X_val, y_val, responsibilities=split.R_pool[key][val])
            p = model.predict_proba(X_test, responsibilities=split.R_test[key])[:, 1]
        elif row.method == "BPE":
            p = BayesianPromptEnsemble().fit(X_val, y_val).predict_proba(X_test)[:, 1]
        elif row.method in variants:
            p = ReferenceBayesianPromptEnsemble(regulariser=variants[row.method]).fit(
                X_val, y_val).predict_proba(X_test)[:, 1]
        elif row.method == "AVG":
            p = X_test.mean(axis=1)
        elif row.method == "STD":
            p = X_test[:, 0]
        else:
            continue
        expected = batch_metrics(p, split.y_test, n_bins=10)
        iterative = 1e-6 if row.method in variants else 1e-9  # the reference's solver
        for name in ("ece", "mce", "nll", "auc_pr", "roc_auc"):
            assert getattr(row, name) == pytest.approx(expected[name][0], abs=iterative)
    std = frame[frame["method"] == "STD"].groupby("sampling_seed")["nll"].first()
    assert std.nunique() > 1
    avg = frame[frame["method"] == "AVG"].groupby(["n_prompts", "sampling_seed"])["ece"]
    assert (avg.nunique() == 1).all()  # AVG ignores the validation data


def test_nopref_pools_confidence_over_folds():
    rng = np.random.default_rng(5)
    folds = {f: random_split(rng, n_test=10 + f, n_pool=20, ks=(2,)) for f in range(3)}
    design = Design(n_prompts=[3], n_val=[5], train_seeds=[0], sampling_seeds=[0])
    frame = run_nopref(folds, design)
    avg = frame[frame["method"] == "AVG"]["confidence"].iloc[0]
    pooled = np.concatenate([mean_confidence(s.P_test[:, prompt_order(0, 6)[:3]]
                                             .mean(axis=1)) * len(s.y_test)
                             for s in folds.values()]).sum() / sum(10 + f for f in range(3))
    assert avg == pytest.approx(pooled)


@pytest.mark.parametrize("decimals", [2, 12])
def test_blocks_and_integer_keys_give_the_plain_sorts_bits(decimals):
    """batch_metrics works in blocks and sorts integer keys (metrics.py): every row's
    numbers must be those of the row alone, and the error-coverage curve that of a stable
    sort by confidence, to the bit (ties included)."""
    rng = np.random.default_rng(decimals)
    y = rng.integers(0, 2, 300)
    p = np.round(rng.random((BLOCK_ROWS + 7, 300)), decimals)
    p[3, :40] = 1 - p[3, 40:80]  # equal confidences from p and 1 - p
    coverages = np.linspace(0.05, 1, 20)
    together = batch_metrics(p, y, coverages=coverages)
    for i in (0, 3, BLOCK_ROWS - 1, BLOCK_ROWS, len(p) - 1):
        alone = batch_metrics(p[i], y, coverages=coverages)
        for name, values in alone.items():
            assert np.array_equal(together[name][i], values[0], equal_nan=True), name
    order = np.argsort(-np.maximum(p, 1 - p), axis=1, kind="stable")
    correct = np.take_along_axis((p >= 0.5) == (y == 1), order, axis=1)
    kept = np.ceil(coverages * 300 - 1e-9).astype(int)
    assert np.array_equal(together["error_coverage"],
                          1 - np.cumsum(correct, axis=1)[:, kept - 1] / kept)
