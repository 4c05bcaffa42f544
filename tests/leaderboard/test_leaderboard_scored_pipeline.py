"""A scored_images task of the leaderboard end to end, through Snakemake, on FRAME's
synthetic world: three simulated generators of planted alignment (one brightening every
image, a cosmetic edit) scored 0-5 by FRAME's simulated judge with the standard prompt
(seed 004 Fig. 4) and the bias-aware mitigation prompt (Fig. 5); a judge with no
susceptibility at all, where both orders follow the planted alignment; and the
incrementality of issue 43 (adding a system pays only for its own images' calls).

The judge's FRAME traits are set here, not taken from params.yaml: corvid-pro's default
brightness susceptibility (0.15 points at best, 0.9 of it kept by the bias-aware prompt)
plants a difference of 0.015 points between the two prompts, below what 15 images
resolve. Here it gains 1.0 point (before FRAME's saturation) at brightness 1.5, and the
bias-aware prompt keeps a fifth of it."""

from __future__ import annotations

import copy
import json
import os
from collections import Counter

import pandas as pd
import pytest
from helpers.project import (
    BIN,
    make_project,
    planned_jobs,
    run,
    study_params,
    undeclared_reads,
    write_params,
)

from judgebias.models.journal import Journal
from judgebias.studies.frame.sim import JudgeTraits, planted_change
from judgebias.workflow.paramsread import RECORD_ENV

TASK = "frame_images"
RESULTS = f"results/leaderboard/{TASK}"
DATA = f"data/leaderboard/{TASK}"
JUDGE = "corvid-pro"
EDIT = ("brightness", 1.5)
SUSCEPTIBLE = {"susceptibility": {"brightness": {"strength": 1.0, "best": 1.5}},
               "prompts": {"bias_aware": 0.2}}


def world(default_params: dict, traits: dict) -> dict:
    """The leaderboard alone, one scored_images task of 15 FRAME instructions and three
    systems (alignment 0.9; 0.6 and every image brightened; 0.3), the plain judge and its
    bias-aware prompt; the judge's FRAME traits updated with `traits`."""
    params = study_params(default_params, "leaderboard", small=True)
    params["panel"][JUDGE]["sim"]["frame"].update(copy.deepcopy(traits))
    board = params["leaderboard"]
    board["tasks"] = {TASK: {
        "kind": "scored_images",
        "prompts": {"synthetic": {"n_prompts": 15, "image_size": 128, "seed": 7}},
        "systems": {
            "faithful": {"synthetic": {"quality": 0.9}},
            "glossy": {"synthetic": {"quality": 0.6, "edit": f"{EDIT[0]}={EDIT[1]}"}},
            "poor": {"synthetic": {"quality": 0.3}}}}}
    board["methods"] = {"plain": {"kind": "single", "judge": JUDGE},
                        "mitigated": {"kind": "frame_mitigated", "judge": JUDGE,
                                      "mitigation": "bias_aware"}}
    board["baseline"] = "plain"
    return params


def journaled(project) -> int:
    """Responses in every journal of the project (only the judge calls here)."""
    total = 0
    for path in (project / ".judgebias/journal").rglob("*.sqlite"):
        with Journal(path) as journal:
            total += journal.count()
    return total


def lifts(project, params: dict) -> pd.DataFrame:
    """Per prompt and system: the mean of each image's score minus what its planted
    alignment earns from the judge (leniency + slope (a - 1/2), FRAME's sim); and the
    planted change of the system's edit under that prompt, averaged over its images."""
    traits = JudgeTraits.from_block(params["panel"][JUDGE]["sim"]["frame"])
    drawn = pd.read_parquet(project / f"{DATA}/drawn.parquet")
    instructions = pd.read_parquet(project / f"{DATA}/instructions.parquet")
    scores = pd.read_parquet(project / f"{DATA}/frame_scores/{JUDGE}.parquet")
    table = scores.merge(drawn, on=["item_id", "system"]).merge(
        instructions[["item_id", "domain"]], on="item_id")
    earned = traits.leniency + traits.slope * (table["alignment"] - 0.5)
    planted = [planted_change(traits, [EDIT] if edit != "original" else [], domain, prompt)
               for edit, domain, prompt in zip(table["edit"], table["domain"],
                                               table["prompt"], strict=True)]
    return table.assign(lift=table["score"] - earned, planted=planted).groupby(
        ["prompt", "system"])[["lift", "planted"]].mean()


def snakemake(project) -> None:
    run([str(BIN / "snakemake"), f"{RESULTS}/metrics.json", "--cores", "2", "--quiet"],
        project)


@pytest.fixture(scope="module")
def scored_project(tmp_path_factory, default_params):
    project = make_project(tmp_path_factory.mktemp("scored"),
                           world(default_params, SUSCEPTIBLE))
    records = tmp_path_factory.mktemp("reads")  # its own: other modules record too
    os.environ[RECORD_ENV] = str(records)
    try:
        snakemake(project)
    finally:
        del os.environ[RECORD_ENV]
    return project, records


@pytest.mark.slow
def test_the_plain_judge_lifts_the_edited_system_more_than_the_mitigated_prompt(
        scored_project, default_params):
    project, records = scored_project
    assert undeclared_reads(project, records, every_step=False) == {}
    params = world(default_params, SUSCEPTIBLE)
    found = lifts(project, params)
    plain, aware = found.loc["standard"], found.loc["bias_aware"]
    assert plain.loc["glossy", "planted"] > 0.6 > 0.3 > aware.loc["glossy", "planted"]
    for table in (plain, aware):  # each lift recovers the planted change (none unedited)
        assert (table["lift"] - table["planted"]).abs().max() < 0.25, table
    recovered = plain.loc["glossy", "lift"] - aware.loc["glossy", "lift"]
    assert recovered == pytest.approx(
        plain.loc["glossy", "planted"] - aware.loc["glossy", "planted"], abs=0.1)
    metrics = json.loads((project / RESULTS / "metrics.json").read_text())
    assert metrics["kind"] == "scored_images" and metrics["prompts"] == 15
    planted = metrics["planted_alignment"]
    assert planted["faithful"] > planted["glossy"] > planted["poor"]
    boards = pd.read_parquet(project / RESULTS / "systems.parquet").set_index(
        ["method", "system"])
    assert set(boards["unit"]) == {"FRAME score (0-5)"}
    shrink = (boards.loc[("plain", "glossy"), "mean"]
              - boards.loc[("mitigated", "glossy"), "mean"])
    assert shrink == pytest.approx(recovered, abs=1e-9)


@pytest.mark.slow
def test_adding_a_system_pays_only_for_its_images(scored_project, default_params):
    project, _ = scored_project
    params = world(default_params, SUSCEPTIBLE)
    before = journaled(project)
    added = copy.deepcopy(params)
    added["leaderboard"]["tasks"][TASK]["systems"]["new"] = {"synthetic": {"quality": 0.5}}
    write_params(project, added)
    planned = planned_jobs(project, f"{RESULTS}/metrics.json")
    assert Counter(rule for rule, _ in planned.elements()) == Counter({
        "leaderboard_renders": 1, "leaderboard_score": 1, "leaderboard_rank_scores": 1})
    snakemake(project)
    assert journaled(project) - before == 15 * 2  # its 15 images, under both prompts
    systems = pd.read_parquet(project / RESULTS / "systems.parquet")
    assert set(systems["system"]) == {"faithful", "glossy", "poor", "new"}


@pytest.mark.slow
def test_without_susceptibility_both_methods_order_the_systems_by_planted_alignment(
        tmp_path, default_params):
    params = world(default_params, {"susceptibility": {}})
    project = make_project(tmp_path, params)
    snakemake(project)
    metrics = json.loads((project / RESULTS / "metrics.json").read_text())
    planted = metrics["planted_alignment"]
    truth = sorted(planted, key=planted.get, reverse=True)
    for method in ("plain", "mitigated"):
        means = metrics["methods"][method]["systems"]
        assert sorted(means, key=lambda s: means[s]["mean"], reverse=True) == truth, method
    found = lifts(project, params)
    assert (found["planted"] == 0).all()
    assert found["lift"].abs().max() < 0.25  # the edit earns nothing
    pairs = pd.read_parquet(project / RESULTS / "pairs.parquet").set_index(
        ["method", "system_a", "system_b"])
    for method in ("plain", "mitigated"):
        assert pairs.loc[(method, "faithful", "poor"), "low"] > 0  # decided, both ways
    assert metrics["order_changes"] == []
