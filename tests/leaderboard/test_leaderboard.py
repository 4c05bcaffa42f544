"""The leaderboard study's own logic on hand-made inputs: the judging methods (self- and
family-exclusion, a missing judge answer, Pomms on its members), the order changes, the
PPI rows, the importers' errors (each naming file and row) and params validation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgebias.config import ConfigError, validate_params
from judgebias.stats.ppi import human_only_mean, judge_only_mean, ppi_mean
from judgebias.studies.leaderboard.data import (
    imported_captions,
    imported_labels,
    synthetic_captions,
    synthetic_labels,
)
from judgebias.studies.leaderboard.measures import order_changes, ppi_rows
from judgebias.studies.leaderboard.methods import excluded, panel, pomms, single
from judgebias.studies.philautia.data import build_synthetic_dataset


def values(rows):
    return pd.DataFrame(rows, columns=["image_id", "system", "judge", "value"])


VALUES = values([
    ("i1", "A", "j1", 0.8), ("i1", "A", "j2", 0.6), ("i1", "B", "j1", 0.5),
    ("i1", "B", "j2", 0.3), ("i2", "A", "j1", 0.9), ("i2", "A", "j2", np.nan),
    ("i2", "B", "j1", 0.4), ("i2", "B", "j2", 0.2)])


def test_single_is_one_judges_score_in_points_and_a_failed_answer_stays_missing():
    scored = single(VALUES, ["i1", "i2"], ["A", "B"], "j2")
    assert scored.matrix.loc["i1", "A"] == pytest.approx(60.0)
    assert np.isnan(scored.matrix.loc["i2", "A"])


def test_panel_averages_the_judges_left_and_a_failure_lowers_the_count_not_the_score():
    everyone = panel(VALUES, ["i1", "i2"], ["A", "B"], ["j1", "j2"], lambda j, s: True)
    assert everyone.matrix.loc["i1", "A"] == pytest.approx(70.0)
    assert everyone.matrix.loc["i2", "A"] == pytest.approx(90.0)  # j2 failed: j1 alone
    no_own = panel(VALUES, ["i1", "i2"], ["A", "B"], ["j1", "j2"],
                   lambda j, s: not (j == "j1" and s == "A"))
    assert no_own.matrix.loc["i1", "A"] == pytest.approx(60.0)
    assert np.isnan(no_own.matrix.loc["i2", "A"])  # no judge left with an answer: no entry
    assert no_own.judges == {"A": ("j2",), "B": ("j1", "j2")}


@pytest.mark.parametrize(("exclude", "judge", "model", "families", "expected"), [
    ("none", "m", "m", ("f",), False),
    ("own", "m", "m", ("f",), True),
    ("own", "m", "other", ("f",), False),
    ("family", "m", "other", ("f",), True),   # a sibling's system
    ("family", "m", None, ("g",), False),
    ("family", "m", "m", ("g",), True),       # its own system is its family's too
])
def test_exclusion(exclude, judge, model, families, expected):
    assert excluded(("f",), judge, model, families, exclude) is expected


def test_pomms_reads_its_members_scores_and_a_failed_member_gives_no_score():
    from judgebias.studies.pomms.estimator import Pomms, validation_split

    rng = np.random.default_rng(0)
    truth = rng.random(60)
    train = pd.DataFrame({"j1": truth + 0.05 * rng.standard_normal(60),
                          "j2": truth + 0.1 * rng.standard_normal(60)})
    fitted = Pomms(cv=validation_split(np.arange(60) >= 45), min_members=2).fit(train, truth)
    scored = pomms(VALUES, ["i1", "i2"], ["A", "B"], fitted)
    expected = fitted.predict(pd.DataFrame({"j1": [0.8], "j2": [0.6]}))[0]
    assert scored.matrix.loc["i1", "A"] == pytest.approx(expected)
    assert np.isnan(scored.matrix.loc["i2", "A"])  # j2's answer failed
    assert scored.unit.startswith("human")


def test_an_order_change_is_said_in_words_with_both_verdicts():
    pairs = pd.DataFrame([
        ("plain", "A", "B", 2.0, True), ("plain", "A", "C", 1.0, False),
        ("fixed", "A", "B", -1.5, False), ("fixed", "A", "C", 0.5, False)],
        columns=["method", "system_a", "system_b", "difference", "significant"])
    changes = order_changes(pairs, "plain")
    assert changes[["method", "above", "below"]].values.tolist() == [["fixed", "B", "A"]]
    assert changes["text"].iloc[0] == (
        "fixed ranks B above A (not significant); the plain judge plain ranked A above B "
        "(significant after FDR)")


def test_ppi_rows_are_ppi_python_s_estimators_on_each_mean_and_each_paired_difference():
    rng = np.random.default_rng(0)
    images = [f"i{k}" for k in range(40)]
    truth = pd.DataFrame({"A": rng.random(40), "B": rng.random(40)}, index=images)
    matrix = 100 * truth + 10 + rng.normal(0, 5, truth.shape)
    labelled = images[:12]
    labels = truth.loc[labelled].stack().rename("label").reset_index()
    labels.columns = ["image_id", "system", "label"]
    rows = ppi_rows("m", matrix, "points", labels, 0.9).set_index(
        ["system", "other", "estimator"])
    f, y = matrix["A"] - matrix["B"], truth["A"] - truth["B"]
    expected = ppi_mean(y[:12], f[:12], f[12:], confidence=0.9)
    got = rows.loc[("A", "B", "ppi++")]
    assert (got["estimate"], got["ci_low"], got["ci_high"]) == pytest.approx(
        (expected.estimate, expected.ci_low, expected.ci_high))
    assert rows.loc[("A", "", "human_only"), "estimate"] == pytest.approx(
        human_only_mean(truth["A"][:12], 0.9).estimate)
    assert rows.loc[("B", "", "judge_only"), "estimate"] == pytest.approx(
        judge_only_mean(matrix["B"], 0.9).estimate)
    assert rows.loc[("A", "", "ppi++"), "n_labelled"] == 12
    assert rows.loc[("A", "", "ppi++"), "n_unlabelled"] == 28


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return build_synthetic_dataset(tmp_path_factory.mktemp("board"), n_images=5, seed=1)


def test_synthetic_captioners_have_their_planted_accuracy_order_and_stable_captions(images):
    good = synthetic_captions(images, "good", 1.0, opener=None, seed=3)
    poor = synthetic_captions(images, "poor", 0.3, opener="In this picture,", seed=3)
    assert good["accuracy"].mean() > poor["accuracy"].mean()
    assert good["accuracy"].min() == pytest.approx(1.0)
    assert poor["caption"].str.startswith("In this picture, ").all()
    again = synthetic_captions(images, "good", 1.0, opener=None, seed=3)
    assert again.equals(good)  # a system's captions never depend on the others


def test_imported_captions_name_the_file_and_row_of_each_problem(images, tmp_path):
    ids = images["image_id"].tolist()
    path = tmp_path / "mine.csv"

    def write(rows):
        pd.DataFrame(rows, columns=["image_id", "caption"]).to_csv(path, index=False)

    write([(i, "a red circle") for i in ids])
    assert imported_captions(images, "mine", path)["source"].eq("table").all()
    write([(i, "a red circle") for i in ids] + [(ids[0], "again")])
    with pytest.raises(ValueError, match=rf"{path}: row 6: image_id '{ids[0]}' is given twice"):
        imported_captions(images, "mine", path)
    write([(i, "a red circle") for i in ids[:-1]])
    with pytest.raises(ValueError, match="no caption for 1 image"):
        imported_captions(images, "mine", path)
    write([(i, "a red circle") for i in ids] + [("elsewhere", "x")])
    with pytest.raises(ValueError, match="row 6: image_id 'elsewhere' is not an image"):
        imported_captions(images, "mine", path)
    write([(ids[0], "")] + [(i, "c") for i in ids[1:]])
    with pytest.raises(ValueError, match="row 1: empty caption"):
        imported_captions(images, "mine", path)


def test_labels_are_a_seeded_random_subset_and_imported_ones_are_checked(images, tmp_path):
    outputs = pd.concat([synthetic_captions(images, s, q, None, 3)
                         for s, q in (("A", 0.9), ("B", 0.5))], ignore_index=True)
    drawn = synthetic_labels(outputs, n_items=3, n_raters=3, rater_noise=0.1, seed=4)
    assert drawn["image_id"].nunique() == 3 and set(drawn["system"]) == {"A", "B"}
    assert drawn.equals(synthetic_labels(outputs, 3, 3, 0.1, 4))
    path = tmp_path / "labels.csv"
    image = images["image_id"].iloc[0]

    def check(rows, message):
        pd.DataFrame(rows, columns=["image_id", "system", "label"]).to_csv(path, index=False)
        with pytest.raises(ValueError, match=message):
            imported_labels(path, outputs, (0.0, 1.0))

    check([(image, "A", 1.5), (image, "B", 0.5)], r"row 1: label 1.5 is outside the scale")
    check([(image, "A", 0.5), (image, "C", 0.5)], r"row 2: system 'C' is not a system")
    check([("nowhere", "A", 0.5)], r"row 1: image_id 'nowhere' is not an image")
    check([(image, "A", 0.5), (image, "A", 0.4)], r"row 2: .* labelled again \(first at row 1\)")
    check([(image, "A", 0.5)], "cover 1 system")


def test_validate_names_each_bad_key_before_any_call(default_params):
    import copy

    params = copy.deepcopy(default_params)
    board = params["leaderboard"]
    systems = board["tasks"]["captions"]["systems"]
    systems["twice"] = {"model": "corvid-pro"}
    systems["both"] = {"synthetic": {"quality": 0.5}, "outputs": "x.csv"}
    board["methods"]["bad"] = {"kind": "single", "judge": "nobody"}
    board["methods"]["panel"]["judge"] = "corvid-pro"
    board["tasks"]["captions"]["references"] = False
    board["baseline"] = "panel"
    with pytest.raises(ConfigError) as error:
        validate_params(params)
    message = str(error.value)
    for line in ("leaderboard.tasks.captions.systems.twice.model: 'corvid-pro' already "
                 "captions for system 'corvid-pro'",
                 "leaderboard.tasks.captions.systems.both: give exactly one of outputs",
                 "leaderboard.methods.bad.judge: 'nobody' is not a panel model",
                 "leaderboard.methods.panel.judge: only a method of kind single, mmb, birch, "
                 "frame_mitigated has it",
                 "leaderboard.tasks.captions.references: False, but Pomms was fitted",
                 "leaderboard.baseline: 'panel' is a panel method, not a single judge"):
        assert line in message, message
