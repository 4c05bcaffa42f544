"""An images task of the leaderboard end to end, through Snakemake, on MMB's small
synthetic world: three simulated generators of planted quality compared pairwise by the
MMB study's simulated judge, plain (one instruction) and through its saved MMB fit, with
the triage of the new pairs; a judge with no bias at all where both must agree; and the
incrementality of issue 43 item 6 (adding a system pays only for its own pairs; a refit
of MMB reruns no comparison)."""

from __future__ import annotations

import copy
import json
import os
from collections import Counter

import pandas as pd
import pytest
from helpers.project import (
    BIN,
    job,
    make_project,
    planned_jobs,
    run,
    small_mmb,
    study_params,
    undeclared_reads,
    write_params,
)

from judgebias.models.journal import Journal
from judgebias.workflow.paramsread import RECORD_ENV

TASK = "pictures"
RESULTS = f"results/leaderboard/{TASK}"
JUDGE = "corvid-pro"


def world(default_params: dict) -> dict:
    """MMB at its small size and the leaderboard's images task alone, with 16 prompts and
    generators of planted quality 0.9, 0.6 and 0.3."""
    params = study_params(default_params, "mmb", "leaderboard", small=True)
    small_mmb(params)
    board = params["leaderboard"]
    board["tasks"] = {TASK: board["tasks"][TASK]}
    board["tasks"][TASK]["prompts"]["synthetic"]["n_prompts"] = 16
    board["tasks"][TASK]["systems"] = {
        "good": {"synthetic": {"quality": 0.9, "spread": 0.05}},
        "fair": {"synthetic": {"quality": 0.6, "spread": 0.05}},
        "poor": {"synthetic": {"quality": 0.3, "spread": 0.05}}}
    board["methods"] = {"plain": {"kind": "single", "judge": JUDGE},
                        "mmb": {"kind": "mmb", "judge": JUDGE}}
    return params


def unbiased(params: dict) -> dict:
    """The judge with no bias at all: every instruction is the simulated humans' own law
    (judgebias.studies.mmb.sim: miscalibrated 0, no position or brightness bias)."""
    params = copy.deepcopy(params)
    params["panel"][JUDGE]["sim"]["mmb"].update(miscalibrated=0.0, position_bias=0.0,
                                                 brightness_bias=0.0)
    return params


def journaled(project) -> int:
    """Responses in every journal of the project (only the judge calls here)."""
    total = 0
    for path in (project / ".judgebias/journal").rglob("*.sqlite"):
        with Journal(path) as journal:
            total += journal.count()
    return total


@pytest.fixture(scope="module")
def images_project(tmp_path_factory, default_params):
    project = make_project(tmp_path_factory.mktemp("images"), world(default_params))
    records = tmp_path_factory.mktemp("reads")  # its own: other modules record too
    os.environ[RECORD_ENV] = str(records)
    try:
        run([str(BIN / "snakemake"), f"{RESULTS}/metrics.json", "--cores", "2", "--quiet"],
            project)
    finally:
        del os.environ[RECORD_ENV]
    return project, records


@pytest.mark.slow
def test_images_task_ranks_by_plain_and_calibrated_judges_with_triage(images_project):
    project, records = images_project
    assert undeclared_reads(project, records, every_step=False) == {}
    metrics = json.loads((project / RESULTS / "metrics.json").read_text())
    planted = metrics["planted_win_rate"]
    assert planted["good"] > planted["fair"] > planted["poor"]
    systems = pd.read_parquet(project / RESULTS / "systems.parquet").set_index(
        ["method", "system"])
    assert set(systems.index.get_level_values("method")) == {"plain", "mmb"}
    pairs = pd.read_parquet(project / RESULTS / "pairs.parquet").set_index(
        ["method", "system_a", "system_b"])
    assert pairs.loc[("mmb", "good", "poor"), "low"] > 0  # the planted order, decided
    triage = pd.read_parquet(project / RESULTS / "triage.parquet")
    assert len(triage) == 16 * 3 and set(triage["method"]) == {"mmb"}
    summary = metrics["triage"]["mmb"]
    assert summary["decided"] + summary["for_humans"] == 48
    assert summary["decided"] == int(triage["decided"].sum())
    if summary["threshold"] is not None:
        assert (triage.loc[triage["decided"], "confidence"] >= summary["threshold"]).all()
    printed = run([str(BIN / "judgebias"), "leaderboard"], project).stdout
    assert "== pictures (images task; baseline: plain, the plain judge) ==" in printed
    assert f"triage (mmb): {summary['decided']} pairs decided" in printed


@pytest.mark.slow
def test_adding_a_system_pays_only_for_its_pairs_and_a_refit_compares_nothing(
        images_project, default_params):
    project, _ = images_project
    params = world(default_params)
    refit = copy.deepcopy(params)
    refit["mmb"]["report"]["k"] = 1
    write_params(project, refit)
    planned = planned_jobs(project, f"{RESULTS}/metrics.json")
    assert not any(rule == "leaderboard_compare" for rule, _ in planned)
    assert planned[job("leaderboard_rank_pairs", task=TASK)] == 1
    assert planned[job("mmb_save", judge=JUDGE)] == 1

    write_params(project, params)
    before = journaled(project)
    added = copy.deepcopy(params)
    added["leaderboard"]["tasks"][TASK]["systems"]["new"] = {"synthetic": {"quality": 0.5}}
    write_params(project, added)
    planned = planned_jobs(project, f"{RESULTS}/metrics.json")
    assert Counter(rule for rule, _ in planned.elements()) == Counter({
        "leaderboard_pictures": 1, "leaderboard_embed": 1, "leaderboard_compare": 1,
        "leaderboard_rank_pairs": 1})
    run([str(BIN / "snakemake"), f"{RESULTS}/metrics.json", "--cores", "2", "--quiet"],
        project)
    verdicts = pd.read_parquet(project / f"data/leaderboard/{TASK}/verdicts/{JUDGE}.parquet")
    new_rows = verdicts[(verdicts["system_a"] == "new") | (verdicts["system_b"] == "new")]
    assert journaled(project) - before == len(new_rows) > 0  # both orders, every instruction


@pytest.mark.slow
def test_without_judge_bias_the_calibrated_and_plain_judges_agree(tmp_path, default_params):
    params = unbiased(world(default_params))
    params["leaderboard"]["tasks"][TASK]["prompts"]["synthetic"]["n_prompts"] = 8
    project = make_project(tmp_path, params)
    run([str(BIN / "snakemake"), f"{RESULTS}/metrics.json", "--cores", "2", "--quiet"],
        project)
    pairs = pd.read_parquet(project / RESULTS / "pairs.parquet").set_index(
        ["method", "system_a", "system_b"])
    for a, b in (("good", "fair"), ("good", "poor"), ("fair", "poor")):
        plain, calibrated = pairs.loc[("plain", a, b)], pairs.loc[("mmb", a, b)]
        assert plain["difference"] > 0 and calibrated["difference"] > 0, (a, b)
        assert calibrated["low"] > 0, (a, b)  # the planted order, decided
