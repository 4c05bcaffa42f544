"""A scored_images task of the leaderboard on hand-made inputs: FRAME's instructions, the
simulated systems' renders (their planted alignment and edit, read back by the FRAME
simulated judge's own readers), the importers, the planted truth by hand, the methods'
matrices on a small hand table, the prompts each judge is asked, and params validation
of scored_images tasks and frame_mitigated methods."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from judgebias.config import ConfigError, validate_params
from judgebias.io.artifacts import write_table
from judgebias.models.context import RunContext
from judgebias.studies.frame.concepts import parse_instruction
from judgebias.studies.frame.sim import JudgeTraits, look, planted_change
from judgebias.studies.leaderboard.params import LeaderboardParams, method_judges
from judgebias.studies.leaderboard.scored import (
    DRAWN,
    FRAME_SCORE,
    INSTRUCTIONS,
    asked_prompts,
    domain_counts,
    draw_pictures,
    drawn_dir,
    drawn_path,
    imported_drawn,
    imported_instructions,
    instructions_path,
    method_scores,
    planned_scores,
    planted_scores,
    score_drawn,
    synthetic_instructions,
)

TASK = "frame_images"


def test_instructions_take_the_domains_in_turn_and_read_back_as_their_concepts():
    assert domain_counts(7) == {"people": 2, "animal": 2, "illustration": 1, "indoor": 1,
                                "outdoor": 1}
    table = synthetic_instructions(10, seed=4)
    assert table["domain"].value_counts().to_dict() == dict.fromkeys(
        ("people", "animal", "illustration", "indoor", "outdoor"), 2)
    for prompt, domain, concepts in zip(table["prompt"], table["domain"], table["concepts"],
                                        strict=True):
        assert parse_instruction(prompt, domain) == json.loads(concepts)
    assert synthetic_instructions(10, seed=4).equals(table)


@pytest.fixture(scope="module")
def instructions() -> pd.DataFrame:
    return synthetic_instructions(10, seed=1)


def seen(path: str, prompt: str):
    """What FRAME's simulated judge reads of an image (sim.look: scene and perceive)."""
    return look(Path(path).read_bytes(), prompt)


def test_renders_carry_their_planted_alignment_and_a_cosmetic_edit(instructions, tmp_path):
    plain = draw_pictures(instructions, "plain", 0.6, None, size=128, seed=2, folder=tmp_path)
    glossy = draw_pictures(instructions, "glossy", 0.6, "brightness=1.5", size=128, seed=2,
                           folder=tmp_path)
    assert set(plain["edit"]) == {"original"} and set(glossy["edit"]) == {"brightness=1.5"}
    for table, detected in ((plain, set()), (glossy, {"brightness"})):
        for path, prompt, truth in zip(table["image_path"], instructions["prompt"],
                                       table["alignment"], strict=True):
            read = seen(path, prompt)
            assert read.alignment == pytest.approx(truth)  # the edit changes no concept
            assert {m for m, _ in read.detected} == detected
            if detected:
                assert dict(read.detected)["brightness"] == pytest.approx(1.5, abs=0.05)
    assert 0 < plain["alignment"].mean() < 1
    assert not plain["alignment"].equals(glossy["alignment"])  # each system its own draws


def test_an_edit_skips_the_domains_it_does_not_apply_to(instructions, tmp_path):
    table = draw_pictures(instructions, "tagged", 1.0, "keyword_overlay=bottom-right",
                          size=128, seed=0, folder=tmp_path)
    outdoor = (instructions["domain"] == "outdoor").to_numpy()
    assert set(table.loc[outdoor, "edit"]) == {"original"}  # Table 1: no keyword outdoors
    assert set(table.loc[~outdoor, "edit"]) == {"keyword_overlay=bottom-right"}
    assert (table["alignment"] == 1.0).all()  # quality 1: every concept shown
    for path, prompt, domain in zip(table["image_path"], instructions["prompt"],
                                    instructions["domain"], strict=True):
        found = {m for m, _ in seen(path, prompt).detected}
        assert found == (set() if domain == "outdoor" else {"keyword_overlay"})


def test_a_systems_images_stay_when_another_system_is_added(instructions, tmp_path):
    first = draw_pictures(instructions, "a", 0.5, None, size=128, seed=3,
                          folder=tmp_path / "one")
    draw_pictures(instructions, "b", 0.5, None, size=128, seed=3, folder=tmp_path / "two")
    again = draw_pictures(instructions, "a", 0.5, None, size=128, seed=3,
                          folder=tmp_path / "two")
    for old, new in zip(first["image_path"], again["image_path"], strict=True):
        assert Path(old).read_bytes() == Path(new).read_bytes()
    none = draw_pictures(instructions, "none", 0.0, None, size=128, seed=3,
                         folder=tmp_path / "one")
    assert (none["alignment"] == 0.0).all()  # quality 0: every concept drawn wrong


def test_planted_scores_by_hand_and_unknown_for_imported_images():
    drawn = pd.DataFrame({"item_id": ["i1", "i1", "i2", "i2"],
                          "system": ["a", "b", "a", "b"],
                          "alignment": [1.0, 0.25, 0.5, 0.75]})
    assert planted_scores(drawn, ["b", "a"]).to_dict() == {"b": 0.5, "a": 0.75}
    unknown = drawn.assign(alignment=[1.0, np.nan, 0.5, 0.75])
    assert planted_scores(unknown, ["a", "b"]).isna().all()


def test_imported_instructions_and_images_reuse_the_images_task_importers(tmp_path):
    (tmp_path / "prompts.csv").write_text("prompt_id,prompt\np1,a red kite\np2,a ship\n")
    for name in ("p1.png", "p2.png"):
        (tmp_path / "imgs").mkdir(exist_ok=True)
        Image.new("RGB", (8, 8)).save(tmp_path / "imgs" / name)
    table = imported_instructions(tmp_path / "prompts.csv")
    assert list(table["item_id"]) == ["p1", "p2"] and table["domain"].isna().all()
    (tmp_path / "mine.csv").write_text("prompt_id,image_path\np2,imgs/p2.png\np1,imgs/p1.png\n")
    mine = imported_drawn(table, "mine", tmp_path / "mine.csv")
    assert list(mine["image_path"]) == [str(tmp_path / "imgs" / f"{p}.png") for p in ("p1", "p2")]
    assert mine["alignment"].isna().all() and (mine["source"] == "table").all()
    (tmp_path / "bad.csv").write_text("prompt_id,image_path\np1,imgs/p1.png\np9,imgs/p2.png\n")
    with pytest.raises(ValueError, match=r"bad\.csv: row 2: prompt_id 'p9' is not a prompt"):
        imported_drawn(table, "bad", tmp_path / "bad.csv")


def scored_params(default_params: dict, **methods: dict) -> dict:
    """The default params with the leaderboard's tasks replaced by one scored_images task
    and its methods by a plain judge (and `methods`)."""
    params = copy.deepcopy(default_params)
    board = params["leaderboard"]
    board["tasks"] = {TASK: {
        "kind": "scored_images",
        "prompts": {"synthetic": {"n_prompts": 10, "image_size": 128, "seed": 5}},
        "systems": {"faithful": {"synthetic": {"quality": 0.9}},
                    "glossy": {"synthetic": {"quality": 0.6, "edit": "brightness=1.5"}}}}}
    board["methods"] = {"plain": {"kind": "single", "judge": "corvid-pro"}, **methods}
    board["baseline"] = "plain"
    return params


def test_each_judge_is_asked_its_methods_prompts_once(default_params):
    params = validate_params(scored_params(
        default_params,
        aware={"kind": "frame_mitigated", "judge": "corvid-pro"},
        defined={"kind": "frame_mitigated", "judge": "corvid-pro",
                 "mitigation": "bias_definition", "manipulation": "brightness"},
        other={"kind": "frame_mitigated", "judge": "lumen-mini", "mitigation": "cot"},
        again={"kind": "single", "judge": "lumen-mini"},
        panel={"kind": "panel"}))
    view = LeaderboardParams.from_params(params)
    assert asked_prompts(view, TASK, "corvid-pro") == [
        ("standard", ""), ("bias_aware", ""), ("bias_definition", "brightness")]
    assert asked_prompts(view, TASK, "lumen-mini") == [("cot", ""), ("standard", "")]
    assert "panel" not in view.task_methods(TASK)


def test_methods_read_their_judges_prompt_on_a_hand_table(default_params):
    params = validate_params(scored_params(
        default_params, defined={"kind": "frame_mitigated", "judge": "corvid-pro",
                                 "mitigation": "bias_definition", "manipulation": "gamma"}))
    view = LeaderboardParams.from_params(params)
    rows = [  # item, system, judge, prompt, named, score
        ("i1", "faithful", "corvid-pro", "standard", "", 4.0),
        ("i1", "glossy", "corvid-pro", "standard", "", 4.5),
        ("i2", "faithful", "corvid-pro", "standard", "", 3.0),
        ("i2", "glossy", "corvid-pro", "standard", "", np.nan),  # a failed answer
        ("i1", "faithful", "corvid-pro", "bias_definition", "gamma", 3.9),
        ("i1", "glossy", "corvid-pro", "bias_definition", "gamma", 3.1),
        ("i1", "glossy", "corvid-pro", "bias_definition", "padding", 0.0),  # not its name
        ("i1", "glossy", "lumen-mini", "standard", "", 1.0),  # another judge
    ]
    scores = pd.DataFrame(rows, columns=["item_id", "system", "judge", "prompt", "named",
                                         "score"])
    plain = method_scores(view, "plain", scores, ["i1", "i2"], ["faithful", "glossy"])
    assert plain.unit == FRAME_SCORE and plain.judges["glossy"] == ("corvid-pro",)
    assert plain.matrix.loc["i1"].tolist() == [4.0, 4.5]
    assert plain.matrix.loc["i2", "faithful"] == 3.0 and np.isnan(plain.matrix.loc["i2", "glossy"])
    defined = method_scores(view, "defined", scores, ["i1", "i2"], ["faithful", "glossy"])
    assert defined.matrix.loc["i1"].tolist() == [3.9, 3.1]
    assert defined.matrix.loc["i2"].isna().all()  # not asked: no score, never a zero


def test_plan_counts_each_judges_prompts_before_and_after_the_images_are_drawn(
        default_params, tmp_path, monkeypatch):
    params = validate_params(scored_params(
        default_params, aware={"kind": "frame_mitigated", "judge": "corvid-pro"}))
    view, judges = LeaderboardParams.from_params(params), method_judges(params, "scored_images")
    monkeypatch.chdir(tmp_path)
    calls: dict = {}
    planned_scores(view, judges, RunContext(params), TASK, calls)
    assert {key: c.estimated for key, c in calls.items()} == {
        ("corvid-pro", "frame standard"): 20, ("corvid-pro", "frame bias_aware"): 20}
    table = synthetic_instructions(10, seed=5)
    drawn = draw_pictures(table, "faithful", 0.9, None, size=128, seed=5,
                          folder=Path(drawn_dir(TASK)))
    write_table(table, instructions_path(TASK), INSTRUCTIONS)
    write_table(drawn, drawn_path(TASK), DRAWN)
    calls = {}
    planned_scores(view, judges, RunContext(params), TASK, calls)
    assert {key: (len(c.requests), c.estimated) for key, c in calls.items()} == {
        ("corvid-pro", "frame standard"): (10, 0), ("corvid-pro", "frame bias_aware"): (10, 0)}


def test_every_frame_prompt_reaches_the_simulated_judge_as_frame_asks_it(
        default_params, tmp_path, monkeypatch):
    params = validate_params(scored_params(default_params))
    traits = params["panel"]["corvid-pro"]["sim"]["frame"]
    traits.update(susceptibility={"brightness": {"strength": 1.0, "best": 1.5}},
                  prompts={"bias_definition": 0.1, "bias_aware": 1.0, "cot": 0.5}, noise=0.0,
                  cot={"lift": 0.0, "bounding_box": 1.0})
    monkeypatch.chdir(tmp_path)
    table = synthetic_instructions(5, seed=5)
    drawn = draw_pictures(table, "glossy", 0.6, "brightness=1.5", size=128, seed=5,
                          folder=tmp_path / "drawn")
    # Fig. 6 naming the edit keeps a tenth of its lift, naming another keeps all of it
    # (bias_aware's multiplier), CoT half; no noise, so only the rounding differs
    asked = [("standard", ""), ("bias_definition", "brightness"),
             ("bias_definition", "padding"), ("cot", "")]
    scores = score_drawn(RunContext(params), "corvid-pro", table, drawn, asked)
    assert len(scores) == 5 * 4 and (scores["status"] == "ok").all()
    wide = scores.pivot(index="item_id", columns=["prompt", "named"], values="score")
    planted = JudgeTraits.from_block(traits)
    for prompt, named in asked[1:]:
        expected = (planted_change(planted, [("brightness", 1.5)], "animal")
                    - planted_change(planted, [("brightness", 1.5)], "animal", prompt,
                                     named or None))
        lost = wide[("standard", "")] - wide[(prompt, named)]  # both rounded to 0.1
        assert lost.to_numpy() == pytest.approx(expected, abs=0.1 + 1e-9), (prompt, named)


def systems(params: dict) -> dict:
    return params["leaderboard"]["tasks"][TASK]["systems"]


def prompts(params: dict) -> dict:
    return params["leaderboard"]["tasks"][TASK]["prompts"]


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: prompts(p).update(path="elsewhere.csv"),
     "prompts: a scored_images task needs exactly one of prompts.synthetic, prompts.path"),
    (lambda p: prompts(p)["synthetic"].update(image_size=64),
     "image_size: 64, but FRAME's offline renderer needs 128 px or more"),
    (lambda p: p["leaderboard"]["tasks"][TASK].update(
        human_labels={"synthetic": {"n_items": 4}}), f"{TASK}.human_labels: not for"),
    (lambda p: systems(p).update(lumen={"model": "lumen-base"}),
     "systems.lumen.model: a panel model draws no images"),
    (lambda p: systems(p)["glossy"]["synthetic"].update(style_of="lumen"),
     "glossy.synthetic.style_of: captions only"),
    (lambda p: systems(p)["glossy"]["synthetic"].update(details=2),
     "glossy.synthetic.details: vqa only"),
    (lambda p: systems(p)["glossy"]["synthetic"].update(edit="shine=2"),
     "glossy.synthetic.edit: unknown manipulation 'shine'"),
    (lambda p: systems(p)["glossy"]["synthetic"].update(edit="padding=40+brightness=1.5"),
     "glossy.synthetic.edit: recipe 'padding=40\\+brightness=1.5' is not canonical"),
    (lambda p: systems(p)["glossy"]["synthetic"].update(edit="beauty_filter=gfpgan"),
     "beauty_filter=gfpgan: a scored_images task draws the offline stand-in only"),
    (lambda p: p["leaderboard"]["methods"].update(defined={
        "kind": "frame_mitigated", "judge": "corvid-pro", "mitigation": "bias_definition",
        "manipulation": "glitter"}),
     "methods.defined.manipulation: 'glitter' is not a FRAME manipulation"),
])
def test_scored_images_task_validation(default_params, change, message):
    params = scored_params(default_params)
    validate_params(copy.deepcopy(params))  # the unchanged task is valid
    change(params)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_params(params)


def test_a_simulated_system_needs_synthetic_instructions_and_a_file_must_exist(
        default_params, tmp_path):
    params = scored_params(default_params)
    prompts(params).pop("synthetic")
    prompts(params)["path"] = str(tmp_path / "prompts.csv")
    (tmp_path / "prompts.csv").write_text("prompt_id,prompt\np1,a kite\n")
    with pytest.raises(ConfigError, match=r"faithful\.synthetic: a simulated system draws "
                                          r"FRAME's synthetic instructions"):
        validate_params(params)
    (tmp_path / "prompts.csv").unlink()
    with pytest.raises(ConfigError, match=f"{TASK}.prompts.path"):
        validate_params(params)
