"""Every study through Snakemake with today's judges (issue 41, "How it is checked"): one
small project running every study with a panel of API judges answered by serve-sim
through the real SDKs: Claude (anthropic, online), an o3-like reasoning judge (effort
medium, no sampling parameters, batch), a GPT-5-like judge at effort none (temperature and
log-probs, online) and at medium (none of them, batch), and a Gemini 2.5-like thinking
judge (a thinking budget, no log-probs, batch).

What each study reads from a judge without log-probs is the fallback its needs name:
philautia and Pomms the parsed score, BIRCH and FRAME the parsed verdict, MMB n sampled
verdicts (``mmb.probability``: Claude online and o3 in batch), with the GPT-5 judge at
effort none read from its log-probs. Each study has an online and a batch judge, each
judge runs in three studies or more (:data:`STUDY_JUDGES`). serve-sim refuses what each provider
refuses (a reasoning model's max_tokens, temperature or log-probs; Claude's seed-less
sampling is drawn afresh per call), so a run with no 4xx proves that no refused request
was sent."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
from helpers.api import KEY, KEY_ENV, api_params
from helpers.project import BIN, make_project, run, small_all_studies, undeclared_reads

from judgebias.config import validate_params
from judgebias.devtools.serve_sim.hidden import ServedModels
from judgebias.devtools.serve_sim.server import SimServer
from judgebias.models.journal import Journal, journal_path
from judgebias.workflow.paramsread import RECORD_ENV

# panel key -> (backend, settings, batch); every key keeps its sim model id (sim/<key>)
JUDGES = {
    "corvid-pro": ("anthropic", {}, False),  # Claude
    "corvid-lite": ("openai", {"reasoning": {"effort": "medium"}}, True),  # o3-like
    "lumen-large": ("openai", {"reasoning": {"effort": "none", "sampling": True}}, False),
    "corvid-flash": ("openai", {"reasoning": {"effort": "medium"}}, True),  # GPT-5 medium
    "lumen-mini": ("gemini", {"thinking_config": {"thinking_budget": 256},
                              "abilities": {"answer_logprobs": False}}, True),
}
LOGPROBS = "lumen-large"  # the one judge MMB reads from log-probs
# Each study's judges: every study has an online and a batch judge and every judge runs in
# at least three studies, all five in BIRCH; a job per (judge, unit of work) is what the
# run's time goes to, so not every study takes every judge. MMB: Claude sampled online,
# o3 sampled in batch, GPT-5 at none from its log-probs.
STUDY_JUDGES = {
    "philautia": ["corvid-pro", "corvid-flash", "lumen-mini"],  # Pomms scores with these
    "mmb": ["corvid-pro", "corvid-lite", LOGPROBS],
    "frame": [LOGPROBS, "corvid-lite", "lumen-mini"],
    "birch": list(JUDGES),
}
SETTING = "ref_based"  # Philautia's one setting here
TRAITS = ("mmb", "frame", "birch")  # the study traits the sim answers a model with


def served_config(default_params: dict) -> dict:
    """The sim panel serve-sim answers with: every model with corvid-pro's MMB, FRAME and
    BIRCH traits where it has none of its own (in the default only corvid-pro plants MMB)."""
    config = copy.deepcopy(default_params)
    donor = config["panel"]["corvid-pro"]["sim"]
    for entry in config["panel"].values():
        for trait in TRAITS:
            entry["sim"].setdefault(trait, copy.deepcopy(donor[trait]))
    return validate_params(config)


def todays_panel(default_params: dict, url: str) -> dict:
    """Every study, small, its judges the API judges of :data:`JUDGES` at `url`."""
    params = small_all_studies(default_params)
    for backend in ("anthropic", "openai", "gemini"):
        params = api_params(params, backend, url,
                            [k for k, (b, _, _) in JUDGES.items() if b == backend])
    for key, (_, settings, batch) in JUDGES.items():
        entry = params["panel"][key]
        entry.update(copy.deepcopy(settings), batch=batch)
        entry["sampling"] = {"max_tokens": 1024, "seed": 0, "top_logprobs": 5}
    # one Philautia setting, with references (the leaderboard's captions task asks its
    # prompt, and Pomms is fitted in it): the other only drops them from the same requests
    params["philautia"].update(models=STUDY_JUDGES["philautia"], score="parsed",
                               settings={SETTING: params["philautia"]["settings"][SETTING]})
    params["pomms"].update(setting=SETTING, judgement_setting=None)
    mmb = params["mmb"]
    mmb.update(models=STUDY_JUDGES["mmb"], probability={"source": "samples", "samples": 2,
                                               "by_judge": {LOGPROBS: "logprobs"}})
    mmb["instructions"]["grow"] = {"writer": "lumen-base", "n": 3}  # the sim writes
    params["frame"].update(models=STUDY_JUDGES["frame"], analysis_judge=LOGPROBS)
    params["frame"]["dataset"]["synthetic"]["writer"] = "lumen-base"
    params["birch"].update(models=STUDY_JUDGES["birch"], labeller="corvid-lite",
                           lengthener="lumen-mini")
    board = params["leaderboard"]  # Pomms' members' parsed scores, as Pomms was fitted on
    board["score"] = "parsed"
    for method in board["methods"].values():
        if method["kind"] == "panel":
            method["judges"] = STUDY_JUDGES["philautia"]
    params["backends"] = {name: {"batch_poll_s": 0.1, "batch_poll_max_s": 0.5,
                                 "backoff_initial_s": 0.05, "backoff_max_s": 0.2}
                          for name in ("anthropic", "openai", "gemini")}
    return validate_params(params)


@pytest.mark.slow  # five studies through Snakemake over HTTP (a few minutes)
def test_every_study_runs_with_todays_judges(default_params, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)  # the jobs' processes inherit it
    with SimServer(served_config(default_params), api_key=KEY,
                   fresh_samples=True) as server:
        params = todays_panel(default_params, server.url)
        server.served = ServedModels.from_params(params)
        project = make_project(tmp_path, params)
        monkeypatch.setenv(RECORD_ENV, str(tmp_path / "reads"))  # the params each step reads
        run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
        monkeypatch.delenv(RECORD_ENV)
        outcomes = dict(server.stats["outcomes"])
    # every step reads only its rule's keys, the API judges' included, but for one: a
    # sim writer (lumen-base) prefers the API judge corvid-flash, and its world holds that
    # judge only if simulated (judgebias.models.registry.sim_world): the writer's
    # declared keys (world_params) follow corvid-flash's backend without declaring it
    unexpected = undeclared_reads(project, tmp_path / "reads")
    assert [line for (_, key), line in unexpected.items()
            if key != "panel.corvid-flash.backend"] == []
    refused = {o: n for o, n in outcomes.items() if o.startswith("4") and n}
    assert refused == {} and outcomes["ok"] > 0 and outcomes["batch"] > 0
    journals = project / ".judgebias/journal"
    for key, (backend, settings, _) in JUDGES.items():
        with Journal(journal_path(journals, backend, f"sim/{key}")) as journal:
            usage = [json.loads(u) for (u,) in
                     journal._db.execute("SELECT usage FROM responses")]
        hidden = "thinking_tokens" if backend == "anthropic" else "reasoning_tokens"
        assert usage, key
        if settings and backend != "anthropic" and key != LOGPROBS:  # hidden tokens billed
            assert all(u.get(hidden, 0) > 0 for u in usage), key
    for study in (f"philautia/{SETTING}", "pomms", "mmb", "frame", "birch/synthetic",
                  "leaderboard/captions"):
        assert (project / f"results/{study}/metrics.json").exists(), study
    mmb = json.loads((project / "results/mmb/metrics.json").read_text())["judges"]
    assert {j: mmb[j]["probability"]["source"] for j in STUDY_JUDGES["mmb"]} == {
        j: "logprobs" if j == LOGPROBS else "samples" for j in STUDY_JUDGES["mmb"]}
    claude = pd.read_parquet(project / "data/mmb/judgements/corvid-pro.parquet")
    by_item = claude.groupby(["pair_id", "instruction"])["label"].nunique()
    assert (by_item == 2).any()  # Claude's two samples of one request can differ
    html = (project / "results/report.html").read_text()
    assert "parsed choice (no token log-probs are read)" in html
    assert "Nothing to be done" in run([str(BIN / "snakemake"), "-n", "--cores", "1"],
                                       project).stdout
