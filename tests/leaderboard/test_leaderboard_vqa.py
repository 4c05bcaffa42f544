"""A vqa task of the leaderboard on hand-made inputs: BIRCH's synthetic questions and
answers (scenes and planted truth the simulated judges and humans read back), the
importers' errors (each naming file and row), the planted win rates by hand, the two
methods' win rates from a hand-made verdicts table, and params validation of vqa tasks
and birch methods."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from judgebias.config import ConfigError, validate_params
from judgebias.data.scenes import perceive, scene_from_json
from judgebias.studies.birch.vqa import FILLERS, is_true, read_facts, true_facts
from judgebias.studies.leaderboard.params import METHOD_TASKS, SyntheticSystem, applies
from judgebias.studies.leaderboard.vqa import (
    VARIANTS,
    answer_pairs,
    imported_answers,
    imported_questions,
    method_scores,
    planned_calls,
    planted_win_rates,
    synthetic_answers,
    synthetic_questions,
)


def test_synthetic_questions_show_their_scene_and_stay_when_more_are_asked(tmp_path):
    questions = synthetic_questions(6, seed=2, folder=tmp_path / "a")
    assert list(questions["item_id"]) == [f"q{i:04d}" for i in range(6)]
    for path, scene in zip(questions["image_path"], questions["scene"], strict=True):
        assert perceive(Path(path).read_bytes()) == scene_from_json(scene)
    more = synthetic_questions(8, seed=2, folder=tmp_path / "b")
    assert more.head(6)[["question", "scene", "image_sha256"]].equals(
        questions[["question", "scene", "image_sha256"]])


def test_synthetic_answers_carry_their_planted_truth_in_the_text(tmp_path):
    questions = synthetic_questions(40, seed=1, folder=tmp_path)
    chatty = synthetic_answers(questions, "chatty",
                               SyntheticSystem(quality=0.5, details=2, padding=3), seed=1)
    for answer, correct, details, scene in zip(chatty["answer"], chatty["correct"],
                                               chatty["details"], questions["scene"],
                                               strict=True):
        facts = read_facts(answer)
        assert len(facts) == 1 + details  # the asked fact, then the valid extras
        truth = true_facts(scene_from_json(scene))
        assert all(is_true(f, truth) for f in facts) == correct
        assert sum(answer.count(filler) for filler in FILLERS) == 3
    assert 0.25 < chatty["correct"].mean() < 0.75
    careful = synthetic_answers(questions, "careful", SyntheticSystem(quality=1.0), seed=1)
    assert careful["correct"].all() and (careful["details"] == 0).all()
    again = synthetic_answers(questions, "chatty",
                              SyntheticSystem(quality=0.5, details=2, padding=3), seed=1)
    assert again.equals(chatty)  # a system's answers do not depend on the others


def test_a_simulated_system_needs_synthetic_questions():
    imported = pd.DataFrame({"item_id": ["x"], "question": ["What is it?"], "scene": [None]})
    with pytest.raises(ValueError, match="item 'x' has no known scene"):
        synthetic_answers(imported, "s", SyntheticSystem(quality=0.5), seed=0)


def answers_table(rows):
    return pd.DataFrame(rows, columns=["item_id", "system", "correct", "details"]).assign(
        answer="text")


def test_planted_win_rates_by_hand():
    answers = answers_table([
        ("q1", "a", True, 0), ("q1", "b", False, 3), ("q1", "c", True, 2),  # a<c, a>b, c>b
        ("q2", "a", False, 0), ("q2", "b", False, 0), ("q2", "c", True, 0),  # a=b tie
    ])
    rates = planted_win_rates(answers, ["q1", "q2"], ["a", "b", "c"])
    # q1: a 1/2, b 0, c 1; q2: a 1/4, b 1/4, c 1
    assert rates.tolist() == pytest.approx([3 / 8, 1 / 8, 1.0])
    unknown = answers.assign(correct=[True, None, True, False, False, True])
    assert planted_win_rates(unknown, ["q1", "q2"], ["a", "b", "c"]).isna().all()


def test_pairs_are_every_pair_on_every_item_and_adding_a_system_keeps_them():
    questions = pd.DataFrame({"item_id": ["q1", "q2"], "question": ["x?", "y?"],
                              "image_path": ["1.png", "2.png"]})
    answers = pd.DataFrame({"item_id": ["q1", "q2"] * 3, "system": list("aabbcc"),
                            "answer": [f"{s}{i}" for s in "abc" for i in "12"]})
    two = answer_pairs(questions, answers[answers["system"] != "c"])
    three = answer_pairs(questions, answers)
    assert len(three) == 6 and set(two["pair_id"]) <= set(three["pair_id"])
    row = three.set_index("pair_id").loc["q2|a|c"]
    assert (row["query"], row["image"], row["answer_a"], row["answer_b"]) == (
        "y?", "2.png", "a2", "c2")
    assert three.merge(two, on=list(two.columns)).shape[0] == len(two)  # unchanged


def test_methods_score_their_variant_both_orders_averaged_ties_half_failures_none():
    rows = [  # item, a, b, variant, order, verdict (mapped back to the pair)
        ("q1", "A", "B", "base", "ab", "A"), ("q1", "A", "B", "base", "ba", "B"),
        ("q1", "A", "C", "base", "ab", "tie"), ("q1", "A", "C", "base", "ba", "A"),
        ("q1", "B", "C", "base", "ab", "B"), ("q1", "B", "C", "base", "ba", None),
        ("q1", "A", "B", "birch", "ab", "A"), ("q1", "A", "B", "birch", "ba", "A"),
    ]
    verdicts = pd.DataFrame(rows, columns=["item_id", "system_a", "system_b", "variant",
                                           "order", "verdict"]).assign(judge="j")
    single = method_scores("single", "j", verdicts, ["q1"], ["A", "B", "C"])
    # A-B: (1 + 0) / 2; A-C: (1/2 + 1) / 2; B-C: 0 (the failed order left out)
    # -> A (1/2 + 3/4) / 2, B (1/2 + 0) / 2, C (1/4 + 1) / 2
    assert single.matrix.loc["q1"].tolist() == pytest.approx([0.625, 0.25, 0.625])
    assert single.unit == "win rate (ties half)"
    birch = method_scores("birch", "j", verdicts, ["q1"], ["A", "B", "C"])
    assert birch.matrix.loc["q1", "A"] == 1.0 and np.isnan(birch.matrix.loc["q1", "C"])
    other = method_scores("single", "k", verdicts, ["q1"], ["A", "B", "C"])
    assert other.matrix.isna().all().all()  # another judge's verdicts are not its own


def write_image(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8)).save(path)


@pytest.fixture
def imported(tmp_path):
    (tmp_path / "questions.csv").write_text(
        "item_id,image_path,question\nv1,imgs/a.png,What colour?\nv2,imgs/b.png,How many?\n")
    for name in ("a.png", "b.png"):
        write_image(tmp_path / "imgs" / name)
    return tmp_path, imported_questions(tmp_path / "questions.csv")


def test_imported_questions_and_answers_resolve_inside_the_files_folder(imported):
    folder, questions = imported
    assert questions["image_path"].tolist() == [str(folder / "imgs" / "a.png"),
                                                str(folder / "imgs" / "b.png")]
    assert questions["scene"].isna().all() and questions["image_sha256"].str.len().eq(64).all()
    pd.DataFrame({"item_id": ["v2", "v1"], "answer": ["Two.", "Red."]}).to_parquet(
        folder / "mine.parquet")
    table = imported_answers(questions, "mine", folder / "mine.parquet")
    assert table["answer"].tolist() == ["Red.", "Two."]  # the task's order
    assert table["correct"].isna().all()


@pytest.mark.parametrize(("rows", "message"), [
    ("v1,imgs/a.png,What?\nv1,imgs/b.png,Why?\n", "row 2: item_id 'v1' is given twice"),
    ("v1,imgs/a.png,\n", "row 1: empty question of item 'v1'"),
    ("v1,imgs/a.png,What?\n,imgs/b.png,Why?\n", "row 2: empty item_id"),
    ("v1,imgs/a.png,What?\nv2,../b.png,Why?\n", "row 2: image_path"),
    ("v1,imgs/missing.png,What?\n", "row 1: image_path 'imgs/missing.png': no such file"),
])
def test_imported_questions_errors_name_the_file_and_row(imported, rows, message):
    folder, _ = imported
    (folder / "bad.csv").write_text("item_id,image_path,question\n" + rows)
    with pytest.raises(ValueError, match=r"bad\.csv") as error:
        imported_questions(folder / "bad.csv")
    assert message in str(error.value)


@pytest.mark.parametrize(("rows", "message"), [
    ("v1,Red.\n", "no answer for 1 item(s) of the task"),
    ("v1,Red.\nv1,Blue.\nv2,Two.\n", "row 2: item_id 'v1' is given twice"),
    ("v1,Red.\nv9,Two.\n", "row 2: item_id 'v9' is not an item of the task"),
    ("v1,Red.\nv2,\n", "row 2: empty answer for item 'v2'"),
])
def test_imported_answers_errors_name_the_file_and_row(imported, rows, message):
    folder, questions = imported
    (folder / "bad.csv").write_text("item_id,answer\n" + rows)
    with pytest.raises(ValueError, match=r"bad\.csv") as error:
        imported_answers(questions, "bad", folder / "bad.csv")
    assert message in str(error.value)


def test_an_empty_parquet_answer_is_an_error(imported):
    folder, questions = imported
    pd.DataFrame({"item_id": ["v1", "v2"], "answer": ["Red.", None]}).to_parquet(
        folder / "bad.parquet")
    with pytest.raises(ValueError, match=r"bad\.parquet: row 2: empty answer"):
        imported_answers(questions, "bad", folder / "bad.parquet")


def vqa_params(default_params: dict, **task) -> dict:
    """The defaults with a vqa task beside the others and a birch method."""
    params = copy.deepcopy(default_params)
    params["leaderboard"]["tasks"]["answers"] = {
        "kind": "vqa", "questions": {"synthetic": {"n_items": 4}},
        "systems": {"s1": {"synthetic": {"quality": 0.9}},
                    "s2": {"synthetic": {"quality": 0.4, "details": 2}}}, **task}
    params["leaderboard"]["methods"]["birch"] = {"kind": "birch", "judge": "corvid-pro"}
    return params


def test_the_variants_are_those_of_the_method_kinds_that_judge_vqa_tasks():
    assert set(VARIANTS) == {kind for kind in METHOD_TASKS if applies(kind, "vqa")}


def test_a_vqa_task_and_a_birch_method_validate(default_params):
    params = validate_params(vqa_params(default_params))
    assert params["leaderboard"]["tasks"]["answers"]["kind"] == "vqa"


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t.pop("questions"), "answers.questions: a vqa task needs exactly one of"),
    (lambda t: t["questions"].update(path="nowhere.csv"), "answers.questions: a vqa task"),
    (lambda t: t.update(images={"synthetic": {"n_images": 2, "seed": 0}}),
     "answers.images: a vqa task's items are its questions"),
    (lambda t: t.update(human_labels={"synthetic": {"n_items": 2}}),
     "answers.human_labels: human labels are used on captions tasks"),
    (lambda t: t.update(order="random"), "answers.order: a vqa task always asks both"),
    (lambda t: t["systems"].update(m={"model": "lumen-base"}),
     "systems.m.model: a panel model answers no questions here: give the system's answers "
     "as `outputs`"),
    (lambda t: t["systems"]["s1"]["synthetic"].update(style_of="lumen"),
     "s1.synthetic.style_of: captions only"),
    (lambda t: t["systems"]["s1"]["synthetic"].update(edit="brightness:1.4"),
     "s1.synthetic.edit: scored_images only"),
])
def test_vqa_task_validation(default_params, change, message):
    params = vqa_params(default_params)
    change(params["leaderboard"]["tasks"]["answers"])
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("`", ".")):
        validate_params(params)


def test_a_missing_questions_file_is_named_and_a_bad_one_read_before_any_job(
        default_params, tmp_path):
    params = vqa_params(default_params)
    task = params["leaderboard"]["tasks"]["answers"]
    task["questions"] = {"path": str(tmp_path / "none.csv")}
    task["systems"] = {"s1": {"outputs": str(tmp_path / "a.csv")},
                       "s2": {"outputs": str(tmp_path / "b.csv")}}
    with pytest.raises(ConfigError, match=r"answers\.questions\.path: .*none\.csv"):
        validate_params(params)
    (tmp_path / "none.csv").write_text("item_id,image_path,question\nv1,x.png,What?\n")
    for name in ("a.csv", "b.csv"):
        (tmp_path / name).write_text("item_id,answer\nv1,Red.\n")
    with pytest.raises(ConfigError, match=r"questions\.path: .*none\.csv: row 1: "
                                          r"image_path 'x\.png': no such file"):
        validate_params(params)


def test_answers_on_synthetic_questions_are_read_before_any_job(default_params, tmp_path):
    params = vqa_params(default_params)
    (tmp_path / "mine.csv").write_text("item_id,answer\nq0000,Red.\nq0007,Blue.\n")
    params["leaderboard"]["tasks"]["answers"]["systems"]["mine"] = {
        "outputs": str(tmp_path / "mine.csv")}
    with pytest.raises(ConfigError, match=r"systems\.mine\.outputs: .*mine\.csv: row 2: "
                                          r"item_id 'q0007' is not an item of the task"):
        validate_params(params)


def test_a_simulated_system_on_imported_questions_is_refused(default_params, tmp_path):
    params = vqa_params(default_params)
    write_image(tmp_path / "a.png")
    (tmp_path / "q.csv").write_text("item_id,image_path,question\nv1,a.png,What?\n")
    params["leaderboard"]["tasks"]["answers"]["questions"] = {"path": str(tmp_path / "q.csv")}
    with pytest.raises(ConfigError, match=r"systems\.s1\.synthetic: a simulated system "
                                          r"answers synthetic questions"):
        validate_params(params)


def test_plan_counts_the_calls_of_a_task_not_built_yet(default_params, tmp_path,
                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)  # no data/leaderboard here
    planned = planned_calls(validate_params(vqa_params(default_params)), "answers")
    pairs = 4 * 1  # 4 items, one pair of systems
    by_prompt = {p.task.prompt: p.estimated for p in planned if p.task is not None}
    assert by_prompt == {"birch_judge_base": 2 * pairs, "birch_anchor": pairs,
                         "birch_judge_reference": 2 * pairs}
    assert {p.model for p in planned} == {"corvid-pro"} and not any(p.requests for p in planned)


def test_answers_on_imported_questions_are_read_before_any_job(default_params, imported):
    folder, _ = imported
    params = vqa_params(default_params)
    (folder / "a.csv").write_text("item_id,answer\nv1,Red.\nv2,Two.\n")
    (folder / "b.csv").write_text("item_id,answer\nv1,Blue.\n")
    params["leaderboard"]["tasks"]["answers"].update(
        questions={"path": str(folder / "questions.csv")},
        systems={"a": {"outputs": str(folder / "a.csv")},
                 "b": {"outputs": str(folder / "b.csv")}})
    with pytest.raises(ConfigError, match=r"systems\.b\.outputs: .*b\.csv: no answer for 1 "
                                          r"item\(s\) of the task") as error:
        validate_params(params)
    assert "systems.a" not in str(error.value)
