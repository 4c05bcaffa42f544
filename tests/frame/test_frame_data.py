"""FRAME's benchmark: Table 8 concepts and instructions, the offline renderer and its
reader (which every manipulation leaves readable), the simulated annotators, the FRAME
table importer's errors, and the render cache (a new grid value draws only its images)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgebias.studies.frame import manipulate, perceive
from judgebias.studies.frame.annotators import simulate_annotators
from judgebias.studies.frame.concepts import (
    VOCABULARY,
    compose_instruction,
    domain_of,
    keyword,
    parse_instruction,
    perturb,
    sample_concepts,
)
from judgebias.studies.frame.data import read_frame_table
from judgebias.studies.frame.recipes import DOMAINS, step
from judgebias.studies.frame.scene import alignment, read_scene, render
from judgebias.studies.frame.tables import ITEMS


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_value_round_trips_through_an_instruction(domain):
    rng = np.random.default_rng(0)
    for slot, values in VOCABULARY[domain].items():
        for value in values:
            concepts = sample_concepts(domain, rng) | {slot: value}
            text = compose_instruction(domain, concepts)
            assert parse_instruction(text, domain) == concepts, text
            assert domain_of(text) == domain, text


def test_perturb_changes_exactly_k_slots():
    rng = np.random.default_rng(1)
    concepts = sample_concepts("people", rng)
    for k in range(6):
        changed = perturb("people", concepts, k, rng)
        assert sum(changed[s] != concepts[s] for s in concepts) == k
    with pytest.raises(ValueError, match="cannot perturb 6"):
        perturb("people", concepts, 6, rng)


GRID_ENDS = [step("brightness", 0.9), step("brightness", 2.3), step("gamma", 0.9),
             step("gamma", 2.3), step("padding", 10), step("padding", 50),
             step("instruction_overlay", "center"), step("instruction_overlay", "top-left"),
             step("authenticity_overlay", "bottom-right"), step("keyword_overlay", "top-right"),
             step("bounding_box", "annotated"), step("beauty_filter", "smoothing")]


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_reader_sees_the_drawing_through_every_manipulation(domain):
    rng = np.random.default_rng(DOMAINS.index(domain))
    for seed in range(3):
        concepts = sample_concepts(domain, rng)
        text = compose_instruction(domain, concepts)
        scene = render(text, seed=seed, error_rate=0.3)
        assert read_scene(scene.image, domain) == scene.drawn
        context = manipulate.ItemContext(text, keyword(domain, concepts), scene.boxes,
                                         manipulate.SmoothingRestorer())
        for item in GRID_ENDS:
            if domain == "outdoor" and item.manipulation in ("keyword_overlay", "bounding_box"):
                continue
            shown = manipulate.apply(scene.image, (item,), context)
            assert read_scene(shown, domain) == scene.drawn, item.id


def test_renders_follow_the_tone_contract_and_detectors_see_originals_as_clean():
    scene = render(compose_instruction("indoor", sample_concepts(
        "indoor", np.random.default_rng(3))), seed=5)
    found = perceive.features(scene.image)
    assert (found.tone, found.text_kind, found.has_boxes, found.beauty,
            found.padding_1024) == ("none", None, False, False, 0.0)
    again = render(compose_instruction("indoor", sample_concepts(
        "indoor", np.random.default_rng(3))), seed=5)
    assert np.array_equal(np.asarray(scene.image), np.asarray(again.image))


def test_alignment_is_the_share_of_matching_slots():
    assert alignment({"a": "x", "b": "y"}, {"a": "x", "b": "z"}) == 0.5
    assert alignment({"a": None, "b": "y"}, {"a": None, "b": "y"}) == 0.5


def test_simulated_annotators_agree_like_table_7():
    rng = np.random.default_rng(0)
    truth = rng.uniform(0, 1, 2000)
    first, second = simulate_annotators(truth, rng)
    assert set(np.unique(first)) <= {1, 2, 3, 4, 5}
    assert 0.59 <= np.corrcoef(first, second)[0, 1] <= 0.85


def _table(tmp_path, rows) -> str:
    (tmp_path / "img").mkdir(exist_ok=True)
    (tmp_path / "img" / "a.png").write_bytes(b"png")
    path = tmp_path / "frame.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


GOOD = {"item_id": "p-1", "domain": "people", "instruction": "Generate a chef.",
        "image": "a.png", "annotator_1": 2, "annotator_2": 3,
        "concepts": json.dumps({"object": "Chef"}), "boxes": "[[1, 2, 30, 40]]"}


def test_frame_table_import(tmp_path):
    items = read_frame_table(_table(tmp_path, [GOOD, GOOD | {"item_id": "p-2"}]),
                             str(tmp_path / "img"))
    assert list(items.columns) == ITEMS.names
    assert items.loc[0, "human_score"] == 2.5


@pytest.mark.parametrize(("change", "message"), [
    ({"domain": "space"}, "row 1: domain: 'space' is not one of"),
    ({"image": "b.png"}, "row 1: image: file .* does not exist"),
    ({"annotator_1": 7}, "row 1: annotator_1: 7.0 is outside 1-5"),
    ({"boxes": "[[1, 2]]"}, r"row 1: boxes: must be a list of \[x0, y0, x1, y1\]"),
    ({"instruction": ""}, "row 1: instruction: missing"),
])
def test_frame_table_errors_name_file_row_and_key(tmp_path, change, message):
    path = _table(tmp_path, [GOOD | change])
    with pytest.raises(ValueError, match="frame.csv: " + message):
        read_frame_table(path, str(tmp_path / "img"))


def test_a_new_grid_value_renders_only_its_own_images(tmp_path, params, caplog):
    from judgebias.config import validate_params
    from judgebias.studies.frame.params import FrameParams
    from judgebias.studies.frame.render import grid_jobs
    from judgebias.studies.frame.render import render as render_set

    concepts = sample_concepts("animal", np.random.default_rng(0))
    text = compose_instruction("animal", concepts)
    scene = render(text, seed=1)
    image = tmp_path / "a.png"
    scene.image.save(image)
    items = pd.DataFrame([{"item_id": "animal-000", "domain": "animal", "instruction": text,
                           "concepts": json.dumps(concepts), "image": str(image),
                           "boxes": json.dumps([list(b) for b in scene.boxes])}])
    params["frame"]["render_cache"] = str(tmp_path / "cache")
    params["frame"]["manipulations"]["padding"] = [10, 20]
    frame = FrameParams.from_params(validate_params(params))
    with caplog.at_level(logging.INFO):
        first = render_set(frame, items, grid_jobs(items, "padding", [10, 20]), tmp_path / "r1")
    assert "2 images: 2 drawn, 0 from the render cache" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO):
        second = render_set(frame, items, grid_jobs(items, "padding", [10, 20, 30]),
                            tmp_path / "r2")
    assert "3 images: 1 drawn, 2 from the render cache" in caplog.text
    assert list(second["recipe"]) == ["padding=10", "padding=20", "padding=30"]
    assert (tmp_path / "r1/padding=10/animal-000.png").read_bytes() == \
        (tmp_path / "r2/padding=10/animal-000.png").read_bytes()
    assert first["status"].eq("ok").all()


def test_gfpgan_without_weights_is_reported_unavailable_and_the_rest_renders(tmp_path, params):
    from judgebias.config import validate_params
    from judgebias.studies.frame.params import FrameParams
    from judgebias.studies.frame.render import render as render_set

    concepts = sample_concepts("people", np.random.default_rng(0))
    text = compose_instruction("people", concepts)
    render(text, seed=1).image.save(tmp_path / "p.png")
    items = pd.DataFrame([{"item_id": "people-000", "domain": "people", "instruction": text,
                           "concepts": json.dumps(concepts), "image": str(tmp_path / "p.png"),
                           "boxes": "[]"}])
    params["frame"]["render_cache"] = str(tmp_path / "cache")
    frame = FrameParams.from_params(validate_params(params))
    jobs = pd.DataFrame({"item_id": ["people-000"] * 3,
                         "recipe": ["beauty_filter=gfpgan", "padding=10",
                                    "bounding_box=annotated"]})
    out = render_set(frame, items, jobs, tmp_path / "r").set_index("recipe")
    assert out.loc["beauty_filter=gfpgan", "status"] == "unavailable"
    assert "judgebias[gfpgan]" in out.loc["beauty_filter=gfpgan", "message"]
    assert out.loc["padding=10", "status"] == "ok"
    assert "no box annotation" in out.loc["bounding_box=annotated", "message"]


def test_a_panel_model_writes_the_instructions(
        tmp_path, params, monkeypatch):
    from judgebias.config import validate_params
    from judgebias.models.context import RunContext
    from judgebias.studies.frame import steps
    from judgebias.studies.frame.data import draw_concepts
    from judgebias.studies.frame.params import FrameParams

    monkeypatch.chdir(tmp_path)
    params["journal_dir"] = str(tmp_path / "journal")
    params["frame"]["dataset"]["synthetic"]["writer"] = "lumen-large"
    params = validate_params(params)
    draw_concepts(3, ["people", "outdoor"], [0.5, 0.5], seed=0).to_parquet("concepts.parquet")
    steps.instructions(FrameParams.from_params(params), RunContext(params),
                       concepts=Path("concepts.parquet"),
                       instructions=Path("instructions.parquet"))
    written = pd.read_parquet("instructions.parquet")
    assert (written["status"] == "ok").all()
    for row in written.itertuples():
        assert row.instruction == compose_instruction(row.domain, json.loads(row.concepts))
        assert parse_instruction(row.prompt, row.domain) == json.loads(row.perturbed_concepts)
