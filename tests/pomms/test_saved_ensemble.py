"""The fitted Pomms ensemble as an artifact (results/pomms/ensemble.json): saved as JSON
(judgebias.io.saved), loaded by `judgebias.load` in a fresh interpreter with the same
predictions to the last bit, every step's meta-learner included; a tampered file is
refused with its name; and the pipeline's `pomms` rule writes it, with its model card,
predicting what the fit step itself predicted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.project import BIN, make_project, run, study_params
from sklearn.base import clone
from sklearn.model_selection import KFold

import judgebias
from judgebias.io.saved import SavedFileError, save
from judgebias.studies.pomms.estimator import Pomms, validation_split

FRESH = """\
import sys
import numpy as np, pandas as pd
import judgebias
model = judgebias.load(sys.argv[1])
X = pd.read_parquet(sys.argv[2])
out = {"frame": model.predict(X), "array": model.predict(X[list(model.feature_names_in_)]
                                                      .to_numpy())}
for k in range(1, len(model.step_estimators_) + 1):
    out[f"step{k}"] = model.predict_step(X, k)
np.savez(sys.argv[3], **out)
"""


def _data(n: int = 300, seed: int = 3) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    X = pd.DataFrame({"judge-a": s + 0.1 * rng.standard_normal(n),
                      "judge-b": rng.random(n),
                      "judge-c": s + 0.25 * rng.standard_normal(n),
                      "judge-d": 1 - s + 0.2 * rng.standard_normal(n)})
    X.iloc[5, 0] = np.nan  # a failed answer: dropped in fit, predicted NaN
    return X, s + 0.02 * rng.standard_normal(n), np.arange(n) >= 220


@pytest.fixture(scope="module")
def fitted() -> tuple[Pomms, pd.DataFrame]:
    X, y, val = _data()
    return Pomms(cv=validation_split(val), max_features=3, min_members=2).fit(X, y), X


def test_a_fresh_interpreter_predicts_the_same_bits(fitted, tmp_path: Path) -> None:
    model, X = fitted
    path = save(model, tmp_path / "ensemble.json", card={"members": model.members_})
    rng = np.random.default_rng(9)  # new rows, with a NaN in a member column
    fresh = pd.DataFrame(rng.random((50, 4)), columns=X.columns)
    fresh.iloc[3, fresh.columns.get_loc(model.members_[0])] = np.nan
    rows = pd.concat([X, fresh], ignore_index=True)
    rows.to_parquet(tmp_path / "X.parquet")
    subprocess.run([sys.executable, "-c", FRESH, str(path), str(tmp_path / "X.parquet"),
                    str(tmp_path / "out.npz")], check=True, capture_output=True, text=True)
    got = np.load(tmp_path / "out.npz")
    expected = {"frame": model.predict(rows), "array": model.predict(rows.to_numpy())}
    expected.update({f"step{k}": model.predict_step(rows, k)
                     for k in range(1, len(model.step_estimators_) + 1)})
    assert sorted(got.files) == sorted(expected)
    for name, values in expected.items():
        assert values.tobytes() == got[name].tobytes(), name  # 0 ulp, NaN where NaN
    assert np.isnan(expected["frame"][5]) and np.isnan(expected["frame"][len(X) + 3])


def test_the_loaded_ensemble_is_the_fitted_one(fitted, tmp_path: Path) -> None:
    model, X = fitted
    loaded = judgebias.load(save(model, tmp_path / "ensemble.json"))
    assert type(loaded) is Pomms
    for name in ("members_", "selection_order_", "n_members_", "n_features_in_",
                 "n_splits_", "n_dropped_", "n_train_", "n_validation_", "intercept_"):
        assert getattr(loaded, name) == getattr(model, name), name
    assert list(loaded.feature_names_in_) == list(model.feature_names_in_)
    assert loaded.coef_.tobytes() == model.coef_.tobytes()
    pd.testing.assert_frame_equal(loaded.steps_, model.steps_)
    params, original = loaded.get_params(), model.get_params()
    assert (params.pop("cv").test_fold == original.pop("cv").test_fold).all()
    assert params == original
    refit = clone(loaded).fit(X, _data()[1])  # the saved params fit the same ensemble
    assert refit.predict(X).tobytes() == model.predict(X).tobytes()
    assert loaded.score(X.iloc[220:], _data()[1][220:]) == model.score(X.iloc[220:],
                                                                       _data()[1][220:])


def _tampered(fitted, tmp_path: Path, edit) -> Path:
    path = save(fitted[0], tmp_path / "ensemble.json")
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    return path


def _fitted_state(d):
    return d["state"]["fitted"]


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.__setitem__("class", "judgebias.studies.pomms.estimator.Evil"),
     "class 'judgebias.studies.pomms.estimator.Evil' is not a trusted saved estimator"),
    (lambda d: d.__setitem__("class", "sklearn.linear_model._coordinate_descent.ElasticNet"),
     "is not a trusted saved estimator"),
    (lambda d: d.__setitem__("format_version", 0), "format version 0 is not one"),
    (lambda d: _fitted_state(d)["coef_"]["$array"].__setitem__("shape", [5]),
     "state.fitted.coef_: the data does not have the shape it states"),
    (lambda d: _fitted_state(d)["coef_"]["$array"]["data"].append(0.5),
     "state.fitted.coef_: the data does not have the shape it states"),
    (lambda d: _fitted_state(d)["coef_"]["$array"].update(
        shape=[1], data=_fitted_state(d)["coef_"]["$array"]["data"][:1]),
     "coef_ is not the chosen step's coefficients"),
    (lambda d: _fitted_state(d).__setitem__("members_", ["judge-b", "judge-a"]),
     "disagree"),
    (lambda d: d["state"]["params"].__setitem__("alpha", -1.0), "alpha"),
])
def test_a_tampered_ensemble_is_refused_by_name(fitted, tmp_path: Path, edit,
                                                message: str) -> None:
    path = _tampered(fitted, tmp_path, edit)
    with pytest.raises(SavedFileError) as error:
        judgebias.load(path)
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value)


def test_what_would_not_come_back_is_not_saved(tmp_path: Path) -> None:
    X, y, _ = _data()
    with pytest.raises(TypeError, match="cv=KFold"):
        save(Pomms(cv=KFold(3)).fit(X, y), tmp_path / "e.json")
    with pytest.raises(TypeError, match="RandomState"):
        save(Pomms(cv=3, random_state=np.random.RandomState(0)).fit(X, y), tmp_path / "e.json")
    loaded = judgebias.load(save(Pomms(cv=3).fit(X.to_numpy(), y), tmp_path / "e.json"))
    assert loaded.get_params()["cv"] == 3 and not hasattr(loaded, "feature_names_in_")
    assert loaded.predict(X.to_numpy()).tobytes() == Pomms(cv=3).fit(
        X.to_numpy(), y).predict(X.to_numpy()).tobytes()


@pytest.mark.slow  # the philautia + pomms pipeline on the small project: ~1-2 min
def test_the_pomms_rule_writes_a_loadable_ensemble(tmp_path: Path, default_params) -> None:
    """`snakemake results/pomms/ensemble.json` on a small project: the saved ensemble
    predicts what the fit step did (its Kendall tau with the humans is the agreement
    table's Pomms row, its weights metrics.json's), and its card carries the panel, the
    training data and the test split's agreement."""
    from judgebias.stats.agreement import agreement
    from judgebias.studies.pomms import tables
    from judgebias.studies.pomms.measures import POMMS
    from judgebias.studies.pomms.steps import judged_ratings

    params = study_params(default_params, "philautia", "pomms", small=True)
    project = make_project(tmp_path, params)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet", "all", "--", tables.ENSEMBLE,
         tables.ENSEMBLE_CARD], project)
    model = judgebias.load(project / tables.ENSEMBLE)
    card = judgebias.load_card(project / tables.ENSEMBLE)
    metrics = json.loads((project / tables.METRICS).read_text())
    assert dict(zip(model.members_, model.coef_.tolist(), strict=True)) == metrics["coef"]
    assert model.intercept_ == metrics["intercept"] and card["weights"] == metrics["coef"]

    models = params["philautia"]["models"]
    setting = params["pomms"]["judgement_setting"]
    ratings = judged_ratings(
        [project / tables.judgements_path("synthetic")],
        [project / tables.item_scores_path(setting, "synthetic", m) for m in models],
        models, params["philautia"]["score"])
    ratings[POMMS] = model.predict(ratings[models])
    mine = agreement(ratings, [POMMS]).set_index(["split", "metric"])
    written = pd.read_parquet(project / tables.table_path("agreement")).set_index(
        ["split", "metric"])
    for split in ("train", "val", "test"):
        assert mine.loc[(split, POMMS), "tau_b"] == written.loc[(split, POMMS), "tau_b"]
        assert mine.loc[(split, POMMS), "n"] == written.loc[(split, POMMS), "n"]

    assert [p["model"] for p in card["panel"]] == models
    assert all(p["backend"] == "sim" and p["simulated"] for p in card["panel"])
    assert {p["model"] for p in card["panel"] if p["member"]} == set(model.members_)
    assert card["training"]["dataset"] == "synthetic"
    assert set(card["training"]["splits"]) == {"train", "val", "test"}
    tested = {row["metric"]: row for row in card["agreement_test"]["rows"]}
    assert set(tested) == {*models, POMMS}
    assert tested[POMMS]["tau_b"] == written.loc[("test", POMMS), "tau_b"]
    markdown = (project / tables.ENSEMBLE_CARD).read_text()
    assert markdown.startswith("# Pomms ensemble") and "Simulated models" in markdown
    assert all(m in markdown for m in model.members_)
