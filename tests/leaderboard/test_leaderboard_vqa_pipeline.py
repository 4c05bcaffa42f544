"""A vqa task of the leaderboard end to end, through Snakemake, on BIRCH's synthetic world
(seed 003): three simulated systems of planted correctness and informativeness, compared
pairwise by a simulated BIRCH judge plainly (Base) and with BIRCH's anchor; a judge with
no bias at all where both must agree with the planted order; and the incrementality of
issue 43 (adding a system pays only for its own pairs).

The biased judge is set up here, not taken from the default panel: the default
corvid-pro (perception 0.9, image_use 0.3, informativeness 1.0, correctness 2.0, length
0.15) is fooled by an extra detail and BIRCH moves it towards the planted order, but at
a test's size the two do not separate (measured on careful vs chatty, P(careful
preferred): planted 0.58 / 0.65, Base 0.38 / 0.28, BIRCH 0.33 / 0.42 at 24 / 300 items).
The judge here is BIRCH's "nearly blind" judge (seed 003 §4.1) pushed to its end: it
never checks a fact against the image while judging (image_use 0), weighs an extra fact
more than the planted humans do and favours the answer shown first, yet reads the image
perfectly when it writes the anchor (perception 1) and trusts the anchor (Fig. 21)."""

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

from judgebias.config import validate_params
from judgebias.models.context import RunContext
from judgebias.models.journal import Journal, request_key
from judgebias.models.registry import backend_version
from judgebias.studies.leaderboard.vqa import planned_calls
from judgebias.workflow.paramsread import RECORD_ENV

TASK = "answers"
RESULTS = f"results/leaderboard/{TASK}"
DATA = f"data/leaderboard/{TASK}"
JUDGE = "corvid-pro"
N_ITEMS = 24
# Fooled by detail (Base), saved by the anchor (BIRCH): see the module docstring.
BIASED = {"perception": 1.0, "image_use": 0.0, "informativeness": 1.5, "correctness": 4.0,
          "reference_trust": 1.0, "length": 0.0, "position_bias": 0.5, "noise": 0.3}
# The planted humans' own rule (birch.data.synthetic.human_preference): every false fact
# seen and heavily penalised, an extra fact a small plus (it breaks ties between equally
# correct answers, as the humans do; a weight of 0 would leave those pairs to chance and
# disagree with them), no length or position pull, little noise.
UNBIASED = {"perception": 1.0, "image_use": 1.0, "informativeness": 1.0,
            "correctness": 10.0, "reference_trust": 1.0, "omission": 0.0, "length": 0.0,
            "position_bias": 0.0, "noise": 0.1}


def world(default_params: dict, traits: dict) -> dict:
    """The leaderboard's vqa task alone on 24 of BIRCH's synthetic questions: careful
    (right 90%, no extra detail), chatty (right 30%, one extra fact and two filler
    sentences: informative but often wrong) and poor (right 30%, nothing extra); methods
    plain (single: Base) and birch, both judged by corvid-pro with `traits`."""
    params = study_params(default_params, "leaderboard", small=True)
    params["panel"][JUDGE]["sim"]["birch"] = dict(traits)
    board = params["leaderboard"]
    board["tasks"] = {TASK: {"kind": "vqa",
                             "questions": {"synthetic": {"n_items": N_ITEMS, "seed": 5}},
                             "systems": {
                                 "careful": {"synthetic": {"quality": 0.9}},
                                 "chatty": {"synthetic": {"quality": 0.3, "details": 1,
                                                          "padding": 2}},
                                 "poor": {"synthetic": {"quality": 0.3}}}}}
    board["methods"] = {"plain": {"kind": "single", "judge": JUDGE},
                        "birch": {"kind": "birch", "judge": JUDGE}}
    board["baseline"] = "plain"
    return params


def snakemake(project) -> None:
    run([str(BIN / "snakemake"), f"{RESULTS}/metrics.json", "--cores", "2", "--quiet"],
        project)


def pairs_of(project) -> pd.DataFrame:
    return pd.read_parquet(project / RESULTS / "pairs.parquet").set_index(
        ["method", "system_a", "system_b"])


def journaled(project) -> int:
    """Responses in every journal of the project (only the judge's calls here)."""
    total = 0
    for path in (project / ".judgebias/journal").rglob("*.sqlite"):
        with Journal(path) as journal:
            total += journal.count()
    return total


def request_keys(project) -> pd.DataFrame:
    """Every call's request key with the pair it was made for (anchors and verdicts)."""
    files = [project / DATA / "anchors" / f"{JUDGE}.parquet",
             *(project / DATA / "answer_verdicts" / JUDGE / f"{v}.parquet"
               for v in ("base", "birch"))]
    table = pd.concat([pd.read_parquet(f, columns=["pair_id", "request_key"])
                       for f in files], ignore_index=True)
    return table.assign(new=table["pair_id"].str.contains("|new", regex=False))


@pytest.fixture(scope="module")
def vqa_project(tmp_path_factory, default_params):
    project = make_project(tmp_path_factory.mktemp("vqa"), world(default_params, BIASED))
    records = tmp_path_factory.mktemp("reads")  # its own: other modules record too
    os.environ[RECORD_ENV] = str(records)
    try:
        snakemake(project)
    finally:
        del os.environ[RECORD_ENV]
    return project, records


@pytest.mark.slow
def test_vqa_task_runs_and_birch_recovers_the_order_a_detail_hungry_judge_inverts(
        vqa_project):
    project, records = vqa_project
    assert undeclared_reads(project, records, every_step=False) == {}
    metrics = json.loads((project / RESULTS / "metrics.json").read_text())
    assert metrics["kind"] == "vqa" and metrics["questions"] == N_ITEMS
    planted = metrics["planted_win_rate"]
    assert planted["careful"] > planted["chatty"] > planted["poor"]
    verdicts = pd.read_parquet(project / DATA / "answer_verdicts" / JUDGE / "base.parquet")
    assert len(verdicts) == N_ITEMS * 3 * 2  # every pair, both orders
    assert Counter(verdicts["order"]) == Counter({"ab": N_ITEMS * 3, "ba": N_ITEMS * 3})
    pairs = pairs_of(project)
    # careful - chatty: the planted humans prefer careful (chatty is mostly wrong); the
    # plain judge, blind while judging, prefers the extra fact; BIRCH's anchor catches it.
    assert pairs.loc[("plain", "careful", "chatty"), "difference"] < 0
    assert pairs.loc[("birch", "careful", "chatty"), "difference"] > 0
    systems = pd.read_parquet(project / RESULTS / "systems.parquet").set_index(
        ["method", "system"])["mean"]
    order = sorted(planted, key=planted.get, reverse=True)
    assert sorted(order, key=lambda s: -systems[("birch", s)]) == order
    assert systems[("birch", "careful")] == pytest.approx(planted["careful"], abs=0.1)
    changes = pd.read_parquet(project / RESULTS / "changes.parquet")
    assert ((changes["method"] == "birch") & (changes["above"] == "careful")
            & (changes["below"] == "chatty")).any()
    printed = run([str(BIN / "judgebias"), "leaderboard"], project).stdout
    assert f"== {TASK} (vqa task; baseline: plain, the plain judge) ==" in printed


@pytest.mark.slow
def test_plan_keys_every_call_once_the_answers_and_anchors_are_built(
        vqa_project, default_params, monkeypatch):
    project, _ = vqa_project
    monkeypatch.chdir(project)
    params = validate_params(world(default_params, BIASED))
    planned = planned_calls(params, TASK)
    assert sorted(len(p.requests) for p in planned) == [N_ITEMS * 3, *[N_ITEMS * 3 * 2] * 2]
    assert not any(p.estimated for p in planned)
    model = RunContext(params).model(JUDGE)
    keyed = {request_key(r, model.backend, backend_version(model))
             for p in planned for r in p.requests}
    assert keyed == set(request_keys(project)["request_key"])  # what the jobs asked


@pytest.mark.slow
def test_adding_a_system_pays_only_for_its_pairs(vqa_project, default_params):
    project, _ = vqa_project
    params = world(default_params, BIASED)
    before, old = journaled(project), request_keys(project)
    added = copy.deepcopy(params)
    added["leaderboard"]["tasks"][TASK]["systems"]["new"] = {
        "synthetic": {"quality": 0.6, "details": 2}}
    write_params(project, added)
    planned = planned_jobs(project, f"{RESULTS}/metrics.json")
    assert Counter(rule for rule, _ in planned.elements()) == Counter({
        "leaderboard_vqa_answers": 1, "leaderboard_vqa_anchor": 1,
        "leaderboard_vqa_judge": 2, "leaderboard_vqa_rank": 1})
    snakemake(project)
    keys = request_keys(project)
    kept = keys[~keys["new"]].sort_values(["pair_id", "request_key"]).reset_index(drop=True)
    assert kept.equals(old.sort_values(["pair_id", "request_key"]).reset_index(drop=True))
    fresh = set(keys.loc[keys["new"], "request_key"]) - set(kept["request_key"])
    # one anchor and four verdicts per new pair, less requests two pairs share (two
    # systems' identical answers)
    assert 0 < journaled(project) - before == len(fresh) <= N_ITEMS * 3 * 5
    write_params(project, params)


@pytest.mark.slow
def test_without_judge_bias_both_methods_agree_with_the_planted_order(
        tmp_path, default_params):
    project = make_project(tmp_path, world(default_params, UNBIASED))
    snakemake(project)
    planted = json.loads((project / RESULTS / "metrics.json").read_text())[
        "planted_win_rate"]
    pairs = pairs_of(project)
    for a, b in (("careful", "chatty"), ("careful", "poor"), ("chatty", "poor")):
        assert planted[a] > planted[b], (a, b)
        for method in ("plain", "birch"):
            assert pairs.loc[(method, a, b), "difference"] > 0, (method, a, b)
