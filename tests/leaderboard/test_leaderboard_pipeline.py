"""The leaderboard through Snakemake, on the simulated panel, in worlds the default does
not use: a judge with a strong planted self-preference (the plain judge lifts its own
system; leaving out its family, or Pomms, removes the lift; every method recovers the
planted quality order), and a panel without any bias (every method agrees with the plain
judge). The run records what each step reads of params (every read declared), and dry
runs say what reruns: a new system runs its captions, the judges and the leaderboard,
never the audit; a Pomms refit reruns the leaderboard, never a judge call."""

from __future__ import annotations

import copy

import pandas as pd
import pytest
from helpers.project import (
    BIN,
    captions_leaderboard,
    make_project,
    planned_jobs,
    run,
    study_params,
    undeclared_reads,
    write_params,
)

from judgebias.workflow.paramsread import RECORD_ENV

RESULTS = "results/leaderboard/captions"


def world(default_params: dict, self_preference: float) -> dict:
    """Philautia, Pomms and the leaderboard, small; corvid-pro's planted self-preference
    set to `self_preference`; systems of planted quality 0.95 (good) and 0.4 (poor)
    beside corvid-pro's own captions."""
    params = study_params(default_params, "philautia", "pomms", "leaderboard", small=True)
    captions_leaderboard(params)
    task = params["leaderboard"]["tasks"]["captions"]
    task["images"]["synthetic"]["n_images"] = 16
    task["systems"] = {"corvid-pro": {"model": "corvid-pro"},
                       "good": {"synthetic": {"quality": 0.95}},
                       "poor": {"synthetic": {"quality": 0.4}}}
    params["panel"]["corvid-pro"]["sim"]["self_preference"] = self_preference
    return params


def without_bias(params: dict) -> dict:
    params = copy.deepcopy(params)
    for model in params["panel"].values():
        model["sim"].update(self_preference=0.0, preferences={})
    return params


def tables(project) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    folder = project / RESULTS
    return (pd.read_parquet(folder / "systems.parquet").set_index(["method", "system"]),
            pd.read_parquet(folder / "pairs.parquet").set_index(
                ["method", "system_a", "system_b"]),
            pd.read_parquet(folder / "changes.parquet"))


@pytest.mark.slow
def test_leaderboard_removes_a_planted_self_preference_and_agrees_without_one(
        tmp_path, default_params, monkeypatch):
    params = world(default_params, self_preference=0.25)
    project = make_project(tmp_path, params)
    monkeypatch.setenv(RECORD_ENV, str(tmp_path / "reads"))
    run([str(BIN / "snakemake"), f"{RESULTS}/metrics.json", "--cores", "2", "--quiet"],
        project)
    monkeypatch.delenv(RECORD_ENV)
    assert undeclared_reads(project, tmp_path / "reads", every_step=False) == {}

    systems, pairs, changes = tables(project)
    methods = systems.index.get_level_values("method").unique()
    assert list(methods) == ["plain", "panel", "panel_no_family", "pomms"]
    for method in methods:  # the planted quality order, by every method
        assert pairs.loc[(method, "good", "poor"), "low"] > 0, method
    lift = {m: pairs.loc[(m, "corvid-pro", "good"), "difference"] for m in methods}
    # 25 points planted on corvid-pro's own captions, seen by the plain judge (itself)
    # alone; leaving out corvid's family removes it (the panel mean dilutes it to 1/6)
    assert lift["plain"] - lift["panel_no_family"] > 12, lift
    assert (systems.loc[("plain", "corvid-pro"), "rank"]
            < systems.loc[("panel_no_family", "corvid-pro"), "rank"])
    assert "panel_no_family" in set(changes["method"])  # said in words
    # (Pomms is not asserted to remove it: fitted on captions no panel model wrote, it
    # may pick the biased judge as a member and carry part of its lift; the note says so)

    # What reruns: a Pomms refit, only the leaderboard (never a judge call); a new system,
    # its outputs and the judges' jobs (the journal answers every older request) and the
    # leaderboard, never the audit's jobs.
    refit = copy.deepcopy(params)
    refit["pomms"]["alpha"] = 0.01
    write_params(project, refit)
    rules = {rule for rule, _ in planned_jobs(project, f"{RESULTS}/metrics.json")}
    assert rules == {"pomms", "leaderboard_rank"}
    grown = copy.deepcopy(params)
    grown["leaderboard"]["tasks"]["captions"]["systems"]["lumen-large"] = {
        "model": "lumen-large"}
    write_params(project, grown)
    rules = {rule for rule, _ in planned_jobs(project, f"{RESULTS}/metrics.json")}
    assert rules == {"leaderboard_caption", "leaderboard_outputs", "leaderboard_labels",
                     "leaderboard_judge", "leaderboard_rank"}

    # No bias anywhere: every method agrees with the plain judge within its intervals.
    write_params(project, without_bias(params))
    run([str(BIN / "snakemake"), f"{RESULTS}/metrics.json", "--cores", "2", "--quiet"],
        project)
    systems, pairs, changes = tables(project)
    assert not (changes["significant"] & changes["baseline_significant"]).any(), changes
    for method in methods:
        assert pairs.loc[(method, "good", "poor"), "low"] > 0, method
