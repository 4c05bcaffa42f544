"""BIRCH's real-data paths end to end (issue 19): a handful of rows in each published
format (VL-RewardBench's ``data.jsonl`` with its ``images/`` folder; an MLLM-as-a-Judge
pair file), with real PNG and JPEG files written by Pillow, run through Snakemake with
simulated judges to the report. The real-format importers are unit-tested in
tests/birch/test_birch_importers.py; here they run as the pipeline runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from helpers.birch import jsonl, real_dataset
from helpers.data_inputs import (
    assert_edits_rerun,
    data_deps,
    recorded_project,
    repaint,
    replace_text,
)
from helpers.project import BIN, make_project, planned_jobs, run, study_params, write_params
from PIL import Image, ImageDraw

from judgebias.studies.birch import vqa

JUDGES = ["corvid-pro", "lumen-mini"]  # corvid-pro is also the labeller and lengthener


def write_image(path: Path, colour: tuple[int, int, int]) -> None:
    """A small real picture (a coloured disc on grey), PNG or JPEG by its suffix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", (96, 72), (128, 128, 128))
    ImageDraw.Draw(image).ellipse([20, 10, 76, 62], fill=colour)
    image.save(path)


COLOURS = [(200, 30, 30), (30, 160, 60), (40, 60, 200), (220, 200, 40), (150, 60, 170)]


def vl_rewardbench(root: Path) -> Path:
    """Five VL-RewardBench rows of the released shape (ranks, 0 = preferred; one row
    without ``query_source``; one id repeated with other answers, as the real file does)
    and their images under ``images/<sub-dataset>/``."""
    folders = ["rlaif-v", "vlfeedback", "wildvision-battle", "rlaif-v", "rlaif-v"]
    rows = []
    for i, (folder, colour) in enumerate(zip(folders, COLOURS, strict=True)):
        image = f"images/{folder}/item-{i}.{'jpg' if i % 2 else 'png'}"
        write_image(root / image, colour)
        answers = [f"The disc is coloured {colour}, large and centred on a grey background, "
                   "with nothing else in view.", "It is grey."]
        rows.append({
            "id": "mathverse-7" if i >= 3 else f"{folder}-{i}", "image_path": image,
            "query": f"What colour is the disc in picture {i}?",
            "response": answers if i % 2 == 0 else answers[::-1],
            "human_ranking": [0, 1] if i % 2 == 0 else [1, 0],  # the disc's colour wins
            "models": ["VisualGLM-6b", "Qwen-VL-Chat"], "judge": "human",
            "rationale": None, "meta": {"note": "majority vote"},
            "human_error_analysis": ["recognition(object)"],
            **({} if i == 2 else {"query_source": folder})})
    return jsonl(root / "data.jsonl", rows)


def mllm_judge(root: Path) -> Path:
    """Four MLLM-as-a-Judge pair rows (the full file's ``human`` label; C is a tie)."""
    rows = []
    for i, (label, colour) in enumerate(zip("ABCA", COLOURS, strict=False)):
        image = f"COCO/{i:012d}.{'png' if i % 2 else 'jpg'}"
        write_image(root / image, colour)
        rows.append({
            "id": i, "pair_id": 0, "image_path": image, "original_dataset": "COCO",
            "instruction": f"Describe the disc in picture {i}.",
            "answer1": {"name": "gpt-4v", "answer": f"A {colour} disc on grey."},
            "answer2": {"name": "llava-1.5", "answer": "A square box."},
            "human": label})
    return jsonl(root / "pair.jsonl", rows)


def real_params(default_params: dict, datasets: dict[str, Any], judges: list[str],
                variants: list[str] | None = None) -> dict:
    params = study_params(default_params, "birch", small=True)
    params["birch"]["models"] = judges
    params["birch"]["datasets"] = datasets
    if variants:
        params["birch"]["variants"] = variants
    return params


def real_project(tmp_path: Path, default_params: dict, datasets: dict[str, Any],
                 judges: list[str], variants: list[str] | None = None) -> Path:
    return run_project(tmp_path, real_params(default_params, datasets, judges, variants))


def run_project(tmp_path: Path, params: dict) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    make_project(project, params)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    return project


def verdict_statuses(project: Path, name: str, judges: list[str], variants: list[str]
                     ) -> dict:
    return {(j, v): pd.read_parquet(project / f"data/birch/{name}/verdicts/{j}/{v}.parquet")
            ["status"].value_counts().to_dict() for j in judges for v in variants}


@pytest.mark.slow
def test_vl_rewardbench_runs_through_snakemake_to_the_report(tmp_path, default_params):
    source = vl_rewardbench(tmp_path / "VL-RewardBench")
    project = real_project(tmp_path, default_params, {"vlrb": real_dataset(
        "vl_rewardbench", source, source.parent)}, JUDGES)
    summary = json.loads((project / "data/birch/vlrb/summary.json").read_text())
    assert summary["pairs"] == 5 and summary["source"] == "vl_rewardbench"
    assert summary["domains"] == {"rlaif-v": 3, "vlfeedback": 1, "wildvision-battle": 1}
    pairs = pd.read_parquet(project / "data/birch/vlrb/pairs.parquet").set_index("pair_id")
    assert sorted(pairs.index)[:2] == ["mathverse-7#1", "mathverse-7#2"]
    # the human's choice, mapped through the shown order, is always the disc's colour
    chosen = [row[f"answer_{row['preference'].lower()}"] for _, row in pairs.iterrows()]
    assert all(text.startswith("The disc is coloured") for text in chosen)
    assert all(Path(image).is_file() for image in pairs["image"])
    variants = ["base", "no_image", "caption", "standard_ref", "birch", "equalised"]
    statuses = verdict_statuses(project, "vlrb", JUDGES, variants)
    assert all(counts == {"ok": 5} for counts in statuses.values()), statuses
    metrics = json.loads((project / "results/birch/vlrb/metrics.json").read_text())
    assert metrics["counts"]["pairs"] == 5 and metrics["counts"]["human_ties"] == 0
    assert set(metrics["judges"]) == set(JUDGES)
    html = (project / "results/report.html").read_text()
    assert "BIRCH: image reliance, informativeness bias" in html
    assert "vlrb: 5 pairwise VQA items (vl_rewardbench); human ties dropped: 0." in html


@pytest.mark.slow
def test_an_edited_label_or_image_reruns_its_dataset_through_both_doors(tmp_path,
                                                                        default_params):
    """The data step declares the benchmark file and every image under its folder
    (issue 39 item 1): a corrected label or a replaced image reruns the dataset's jobs
    (Snakemake) and names its data stage (`dvc status`), and nothing else; untouched, the
    files plan nothing."""
    source = vl_rewardbench(tmp_path / "VL-RewardBench")
    params = real_params(default_params, {"vlrb": real_dataset(
        "vl_rewardbench", source, source.parent)}, JUDGES[:1], ["base", "no_image"])
    project = recorded_project(tmp_path / "project", params)
    assert data_deps(project, "birch_data__vlrb") == {str(source.parent)}  # one folder
    assert_edits_rerun(project, [(source, replace_text('"human_ranking": [0, 1]',
                                                       '"human_ranking": [1, 0]')),
                                 (source.parent / "images/rlaif-v/item-0.png", repaint)],
                       "birch_data", "birch_data__vlrb")


PRICING = {"input_per_mtok": 2.5, "output_per_mtok": 10.0}


@pytest.mark.slow
def test_two_benchmarks_in_one_run_mllm_as_a_judge_beside_synthetic(tmp_path, default_params):
    """An MLLM-as-a-Judge pair file and a small synthetic set in one run (issue 20 item
    7): each its own files, Tables 1-3 side by side in the report, Fig. 11, Table 5
    (scored only where a truth is planted) and Table 6 from the journal; adding a third
    dataset plans only its own jobs."""
    source = mllm_judge(tmp_path / "MLLM-as-a-Judge")
    variants = ["base", "no_image", "birch"]
    params = real_params(default_params, {
        "mllm": real_dataset("mllm_judge", source, source.parent, order_seed=None),
        "syn": {"format": "synthetic", "n_pairs": 30}}, JUDGES[:1], variants)
    params["panel"][JUDGES[0]]["pricing"] = PRICING
    project = run_project(tmp_path, params)
    pairs = pd.read_parquet(project / "data/birch/mllm/pairs.parquet")
    assert pairs["pair_id"].tolist() == ["0:0", "1:0", "2:0", "3:0"]
    assert pairs["preference"].tolist() == ["A", "B", "tie", "A"]  # the file's order kept
    assert set(pairs["domain"]) == {"COCO"} and set(pairs["model_a"]) == {"gpt-4v"}
    statuses = verdict_statuses(project, "mllm", JUDGES[:1], variants)
    assert all(sum(counts.values()) == 4 for counts in statuses.values()), statuses
    metrics = json.loads((project / "results/birch/mllm/metrics.json").read_text())
    assert metrics["counts"]["pairs"] == 4 and metrics["counts"]["human_ties"] == 1
    accuracy = pd.read_parquet(project / "results/birch/mllm/accuracy.parquet")
    assert (accuracy["n_human_tie"] == 1).all()  # the tie is dropped from every verdict job
    html = (project / "results/report.html").read_text()
    assert "mllm: 4 pairwise VQA items (mllm_judge); human ties dropped: 1." in html
    assert "syn: 30 pairwise VQA items (synthetic)" in html
    assert "Benchmarks side by side (Tables 1-3)" in html
    for caption in ("Fig. 11 analogue", "Table 5 analogue", "Table 6 analogue"):
        assert html.count(caption) >= 2, caption  # once per dataset
    check_supplement(project)
    # a third dataset: only its own jobs (and the card and the report) are planned
    params["birch"]["datasets"]["syn2"] = {"format": "synthetic", "n_pairs": 8, "seed": 5}
    write_params(project, params)
    planned = planned_jobs(project)
    assert {dict(wildcards).get("birch_dataset") for rule, wildcards in planned
            if rule not in ("card", "report")} == {"syn2"}
    assert {rule for rule, _ in planned} == {"birch_data", "birch_label", "birch_prepare",
                                             "birch_judge", "birch_analysis",
                                             "birch_supplement", "card", "report"}


def check_supplement(project: Path) -> None:
    """Fig. 11, Table 5 and Table 6 of both datasets, against what the sim plants."""
    results = project / "results/birch"
    fig11 = {name: pd.read_parquet(results / name / "fig11.parquet") for name in ("mllm", "syn")}
    assert fig11["mllm"][["domain", "n_pairs"]].values.tolist() == [["COCO", 3]]  # tie out
    assert set(fig11["syn"]["domain"]) <= set(vqa.DOMAINS)
    assert fig11["syn"]["n_pairs"].sum() <= 30
    assert (results / "syn/figures/fig11.png").stat().st_size > 1000
    assert pd.read_parquet(results / "mllm/table5.parquet").empty  # no planted truth
    table5 = pd.read_parquet(results / "syn/table5.parquet").set_index("text")
    assert list(table5.index) == ["Answer 1", "Answer 2", "Anchor"]
    # corvid-pro (perception 0.9) repairs false claims: its anchors are truer than either
    assert table5.loc["Anchor", "truthful"] > table5.loc[["Answer 1", "Answer 2"],
                                                         "truthful"].max()
    for name, n_pairs in (("mllm", 4), ("syn", 30)):
        table6 = pd.read_parquet(results / name / "table6.parquet").set_index("method")
        assert (table6["n_pairs"] == n_pairs).all()
        assert (table6["calls_without_usage"] == 0).all()
        # BIRCH makes one extra pass (§6.5): two calls per pair against Base's one
        assert table6["calls_per_pair"].to_dict() == {"base": 1, "no_image": 1, "birch": 2}
        # the sim counts 256 prompt tokens per image: dropping the image saves at least that
        assert (table6.loc["base", "prompt_tokens_per_pair"]
                - table6.loc["no_image", "prompt_tokens_per_pair"]) >= 256
        cost = (table6["prompt_tokens"] * PRICING["input_per_mtok"]
                + table6["completion_tokens"] * PRICING["output_per_mtok"]) / 1e6 / n_pairs
        assert table6["cost_per_pair"].tolist() == pytest.approx(cost.tolist())
