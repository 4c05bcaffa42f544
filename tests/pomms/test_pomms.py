"""Tests for Pomms (seed 000 §4.2; §6.3 Tables 1 and 2; Appendix B.3 / Fig. D)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from helpers.scores import long_table
from sklearn.base import clone
from sklearn.linear_model import ElasticNet
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import (
    check_dataframe_column_names_consistency,
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_param_validation,
    check_parameters_default_constructible,
    check_set_params,
    parametrize_with_checks,
)

from judgebias.stats.agreement import kendall
from judgebias.studies.philautia.measures import (
    phi_matrix,
    phi_tilde,
    philautia_scores,
    score_tensor,
)
from judgebias.studies.pomms.estimator import Pomms, validation_split
from judgebias.studies.pomms.measures import (
    Table2,
    caption_features,
    ensemble_caption_scores,
    ensemble_philautia,
    extremes,
    most_extreme,
    plain_phi_tilde,
    pomms_phi_tilde,
    table1,
    table2,
)


def q(values: np.ndarray) -> np.ndarray:
    """Clip to [0, 1] and round to the judge grid (0-100 normalised to [0, 1])."""
    return np.round(np.clip(values, 0.0, 1.0) * 100) / 100


def constructed(seed: int = 1, n: int = 3000) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """y = signal + tiny noise; A = signal + small noise, B = signal + larger noise,
    C = pure noise, D = -signal + noise (informative only with a negative coefficient).
    Splits: 2000 train, 500 validation, 500 test."""
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    X = pd.DataFrame(
        {
            "C": q(rng.random(n)),
            "B": q(s + 0.2 * rng.standard_normal(n)),
            "A": q(s + 0.1 * rng.standard_normal(n)),
            "D": q(1 - s + 0.15 * rng.standard_normal(n)),
        }
    )
    y = s + 0.02 * rng.standard_normal(n)
    split = np.array(["train"] * 2000 + ["val"] * 500 + ["test"] * 500)
    return X, y, split


@pytest.fixture(scope="module")
def fitted() -> tuple[Pomms, pd.DataFrame, np.ndarray, np.ndarray]:
    X, y, split = constructed()
    fit = split != "test"
    model = Pomms(cv=validation_split(split[fit] == "val")).fit(X[fit], y[fit])
    return model, X, y, split


def test_selection_order_on_constructed_problem(fitted) -> None:
    model, X, y, split = fitted
    assert model.selection_order_[0] == "A"  # the least noisy evaluator first
    assert model.selection_order_ == ["A", "D", "B", "C"]  # pure noise never before signal
    assert list(model.feature_names_in_) == ["C", "B", "A", "D"]
    steps = model.steps_
    assert list(steps.columns) == [
        "step",
        "added",
        "members",
        "validation_tau_b",
        "validation_tau_c",
        "n_validation",
        "philautia",
        "selected",
    ]
    assert steps["added"].tolist() == model.selection_order_
    assert steps["members"].tolist() == ["A", "A,D", "A,D,B", "A,D,B,C"]
    # Each informative member improves the validation tau; C adds nothing.
    tau = steps["validation_tau_b"].to_numpy()
    assert tau[0] < tau[1] < tau[2]
    assert tau[3] <= tau[2]
    # Best validation tau, ties to fewer members.
    assert model.n_members_ == 3
    assert model.members_ == ["A", "D", "B"]
    assert steps["selected"].tolist() == [False, False, True, False]
    assert model.coef_.shape == (3,)
    assert model.coef_[1] < 0 < model.coef_[0]  # D enters with a negative weight
    assert model.n_train_ == 2000 and model.n_validation_ == 500 and model.n_dropped_ == 0
    # Held-out (test) rows: the ensemble's predictions track y, better than A alone.
    test = split == "test"
    pred = model.predict(X[test])
    assert kendall(pred, y[test])["tau_b"] > 0.8
    assert model.score(X[test], y[test]) > kendall(X.loc[test, "A"], y[test])["tau_b"]


def test_each_greedy_step_is_the_best_candidate(fitted) -> None:
    """The SFS choice equals an explicit search with the same estimator and scorer."""
    model, X, y, split = fitted
    values, train, val = X.to_numpy(), split == "train", split == "val"
    chosen: list[int] = []
    names = list(X.columns)
    for added in model.selection_order_[:-1]:
        scores = {}
        for cand in [i for i in range(len(names)) if i not in chosen]:
            cols = [*chosen, cand]
            est = ElasticNet(alpha=1e-3, l1_ratio=0.5, random_state=0)
            est.fit(values[train][:, cols], y[train])
            scores[names[cand]] = kendall(est.predict(values[val][:, cols]), y[val])["tau_b"]
        # C alone is shrunk to a constant prediction: tau undefined (NaN), never chosen.
        assert scores[added] == np.nanmax(list(scores.values()))
        chosen.append(names.index(added))


def test_step_estimators_match_steps(fitted) -> None:
    model, X, y, split = fitted
    val = split == "val"
    steps = model.step_estimators()
    assert [members for members, _ in steps] == [model.selection_order_[:k] for k in range(1, 5)]
    for k, (members, est) in enumerate(steps, start=1):
        pred = model.predict_step(X[val], k)
        np.testing.assert_allclose(pred, est.predict(X.loc[val, members].to_numpy()))
        expected = model.steps_.loc[k - 1, "validation_tau_b"]
        assert kendall(pred, y[val])["tau_b"] == pytest.approx(expected)
    assert model.estimator_ is model.step_estimators_[model.n_members_ - 1]
    # Final estimator was trained on the training rows only.
    train = split == "train"
    ref = ElasticNet(alpha=1e-3, l1_ratio=0.5, random_state=0)
    ref.fit(X.loc[train, model.members_].to_numpy(), y[train])
    np.testing.assert_allclose(model.coef_, ref.coef_)
    assert model.intercept_ == pytest.approx(ref.intercept_)


def test_positive_weights_keep_anticorrelated_judge_out() -> None:
    X, y, split = constructed()
    fit = split != "test"
    model = Pomms(positive=True, cv=validation_split(split[fit] == "val")).fit(X[fit], y[fit])
    assert model.selection_order_[:2] == ["A", "B"]
    assert model.members_ == ["A", "B"]
    for members, est in model.step_estimators():
        assert (est.coef_ >= 0).all()
        for name in ("C", "D"):
            if name in members:
                assert est.coef_[members.index(name)] == 0.0


def test_ties_go_to_fewer_members() -> None:
    """A duplicate of A changes no ranking: equal validation tau -> one member."""
    X, y, split = constructed()
    fit = split != "test"
    dup = pd.DataFrame({"A": X["A"], "A_copy": X["A"]})
    model = Pomms(cv=validation_split(split[fit] == "val")).fit(dup[fit], y[fit])
    tau = model.steps_["validation_tau_b"]
    assert tau[0] == tau[1]
    assert model.n_members_ == 1 and model.members_ == ["A"]


def test_max_features_and_scoring_tau_c() -> None:
    X, y, split = constructed()
    fit = split != "test"
    model = Pomms(max_features=2, scoring="tau_c", cv=validation_split(split[fit] == "val")).fit(
        X[fit], y[fit]
    )
    assert model.selection_order_ == ["A", "D"]
    assert len(model.steps_) == 2 and model.n_members_ == 2
    assert model.score(X[fit], y[fit]) == pytest.approx(
        kendall(model.predict(X[fit]), y[fit])["tau_c"]
    )


def test_nan_rows_dropped_in_fit_and_predicted_nan() -> None:
    X, y, split = constructed()
    X = X.copy()
    y = y.copy()
    X.loc[[0, 1, 2], "C"] = np.nan
    y[5] = np.nan
    fit = split != "test"
    model = Pomms(cv=validation_split(split[fit] == "val")).fit(X[fit], y[fit])
    assert model.n_dropped_ == 4 and model.n_train_ == 1996
    rows = X.iloc[:4].copy()
    rows.loc[3, "A"] = np.nan
    pred = model.predict(rows)
    assert not np.isnan(pred[:3]).any()  # C is not a member: its NaN does not matter
    assert np.isnan(pred[3])  # a member's score is missing: not imputed
    # Arrays in feature_names_in_ order work too.
    np.testing.assert_allclose(model.predict(rows.to_numpy()), pred, equal_nan=True)


def test_fit_input_errors() -> None:
    X, y, split = constructed(n=3000)
    val = split == "val"
    with pytest.raises(TypeError, match="boolean"):
        validation_split(val.astype(int))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        Pomms(cv=validation_split(val)).fit(X, y[:-1])
    with pytest.raises(InvalidParameterError, match="scoring"):
        Pomms(scoring="pearson").fit(X, y)
    with pytest.raises(InvalidParameterError, match="select"):
        Pomms(select="smallest").fit(X, y)
    with pytest.raises(InvalidParameterError, match="max_features"):
        Pomms(max_features=0).fit(X, y)
    with pytest.raises(ValueError, match="validation rows"):
        Pomms(cv=validation_split(np.zeros(len(y), dtype=bool))).fit(X, y)
    with pytest.raises(ValueError, match="caption_scores"):
        Pomms(select="min_philautia").fit(X, y)


def test_arrays_and_several_folds() -> None:
    """Plain arrays get names x0.. ; an int cv is K-fold, its taus are fold means and
    the step estimators are refitted on every row."""
    X, y, _ = constructed(n=600)
    model = Pomms(cv=3).fit(X.to_numpy(), y)
    assert not hasattr(model, "feature_names_in_")
    assert model.selection_order_[0] == "x2"  # column A
    assert model.n_splits_ == 3 and model.n_train_ == 600 and model.n_validation_ == 600
    ref = ElasticNet(alpha=1e-3, l1_ratio=0.5, random_state=0)
    cols = [int(m[1:]) for m in model.members_]
    ref.fit(X.to_numpy()[:, cols], y)
    np.testing.assert_allclose(model.coef_, ref.coef_)
    with pytest.raises(ValueError, match="X has 3 features, but Pomms is expecting 4"):
        model.predict(X.to_numpy()[:, :3])


def test_sklearn_parameter_conventions() -> None:
    est = Pomms(max_features=3, alpha=0.01, l1_ratio=0.2, positive=True, scoring="tau_c")
    check_no_attributes_set_in_init("Pomms", est)
    check_parameters_default_constructible("Pomms", Pomms())
    check_get_params_invariance("Pomms", est)
    check_set_params("Pomms", est)
    cloned = clone(est)
    assert cloned.get_params() == est.get_params()
    assert Pomms(**est.get_params()).get_params() == est.get_params()
    assert not hasattr(cloned, "members_")


# --------------------------------------------------------------------------------------
# Phi-tilde with Pomms (Table 2 / Fig. D)
# --------------------------------------------------------------------------------------

MODELS = ["m0", "m1", "m2", "m3", "m4"]





def planted_tensor(n: int = 300, seed: int = 0) -> np.ndarray:
    """S[k, i, j]: caption quality by generator, judge harshness, a self-bias per judge."""
    rng = np.random.default_rng(seed)
    m = len(MODELS)
    quality = np.array([0.05, -0.03, 0.0, 0.02, -0.05])
    harsh = np.array([0.0, -0.1, 0.05, 0.1, -0.05])
    bias = np.array([0.08, 0.1, 0.12, 0.09, 0.15])
    base = rng.random((n, 1, 1)) * 0.3 + 0.35  # image difficulty, shared
    tensor = (
        base
        + quality[None, :, None]
        + harsh[None, None, :]
        + np.eye(m)[None] * bias[None, None, :]
        + 0.05 * rng.standard_normal((n, m, m))
    )
    return np.clip(tensor, 0.0, 1.0)


def test_pomms_column_of_the_average_judge_is_less_extreme() -> None:
    tensor = planted_tensor()
    scores = long_table(tensor, MODELS)
    features = caption_features(scores, MODELS)
    ensemble = features[["image_id", "generator"]].assign(score=features[MODELS].mean(axis=1))
    with_pomms = pomms_phi_tilde(scores, MODELS, ensemble)
    assert with_pomms.shape == (5, 6)
    assert list(with_pomms.columns) == [*MODELS, "Pomms"]
    assert list(with_pomms.index) == MODELS
    # Same as standardising Phi with the ensemble's mean column appended by hand.
    phi = phi_matrix(score_tensor(scores, MODELS)[1]).phi
    by_hand = phi_tilde(np.column_stack([phi, tensor.mean(axis=2).mean(axis=0)]))
    np.testing.assert_allclose(with_pomms.to_numpy(), by_hand, atol=1e-12)
    # Every judge's planted self-bias is its most extreme entry; the average judge's
    # most extreme entry is smaller in magnitude than every judge's (seed 000 Table 2).
    ext = extremes(with_pomms)
    plain = plain_phi_tilde(scores, MODELS)
    plain_ext = extremes(plain)
    assert list(plain_ext["generator"]) == MODELS
    pomms_extreme = most_extreme(with_pomms)
    assert pomms_extreme == ext.loc["Pomms", "abs"]
    assert (pomms_extreme < ext.loc[MODELS, "abs"]).all()
    assert (pomms_extreme < plain_ext["abs"]).all()
    assert pomms_extreme < np.abs(philautia_scores(plain.to_numpy())).min()


def test_single_member_ensemble_copies_its_column() -> None:
    """An increasing affine map of one judge: after column standardisation the Pomms
    column is that judge's column, so the two entries agree in every row."""
    scores = long_table(planted_tensor(), MODELS)
    features = caption_features(scores, MODELS)
    ensemble = features[["image_id", "generator"]].assign(score=0.2 + 3.0 * features["m2"])
    with_pomms = pomms_phi_tilde(scores, MODELS, ensemble)
    np.testing.assert_allclose(with_pomms["Pomms"], with_pomms["m2"], atol=1e-12)
    assert ensemble_philautia(with_pomms, ["m2"]) == pytest.approx(with_pomms.loc["m2", "m2"])


def test_pomms_column_excludes_nan_captions() -> None:
    scores = long_table(planted_tensor(n=50), MODELS)
    features = caption_features(scores, MODELS)
    ensemble = features[["image_id", "generator"]].assign(score=features[MODELS].mean(axis=1))
    nan_rows = ensemble.sample(20, random_state=0).index
    dropped = ensemble.drop(index=nan_rows)
    with_nan = ensemble.copy()
    with_nan.loc[nan_rows, "score"] = np.nan
    pd.testing.assert_frame_equal(
        pomms_phi_tilde(scores, MODELS, with_nan), pomms_phi_tilde(scores, MODELS, dropped)
    )
    with pytest.raises(ValueError, match="duplicate"):
        pomms_phi_tilde(scores, MODELS, pd.concat([ensemble, ensemble.iloc[:1]]))
    with pytest.raises(ValueError, match="not in models"):
        pomms_phi_tilde(scores, MODELS, ensemble.assign(generator="x"))
    with pytest.raises(ValueError, match="also a model name"):
        pomms_phi_tilde(scores, MODELS, ensemble, name="m0")


def test_ensemble_philautia_definition() -> None:
    phi_t = pd.DataFrame(
        {"a": [1.0, 0.0, -1.0], "b": [0.0, 1.0, -1.0], "Pomms": [0.4, -0.2, 0.9]},
        index=["a", "b", "c"],
    )
    assert ensemble_philautia(phi_t, ["b"]) == pytest.approx(-0.2)
    assert ensemble_philautia(phi_t, ["a", "b"]) == pytest.approx(0.1)
    # |weights|: (3 * 0.4 + 1 * -0.2) / 4
    assert ensemble_philautia(phi_t, ["a", "b"], [3.0, -1.0]) == pytest.approx(0.25)
    assert ensemble_philautia(phi_t, ["a", "b"], {"a": 3.0, "b": -1.0}) == pytest.approx(0.25)
    assert most_extreme(phi_t) == pytest.approx(0.9)
    assert extremes(phi_t).loc["Pomms", "generator"] == "c"
    with pytest.raises(ValueError, match="not generators"):
        ensemble_philautia(phi_t, ["z"])
    with pytest.raises(ValueError, match="one entry per member"):
        ensemble_philautia(phi_t, ["a", "b"], [1.0])


# --------------------------------------------------------------------------------------
# Tables 1 and 2
# --------------------------------------------------------------------------------------


def judgement_table(seed: int = 3) -> pd.DataFrame:
    """Rating-level table: Nebula-like train/validation/test and a Flickr-like test set,
    one score column per judge (the philautia models), noisier for some judges."""
    rng = np.random.default_rng(seed)
    noise = {"m0": 0.08, "m1": 0.3, "m2": 0.12, "m3": 0.5, "m4": 0.15}
    parts = []
    for dataset, sizes in (("nebula", (800, 300, 300)), ("flickr", (0, 0, 400))):
        for split, n in zip(("train", "val", "test"), sizes, strict=True):
            if not n:
                continue
            s = rng.random(n)
            frame = pd.DataFrame({"dataset": dataset, "split": split, "human_score": s})
            if dataset == "flickr":
                frame["human_score"] = np.ceil(s * 4).clip(1, 4)  # coarse 1-4 scale
            for m, sd in noise.items():
                frame[m] = q(s + sd * rng.standard_normal(n))
            parts.append(frame)
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def report_inputs() -> tuple[Pomms, pd.DataFrame, pd.DataFrame]:
    judgements = judgement_table()
    nebula = judgements[(judgements.dataset == "nebula") & (judgements.split != "test")]
    cv = validation_split((nebula["split"] == "val").to_numpy())
    model = Pomms(max_features=3, cv=cv).fit(nebula[MODELS], nebula["human_score"])
    return model, judgements, long_table(planted_tensor(n=100), MODELS)


def test_table1(report_inputs) -> None:
    model, judgements, scores = report_inputs
    table = table1(model, judgements, scores, MODELS)
    tau_cols = [
        f"{d}/{s}/{stat}"
        for d, s in (("nebula", "val"), ("nebula", "test"), ("flickr", "test"))
        for stat in ("tau_b", "tau_c", "n", "n_missing")
    ]
    assert list(table.columns) == [
        "kind",
        "label",
        "step",
        "added",
        "members",
        "n_members",
        "selected",
        *tau_cols,
        "phi_score",
        "phi_score_weighted",
        "most_extreme",
    ]
    assert table["kind"].tolist() == ["evaluator"] * 5 + ["pomms"] * 3
    assert table["label"].tolist() == [*MODELS, "Pomms (1)", "Pomms (2)", "Pomms (3)"]
    pomms_rows = table[table.kind == "pomms"]
    assert pomms_rows["added"].tolist() == model.selection_order_
    assert pomms_rows["selected"].sum() == 1
    assert pomms_rows.loc[pomms_rows.selected, "step"].item() == model.n_members_
    # Baselines: their own tau, their philautia score from the plain Phi-tilde.
    test = judgements[(judgements.dataset == "flickr") & (judgements.split == "test")]
    m3 = table.set_index("label").loc["m3"]
    assert m3["flickr/test/tau_c"] == pytest.approx(
        kendall(test["m3"], test["human_score"])["tau_c"]
    )
    assert m3["flickr/test/n"] == 400
    plain = plain_phi_tilde(scores, MODELS)
    np.testing.assert_allclose(
        table.loc[table.kind == "evaluator", "phi_score"], philautia_scores(plain.to_numpy())
    )
    # Step 1: one member with a positive weight, a rescaled judge: same tau, and its
    # Phi-score is the member's entry in Phi-tilde recomputed with the ensemble column.
    first = model.selection_order_[0]
    step1 = pomms_rows.iloc[0]
    assert model.step_estimators_[0].coef_[0] > 0
    by_label = table.set_index("label")
    for col in ("nebula/test/tau_b", "nebula/val/tau_c", "flickr/test/tau_c"):
        assert step1[col] == pytest.approx(by_label.loc[first, col])
    ens = ensemble_caption_scores(model, scores, MODELS, k=1)
    with_pomms = pomms_phi_tilde(scores, MODELS, ens)
    assert step1["phi_score"] == pytest.approx(with_pomms.loc[first, "Pomms"])
    assert step1["most_extreme"] == pytest.approx(most_extreme(with_pomms))
    # Training rows are not scored by default; splits=None scores every split.
    assert not any(c.startswith("nebula/train") for c in table.columns)
    everything = table1(model, judgements, scores, MODELS, splits=None)
    assert "nebula/train/tau_b" in everything.columns
    with pytest.raises(ValueError, match="no rows in the splits"):
        table1(model, judgements, scores, MODELS, splits=["validation"])


def test_table2(report_inputs) -> None:
    model, _, scores = report_inputs
    result = table2(model, scores, MODELS)
    table = result.table
    assert list(table.columns) == [
        "generator",
        "member",
        "self",
        "pomms",
        "abs_pomms_below_self",
        "evaluator_most_extreme",
    ]
    plain = plain_phi_tilde(scores, MODELS)
    np.testing.assert_allclose(table["self"], philautia_scores(plain.to_numpy()))
    ens = ensemble_caption_scores(model, scores, MODELS)
    with_pomms = pomms_phi_tilde(scores, MODELS, ens)
    np.testing.assert_allclose(table["pomms"], with_pomms["Pomms"])
    assert table["member"].tolist() == [m in model.members_ for m in MODELS]
    assert result.k == model.n_members_ and result.members == model.members_
    assert result.select == "best_validation"
    assert result.pomms_most_extreme == pytest.approx(np.abs(table["pomms"]).max())
    assert result.min_evaluator_most_extreme == pytest.approx(
        table["evaluator_most_extreme"].min()
    )
    assert result.ensemble_philautia == pytest.approx(
        ensemble_philautia(with_pomms, model.members_)
    )
    # The planted self-bias is larger than anything the ensemble gives.
    assert result.pomms_less_extreme
    assert table["abs_pomms_below_self"].all()
    summary = result.summary()
    assert json.loads(json.dumps(summary)) == summary  # plain JSON values
    assert summary["members"] == model.members_
    # Another step on request.
    other = table2(model, scores, MODELS, k=1)
    assert other.members == model.selection_order_[:1] and other.select == "given"


def test_ensemble_members_must_be_philautia_judges(report_inputs) -> None:
    model, _, scores = report_inputs
    renamed = scores.replace({"m0": "x0", "m1": "x1", "m2": "x2", "m3": "x3", "m4": "x4"})
    with pytest.raises(ValueError, match="not evaluators"):
        ensemble_caption_scores(model, renamed, ["x0", "x1", "x2", "x3", "x4"])


# --------------------------------------------------------------------------------------
# Selection rule (seed 000 §6.3: Table 2 uses Pomms (iv), the smallest |philautia|)
# --------------------------------------------------------------------------------------


def test_select_rule_on_the_papers_table1() -> None:
    """Seed 000 Table 1's Pomms rows (i)-(vi) have 2..7 members; step 1 (one judge, not
    printed there) is made up here with a near-zero score. min_philautia with
    min_members=2 picks (iv): |0.15| < |-0.19| of (iii), as §6.3 says; best_validation
    takes the first of the tied best tau (v). The tau column is the printed Nebula test
    tau_b, standing in for a validation tau."""
    steps = pd.DataFrame(
        {
            "step": [1, 2, 3, 4, 5, 6, 7],
            "validation_tau_b": [55.0, 56.4, 56.6, 56.6, 56.4, 57.0, 57.0],
            "philautia": [0.02, 1.31, 0.45, -0.19, 0.15, 0.52, 0.42],
        }
    )
    assert Pomms(select="min_philautia", min_members=2)._select(steps) == 4  # (iv)
    assert Pomms(select="best_validation", min_members=2)._select(steps) == 5  # (v)
    # without the floor the lone judge with no self-preference would win
    assert Pomms(select="min_philautia")._select(steps) == 0
    nan = steps.assign(philautia=[np.nan, np.nan, 0.45, -0.19, 0.15, 0.52, 0.42])
    assert Pomms(select="min_philautia")._select(nan) == 4  # NaN never wins


def test_select_best_validation_vs_min_philautia(report_inputs) -> None:
    """Same data, same greedy order; the two rules choose different steps, and each is
    what its criterion says when recomputed by hand."""
    _, judgements, scores = report_inputs
    nebula = judgements[(judgements.dataset == "nebula") & (judgements.split != "test")]
    cv = validation_split((nebula["split"] == "val").to_numpy())
    X, y = nebula[MODELS], nebula["human_score"]
    best = Pomms(cv=cv).fit(X, y, caption_scores=scores)
    least = Pomms(cv=cv, select="min_philautia").fit(X, y, caption_scores=scores)
    assert best.selection_order_ == least.selection_order_
    pd.testing.assert_frame_equal(best.steps_.drop(columns="selected"),
                                  least.steps_.drop(columns="selected"))
    steps = best.steps_
    # each step's philautia score: Phi-tilde with that step's ensemble as a column
    for k in range(1, len(steps) + 1):
        ens = ensemble_caption_scores(best, scores, MODELS, k=k)
        by_hand = ensemble_philautia(
            pomms_phi_tilde(scores, MODELS, ens), best.selection_order_[:k]
        )
        assert steps.loc[k - 1, "philautia"] == pytest.approx(by_hand)
    tau = steps["validation_tau_b"].to_numpy()
    phi_abs = np.abs(steps["philautia"].to_numpy())
    assert best.n_members_ == int(np.argmax(tau)) + 1
    assert least.n_members_ == int(np.argmin(phi_abs)) + 1
    # The planted panel makes them differ: the best-tau ensemble is not the least biased.
    assert best.n_members_ != least.n_members_
    assert least.steps_["selected"].tolist() == [
        k == least.n_members_ for k in steps["step"]
    ]
    assert table2(least, scores, MODELS).select == "min_philautia"
    # min_members: the same rule over steps >= 2 only
    floor = Pomms(cv=cv, select="min_philautia", min_members=2).fit(
        X, y, caption_scores=scores
    )
    assert floor.n_members_ == int(np.argmin(phi_abs[1:])) + 2
    with pytest.raises(ValueError, match="min_members=4 exceeds the 3 selection steps"):
        Pomms(cv=cv, max_features=3, min_members=4).fit(X, y)
    # without caption_scores the philautia column is NaN and best_validation still works
    assert Pomms(cv=cv).fit(X, y).steps_["philautia"].isna().all()


# --------------------------------------------------------------------------------------
# scikit-learn's estimator checks
# --------------------------------------------------------------------------------------

# Every check parametrize_with_checks yields for a regressor passes (all 51, array-API
# input skipped without SCIPY_ARRAY_API), so nothing is listed as expected to fail. Two
# checks it does not yield are run below: parameter validation (passes) and DataFrame
# column-name consistency, which fails by design (see its test).
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


@pytest.mark.slow  # ~50 sklearn checks, each fitting the ensemble: 20-30 s of make
# test-fast's 2 minutes; make test runs them
@parametrize_with_checks(
    [Pomms(max_features=3)], expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS
)
def test_sklearn_estimator_checks(estimator, check) -> None:
    check(estimator)


def test_sklearn_param_validation() -> None:
    check_param_validation("Pomms", Pomms(max_features=2))


@pytest.mark.xfail(
    strict=True,
    reason="predict selects the member columns by name from a wider table (table1 passes "
    "the whole ratings table, ensemble_caption_scores the caption table), so other or "
    "extra column names are accepted on purpose",
)
def test_sklearn_dataframe_column_names() -> None:
    check_dataframe_column_names_consistency("Pomms", Pomms(max_features=2))


def test_docstring_example() -> None:
    import doctest

    from judgebias.studies.pomms import estimator as module

    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(module.Pomms, "Pomms", globs=vars(module)):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


# --------------------------------------------------------------------------------------
# A world the default does not use, with no self-preference to reduce
# --------------------------------------------------------------------------------------

NULL_JUDGES = ["a1", "a2", "a3", "b1", "b2"]


def exchangeable_world(seed: int, n_images: int = 60, n_ratings: int = 200
                       ) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """Philautia scores and human ratings of five exchangeable judges (same noise, no
    self-preference): (long score table, judge scores of the rated items, human score).
    The caption scores carry skewed (centred gamma) noise; the ratings are on the judge
    grid (`q`)."""
    rng = np.random.default_rng(seed)
    m = len(NULL_JUDGES)
    quality = 0.55 + 0.1 * rng.standard_normal((n_images, m, 1))
    noise = 0.06 * (rng.gamma(2.0, 1.0, (n_images, m, m)) - 2.0) / np.sqrt(2.0)
    human = rng.random(n_ratings)
    judges = pd.DataFrame({j: q(human + 0.2 * rng.standard_normal(n_ratings))
                           for j in NULL_JUDGES})
    return long_table(q(quality + noise), NULL_JUDGES), judges, human


@pytest.fixture(scope="module")
def null_fits() -> list[tuple[Pomms, Table2]]:
    """Pomms (seed 000 Table 2's rule: min_philautia, at least 2 members) on 12
    exchangeable worlds."""
    fits = []
    for seed in range(12):
        scores, judges, human = exchangeable_world(200 + seed)
        cv = validation_split(np.arange(len(human)) >= 140)
        pomms = Pomms(cv=cv, max_features=3, select="min_philautia", min_members=2).fit(
            judges, human, caption_scores=scores)
        fits.append((pomms, table2(pomms, scores, NULL_JUDGES)))
    return fits


def test_pomms_finds_no_philautia_where_no_judge_has_any(null_fits) -> None:
    """No default tuned to a claim (issue 20 item 12): with no self-preference the
    ensemble's philautia score (Table 1's Phi-score) is centred on 0 across data sets
    (one-sample t-test), and SFS's first pick is not one favoured judge (chi-square
    against uniform over the exchangeable judges)."""
    from scipy import stats

    ensemble = [t2.ensemble_philautia for _, t2 in null_fits]
    assert stats.ttest_1samp(ensemble, 0.0).pvalue > 0.01, ensemble
    first = pd.Series([p.selection_order_[0] for p, _ in null_fits])
    counts = first.value_counts().reindex(NULL_JUDGES, fill_value=0)
    assert stats.chisquare(counts).pvalue > 0.01, counts.to_dict()


def test_less_extreme_reading_holds_where_there_is_nothing_to_reduce(null_fits) -> None:
    """Seed 000 Table 2 reads Pomms' column as "less extreme than every evaluator's most
    extreme score" (`Table2.pomms_less_extreme`) and its philautia below the judges'
    (|ensemble| < min |Phi~_i(i)|). Neither has a test or an interval, and with no
    self-preference anywhere both still hold in most data sets: the ensemble column
    averages its members' noise and min_philautia picks the smallest |score| among the
    steps. So these readings are no evidence that Pomms reduces self-preference; this
    test pins that, so a change that gives them a null reference has to update it."""
    less = np.mean([t2.pomms_less_extreme for _, t2 in null_fits])
    below = np.mean([abs(t2.ensemble_philautia) < t2.min_abs_self for _, t2 in null_fits])
    assert less >= 0.5 and below >= 0.5, (less, below)
