"""FRAME's real-data path end to end (issue 19): an imported FRAME table (CSV, the format
judgebias.studies.frame.data documents) with real PNG and JPEG files, run through
Snakemake with two simulated judges to the report. The pictures and instructions come
from the offline renderer's vocabulary, because a simulated judge reads only the prompt
text and the pixels (as a real one would) and knows nothing else of the item."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.data_inputs import (
    assert_edits_rerun,
    data_deps,
    edit_csv,
    recorded_project,
    repaint,
)
from helpers.project import BIN, make_project, run, study_params

from judgebias.studies.frame import scene
from judgebias.studies.frame.concepts import compose_instruction, sample_concepts

DOMAINS = {"people": 4, "animal": 4, "outdoor": 4}
JUDGES = ["corvid-pro", "lumen-mini"]  # corvid-pro is the analysis judge


def frame_table(root: Path) -> Path:
    """A FRAME table: set A as PNG in a folder per domain, set B as JPEG, two annotators'
    scores, the concepts, and the boxes the renderer drew (outdoor scenes have none)."""
    rng = np.random.default_rng(19)
    rows = []
    for domain, n in DOMAINS.items():
        for i in range(n):
            item = f"{domain}-{i}"
            concepts = sample_concepts(domain, rng)
            instruction = compose_instruction(domain, concepts)
            first = scene.render(instruction, size=128, seed=i)
            second = scene.render(instruction, size=128, seed=100 + i)
            (root / domain).mkdir(parents=True, exist_ok=True)
            first.image.save(root / domain / f"{item}.png")
            second.image.save(root / domain / f"{item}-b.jpg", quality=95)
            rows.append({"item_id": item, "domain": domain, "instruction": instruction,
                         "image": f"{domain}/{item}.png", "image_b": f"{domain}/{item}-b.jpg",
                         "annotator_1": 1 + i, "annotator_2": min(5, 2 + i),
                         "concepts": json.dumps(concepts),
                         "boxes": json.dumps([[int(v) for v in box] for box in first.boxes])
                         if first.boxes else ""})
    path = root / "frame.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_an_imported_frame_table_runs_through_snakemake_to_the_report(tmp_path,
                                                                      default_params):
    table = frame_table(tmp_path / "FRAME")
    params = study_params(default_params, "frame")
    block = params["frame"]
    block["models"] = JUDGES
    block["dataset"] = {"name": "table", "table": {"path": str(table),
                                                   "image_root": str(table.parent)}}
    block["manipulations"] = {"brightness": [1.5, 2.0], "instruction_overlay": ["center"],
                              "bounding_box": ["annotated"]}
    block["combinations"] = [2]
    block["analysis"]["n_permutations"] = 100
    project = tmp_path / "project"
    project.mkdir()
    make_project(project, params)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)

    summary = json.loads((project / "data/frame/summary.json").read_text())
    assert summary["items"] == 12 and summary["per_domain"] == DOMAINS
    items = pd.read_parquet(project / "data/frame/items.parquet")
    assert items["human_score"].tolist()[:4] == [1.5, 2.5, 3.5, 4.5]
    assert all(Path(p).is_file() for p in [*items["image"], *items["image_b"]])
    # one image per (item, setting); the bounding box does not apply to outdoor scenes
    expected = {"original": 12, "brightness": 24, "instruction_overlay": 12,
                "bounding_box": 8}
    for judge in JUDGES:
        for name, n in expected.items():
            scores = pd.read_parquet(project / f"data/frame/scores/{judge}/{name}.parquet")
            assert scores["status"].value_counts().to_dict() == {"ok": n}, (judge, name)
    # Table 6: pairs of the analysis judge's best single recipes, per domain (3 apply to
    # people and animal: 3 pairs; 2 to outdoor: 1 pair), for each of the domain's 4 items
    combinations = pd.read_parquet(project / "data/frame/followup/combinations.parquet")
    assert len(combinations) == 4 * (3 + 3 + 1)
    # Fig. 3: every item, original and manipulated set A against set B, in both orders
    pairwise = pd.read_parquet(project / "data/frame/followup/pairwise.parquet")
    assert len(pairwise) == 12 * 2 * 2 and pairwise["verdict"].notna().all()
    metrics = json.loads((project / "results/frame/metrics.json").read_text())
    assert metrics["items"] == DOMAINS and set(metrics["judges"]) == set(JUDGES)
    html = (project / "results/report.html").read_text()
    assert "FRAME: visual manipulations that inflate LVLM judges" in html
    assert f"FRAME table {table} (12 items)." in html


@pytest.mark.slow
def test_an_edited_score_or_image_reruns_the_items_through_both_doors(tmp_path,
                                                                      default_params):
    """The items step declares the FRAME table and every image under its image_root
    (issue 39 item 1): a corrected human score or a replaced image (set A or set B) reruns
    the items job and everything after it (Snakemake) and names the items stage (`dvc
    status`), and nothing else; untouched, the files plan nothing."""
    table = frame_table(tmp_path / "FRAME")
    params = study_params(default_params, "frame")
    block = params["frame"]
    block["models"] = JUDGES[:1]
    block["analysis_judge"] = JUDGES[0]
    block["dataset"] = {"name": "table", "table": {"path": str(table),
                                                   "image_root": str(table.parent)}}
    block["manipulations"] = {"brightness": [1.5], "instruction_overlay": ["center"]}
    block["combinations"] = [2]
    block["analysis"]["n_permutations"] = 100
    project = recorded_project(tmp_path / "project", params)
    assert data_deps(project, "frame_items") == {str(table.parent)}  # one folder
    assert_edits_rerun(project, [(table, edit_csv(0, "annotator_1", "5")),
                                 (table.parent / "animal/animal-1.png", repaint),
                                 (table.parent / "outdoor/outdoor-2-b.jpg", repaint)],
                       "frame_items", "frame_items")
