"""FRAME's benchmark (seed 004 §4.1): the item table format and its importer's errors, and
the construction stages (concepts, instructions by the template or a journaled writer
model, images of sets A and B through the never-pay-twice cache, human scores)."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.frame import GOOD, write_frame_csv, write_png
from PIL import Image

from judgebias.io.artifacts import read_table, write_table
from judgebias.models.context import RunContext
from judgebias.studies.frame import data, imagegen
from judgebias.studies.frame.concepts import VOCABULARY, compose_instruction, parse_instruction
from judgebias.studies.frame.data import (
    attach_humans,
    draw_concepts,
    generate_images,
    read_frame_table,
    write_instructions,
)
from judgebias.studies.frame.recipes import DOMAINS
from judgebias.studies.frame.tables import ITEMS

# -- stage 1 ------------------------------------------------------------------------------------


def test_draw_concepts_perturbs_k_slots_and_takes_both_call_forms():
    drawn = draw_concepts({"people": 30, "outdoor": 30}, [0.1, 0.2, 0.3, 0.2, 0.1, 0.1],
                          seed=3)
    assert list(drawn["item_id"][:2]) == ["people-000", "people-001"]
    assert drawn["domain"].value_counts().to_dict() == {"people": 30, "outdoor": 30}
    for row in drawn.itertuples():
        original, changed = json.loads(row.concepts), json.loads(row.perturbed_concepts)
        assert set(original) == set(VOCABULARY[row.domain])
        assert all(original[s] in VOCABULARY[row.domain][s] for s in original)
        assert sum(original[s] != changed[s] for s in original) == row.n_perturbed
        assert row.n_perturbed <= len(VOCABULARY[row.domain])  # k capped at the slots
    assert drawn["n_perturbed"].nunique() > 2
    again = draw_concepts({"people": 30, "outdoor": 30}, [0.1, 0.2, 0.3, 0.2, 0.1, 0.1],
                          seed=3)
    pd.testing.assert_frame_equal(drawn, again)
    every = draw_concepts(2, data.DEFAULT_K_WEIGHTS, seed=0)
    assert set(every["domain"]) == set(DOMAINS) and len(every) == 10
    old = draw_concepts(2, ["animal"], [0.0, 1.0], 5)  # the older positional form
    assert list(old["n_perturbed"]) == [1, 1]
    with pytest.raises(ValueError, match="k_weights"):
        draw_concepts(2, [0.0, 0.0], seed=0)
    with pytest.raises(ValueError, match="unknown domain"):
        draw_concepts({"space": 2}, [1.0], seed=0)


# -- stage 2 ------------------------------------------------------------------------------------


def test_template_instructions_judge_the_original_and_render_the_perturbed():
    drawn = draw_concepts({"animal": 4, "indoor": 4}, [0.0, 0.0, 1.0], seed=1)
    written = write_instructions(RunContext({}), drawn, None)
    assert (written["status"] == "ok").all()
    for row in written.itertuples():
        assert row.instruction == compose_instruction(row.domain, json.loads(row.concepts))
        assert parse_instruction(row.prompt, row.domain) == json.loads(row.perturbed_concepts)
        assert row.instruction != row.prompt


@pytest.fixture
def writer_params(params, tmp_path):
    from judgebias.config import validate_params

    params["journal_dir"] = str(tmp_path / "journal")
    params["frame"]["dataset"]["synthetic"]["writer"] = "lumen-large"
    return validate_params(params)


def test_a_writer_model_is_a_journaled_task_and_bad_answers_are_left_out(
        writer_params, monkeypatch, caplog):
    from judgebias.studies.frame import writer as writer_module
    from judgebias.studies.frame.writer import InstructionWriterTask, read_writer_prompt

    drawn = draw_concepts({"people": 3, "outdoor": 3}, [0.5, 0.5], seed=2)
    written = write_instructions(RunContext(writer_params), drawn, "lumen-large")
    assert (written["status"] == "ok").all()
    for row in written.itertuples():  # the sim writer answers with the template
        assert row.instruction == compose_instruction(row.domain, json.loads(row.concepts))

    # A writer that drops a concept for people and answers on two lines for outdoor.
    real = InstructionWriterTask.tokens

    def sloppy(self, backend, model, request):
        from judgebias.models.base import TokenLogprob

        domain, concepts = read_writer_prompt(request.prompt)
        text = compose_instruction(domain, concepts)
        text = "Sure!\n" + text if domain == "outdoor" else "Generate an image of a person."
        return [TokenLogprob(text, -0.1, ((text, -0.1),))]

    monkeypatch.setattr(InstructionWriterTask, "tokens", sloppy)
    caplog.set_level(logging.INFO)
    sloppy_params = {**writer_params, "journal_dir": writer_params["journal_dir"] + "-2"}
    bad = write_instructions(RunContext(sloppy_params), drawn, "lumen-large")
    assert set(bad.loc[bad["domain"] == "people", "status"]) == {
        writer_module.STATUS_LOST_CONCEPT}
    assert set(bad.loc[bad["domain"] == "outdoor", "status"]) == {
        writer_module.STATUS_MULTI_LINE}
    assert bad["instruction"].isna().all() and bad["prompt"].isna().all()
    assert "6 of 6 items left out" in caplog.text
    # never silently replaced by the template: the images stage skips them all
    assert generate_images(bad, "unused", {"backend": "offline"}, 0).empty
    monkeypatch.setattr(InstructionWriterTask, "tokens", real)


# -- stage 3 ------------------------------------------------------------------------------------


def _written(n: int = 2) -> pd.DataFrame:
    drawn = draw_concepts({"people": n, "outdoor": n}, [0.3, 0.4, 0.3], seed=4)
    return write_instructions(RunContext({}), drawn, None)


def test_offline_images_know_alignment_and_boxes(tmp_path):
    written = _written()
    written.loc[0, "status"] = "failed"
    images = generate_images(written, tmp_path / "images",
                             {"backend": "offline", "size": 128, "error_rate": 0.0}, 0)
    assert len(images) == len(written) - 1
    for row in images.itertuples():
        a, b = Image.open(row.image), Image.open(row.image_b)
        assert a.size == (128, 128) and b.size == (128, 128)
        assert not np.array_equal(np.asarray(a), np.asarray(b))  # set B: another seed
        truth = json.loads(row.concepts)
        rendered = json.loads(row.perturbed_concepts)
        expected = sum(truth[s] == rendered[s] for s in truth) / len(truth)
        assert row.alignment == pytest.approx(expected)  # no render errors at error_rate 0
        boxes = json.loads(row.boxes)
        assert isinstance(boxes, list)
        assert all(0 <= x0 < x1 <= 128 and 0 <= y0 < y1 <= 128 for x0, y0, x1, y1 in boxes)
    assert images.loc[images["domain"] == "people", "boxes"].map(json.loads).map(len).min() > 0


class CountingBackend:
    """A paid text-to-image model: counts its calls, refuses the prompts in `refuse`."""

    name = "paid"
    calls = 0
    refuse: frozenset[str] = frozenset()

    def describe(self):
        return {"backend": self.name, "model": "m", "size": "64x64", "quality": "standard"}

    def generate(self, prompt, seed):
        type(self).calls += 1
        if prompt in self.refuse:
            raise imagegen.ImageRefused("content policy")
        buffer = io.BytesIO()
        Image.new("RGB", (64, 64), (seed % 256, 0, 0)).save(buffer, format="PNG")
        return buffer.getvalue()


def test_paid_images_are_generated_once_and_refusals_left_out(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(imagegen, "backend", lambda spec: CountingBackend())
    written = _written(3)
    refused = written["item_id"] == "outdoor-001"
    monkeypatch.setattr(CountingBackend, "refuse", frozenset(written.loc[refused, "prompt"]))
    monkeypatch.setattr(CountingBackend, "calls", 0)
    spec = {"backend": "openai", "cache_dir": str(tmp_path / "cache")}
    caplog.set_level(logging.WARNING)
    first = generate_images(written, tmp_path / "images", spec, 0)
    assert CountingBackend.calls == 2 * (~refused).sum() + refused.sum()
    assert set(first["item_id"]) == set(written.loc[~refused, "item_id"])
    assert first["alignment"].isna().all() and first["boxes"].isna().all()
    assert "1 refused by the paid backend ['outdoor-001']" in caplog.text
    calls = CountingBackend.calls
    again = generate_images(written[~refused], tmp_path / "images-2", spec, 0)
    assert CountingBackend.calls == calls  # every image from the cache: zero calls
    assert [Path(p).read_bytes() for p in again["image"]] == [
        Path(p).read_bytes() for p in first["image"]]
    with pytest.raises(ValueError, match="simulated annotators need the true alignment"):
        attach_humans(first, seed=0)


# -- stage 4 ------------------------------------------------------------------------------------


def test_simulated_and_imported_human_scores_make_the_item_table(tmp_path):
    images = generate_images(_written(), tmp_path / "images", {"backend": "offline"}, 0)
    items = attach_humans(images, sds=(0.5, 0.7), bias=(0.0, 0.2), seed=1)
    write_table(items, tmp_path / "items.parquet", ITEMS)
    items = read_table(tmp_path / "items.parquet", ITEMS)
    assert list(items.columns) == ITEMS.names and (items["source"] == "synthetic").all()
    assert items["human_score"].between(1, 5).all()
    assert (items["human_score"] == (items["annotator_1"] + items["annotator_2"]) / 2).all()

    scores = tmp_path / "scores.csv"
    ids = list(images["item_id"])
    pd.DataFrame({"item_id": ids[:-1], "annotator_1": [2] * (len(ids) - 1),
                  "annotator_2": [5] * (len(ids) - 1)}).to_csv(scores, index=False)
    imported = attach_humans(images, scores=scores)
    assert list(imported["human_score"][:-1]) == [3.5] * (len(ids) - 1)
    assert pd.isna(imported["human_score"].iloc[-1])  # unscored: null, with a warning
    write_table(imported, tmp_path / "imported.parquet", ITEMS)

    pd.DataFrame({"item_id": ["nobody"], "human_score": [3]}).to_csv(scores, index=False)
    with pytest.raises(ValueError, match=r"scores.csv: row 1: item_id: 'nobody' is not in"):
        attach_humans(images, scores=scores)
    pd.DataFrame({"item_id": [ids[0]], "human_score": [6]}).to_csv(scores, index=False)
    with pytest.raises(ValueError, match=r"scores\.csv: row 1: human_score: 6\.0 is outside 1-5"):
        attach_humans(images, scores=scores)


# -- the FRAME table format ---------------------------------------------------------------------


def test_csv_and_json_lines_import(tmp_path):
    outdoor = {"domain": "outdoor", "annotator_1": "", "annotator_2": "",
               "human_score": 4.5, "boxes": "", "concepts": ""}
    rows = [GOOD, GOOD | outdoor | {"item_id": "o-1"}, GOOD | {"item_id": "p-2"},
            GOOD | outdoor | {"item_id": "o-2"}]
    items = read_frame_table(write_frame_csv(tmp_path, rows), tmp_path / "img")
    assert list(items.columns) == ITEMS.names
    assert list(items["human_score"]) == [2.5, 4.5, 2.5, 4.5]
    assert items.loc[0, "boxes"] == "[[1, 2, 30, 40]]" and pd.isna(items.loc[1, "boxes"])
    assert items.loc[1, "concepts"] == "{}" and (items["source"] == "frame.csv").all()
    write_table(items, tmp_path / "items.parquet", ITEMS)

    lines = tmp_path / "frame.jsonl"
    record = {**GOOD, "concepts": {"object": "Chef"}, "boxes": [[0, 0, 64, 48]],
              "image_b": "b.png", "perturbed_concepts": {"object": "Nurse"}, "n_perturbed": 1}
    write_png(tmp_path / "img" / "b.png")
    lines.write_text(json.dumps(record) + "\n\n" + json.dumps(record | {"item_id": "p-2"}))
    items = read_frame_table(lines, tmp_path / "img")
    assert list(items["item_id"]) == ["p-1", "p-2"]
    assert json.loads(items.loc[0, "concepts"]) == {"object": "Chef"}
    assert items.loc[0, "image_b"].endswith("b.png") and items.loc[0, "n_perturbed"] == 1
    bad = record | {"item_id": "p-3", "domain": "space"}
    lines.write_text(json.dumps(record) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=r"frame\.jsonl: row 3: domain: 'space'"):
        read_frame_table(lines, tmp_path / "img")  # JSON lines: the row is the line


@pytest.mark.parametrize(("change", "message"), [
    ({"domain": "space"}, "row 1: domain: 'space' is not one of"),
    ({"instruction": ""}, "row 1: instruction: missing"),
    ({"image": ""}, "row 1: image: missing"),
    ({"image": "b.png"}, "row 1: image: file .*b.png does not exist"),
    ({"annotator_1": 7}, "row 1: annotator_1: 7.0 is outside 1-5"),
    ({"annotator_2": ""}, r"row 1: annotator_2: missing \(two annotators"),
    ({"human_score": "high"}, "row 1: human_score: 'high' is not a number"),
    ({"boxes": "[[1, 2]]"}, r"row 1: boxes: must be a list of \[x0, y0, x1, y1\]"),
    ({"boxes": "[[30, 2, 10, 40]]"}, "row 1: boxes: box 1 .* need 0 <= x0 < x1"),
    ({"boxes": "[[1, 2, 30, 400]]"}, "row 1: boxes: box 1 .* outside the 64x48 image"),
    ({"boxes": "[[1, 2"}, "row 1: boxes: not JSON"),
    ({"concepts": json.dumps({"terrain": "Sea"})}, r"row 1: concepts: \['terrain'\] are not "
                                                   "people slots"),
])
def test_table_errors_name_file_row_and_key(tmp_path, change, message):
    path = write_frame_csv(tmp_path, [GOOD | change])
    with pytest.raises(ValueError, match="frame.csv: " + message):
        read_frame_table(path, tmp_path / "img")


def test_duplicate_ids_and_empty_tables_are_errors(tmp_path):
    with pytest.raises(ValueError, match=r"frame\.csv: row 2: item_id: 'p-1' is also row 1"):
        read_frame_table(write_frame_csv(tmp_path, [GOOD, GOOD]), tmp_path / "img")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ValueError, match=r"empty\.jsonl: the FRAME table has no rows"):
        read_frame_table(empty, tmp_path / "img")
