"""An outage is a failed job, and a rerun retries it (issue 19, part 2).

Over HTTP with the real OpenAI SDK path: `serve-sim` on loopback answers the panel, one
model's endpoint goes down (or 5% of all requests fail), and the pipeline runs through
Snakemake. A failed call never satisfies a job: the first run fails with one clear
message and writes no output for the failed jobs; once the endpoint is back, the rerun
completes, paying each success once and retrying each failure once (journal).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.api import KEY, KEY_ENV, RecordingServer, api_params
from helpers.project import (
    BIN,
    PANEL,
    make_project,
    planned_jobs,
    run,
    study_params,
    write_params,
)
from helpers.scores import long_table, planted

from judgebias.config import validate_params
from judgebias.devtools.serve_sim.faults import Faults
from judgebias.models.base import ChatResponse
from judgebias.models.journal import TooManyFailures, request_key
from judgebias.models.openai_wire import PROTOCOL_VERSION
from judgebias.models.runner import check_failures
from judgebias.studies.philautia.measures import analyse
from judgebias.studies.philautia.tables import captions_path, scores_path
from judgebias.studies.pomms.steps import candidates

SETTING = "ref_free"
DOWN = "corvid-pro"
N_IMAGES = 8
FAST_RETRIES = {"openai": {"concurrency": 4, "max_retries": 1, "backoff_initial_s": 0.01,
                           "backoff_max_s": 0.02}}


def test_only_calls_without_an_answer_count_and_only_beyond_the_accepted_share():
    ok = ChatResponse("The final score is $70$.")
    answers = [ok, ChatResponse("", status="empty", error="the model returned no text"),
               ChatResponse("", status="refused", finish_reason="blocked", error="SAFETY")]
    assert check_failures(answers * 10, 0.0, "panel.m (judge)") == 0  # results, not failures
    failed = [ChatResponse("", status="failed", error=f"gave up after 1 retries: {reason}")
              for reason in ("503: overloaded", "503: overloaded", "connection: refused")]
    assert check_failures([ok] * 97 + failed, 0.03, "panel.m (judge)") == 3
    with pytest.raises(TooManyFailures) as stopped:
        check_failures([ok] * 97 + failed, 0.02, "panel.m (judge)")
    message = str(stopped.value)
    assert message.startswith("panel.m (judge): 3 of 100 calls failed (2 x gave up after 1 "
                              "retries: 503: overloaded; 1 x gave up after 1 retries: "
                              "connection: refused); max_failures accepts 0.02 of them.")
    assert "retry the 3 failed calls (the 97 answers are journaled" in message


def outage_params(default_params: dict, url: str) -> dict:
    """Philautia alone, one setting, 3 models all answered over HTTP by serve-sim."""
    params = study_params(default_params, "philautia", small=True)
    params["philautia"]["dataset"]["synthetic"]["n_images"] = N_IMAGES
    params["philautia"]["settings"] = {SETTING: params["philautia"]["settings"][SETTING]}
    params = api_params(params, "openai", url, PANEL)
    params["backends"] = copy.deepcopy(FAST_RETRIES)
    return params


def snakemake(project: Path) -> tuple[int, str]:
    done = run([str(BIN / "snakemake"), "--cores", "2", "--keep-going"], project, check=False)
    return done.returncode, done.stdout + done.stderr


def answered_keys(server: RecordingServer) -> Counter:
    """How often each request was answered (the calls a provider would bill)."""
    return Counter(request_key(r, "openai", PROTOCOL_VERSION) for r in server.answered)


def model_jobs(models: list[str]) -> dict[str, tuple[str, str]]:
    """Output path -> (model calling, generator of the captions) of every caption and
    score job."""
    jobs = {captions_path(m): (m, m) for m in models}
    jobs.update({scores_path(SETTING, e, g): (e, g) for e in models for g in models})
    return jobs


@pytest.mark.slow
def test_a_model_outage_fails_its_jobs_and_the_rerun_retries_exactly_them(
        default_params, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    down = default_params["panel"][DOWN]["model_id"]
    with RecordingServer(validate_params(default_params), api_key=KEY,
                         down_models=frozenset({down})) as server:
        project = make_project(tmp_path, outage_params(default_params, server.url))
        code, out = snakemake(project)
        assert code != 0
        first = server.stats["model_outcomes"]
        paid_first = answered_keys(server)

        # The failed jobs wrote nothing; every job of the models that were up did.
        written = {path for path in model_jobs(PANEL) if (project / path).exists()}
        assert written == {path for path, calls in model_jobs(PANEL).items()
                           if DOWN not in calls}
        log = (project / f"logs/caption/{DOWN}.log").read_text()
        assert (f"stopped: panel.{DOWN} (generator): {N_IMAGES} of {N_IMAGES} calls failed "
                f"({N_IMAGES} x gave up after 1 retries") in log
        assert "503" in log and "Nothing was written" in log and "Traceback" not in log
        assert not (project / "results/philautia").exists()

        # The endpoint is back: the rerun completes.
        server.down_models = frozenset()
        server.reset_stats()
        server.answered.clear()
        code, out = snakemake(project)
        assert code == 0, out
        second = server.stats["model_outcomes"]
        paid_second = answered_keys(server)

    # The threshold is declared by no job: changing it reruns nothing.
    params = yaml.safe_load((project / "params.yaml").read_text())
    write_params(project, {**params, "max_failures": {DOWN: 0.5}})
    assert planned_jobs(project) == Counter()

    # Successes were paid once: nothing answered in the first run is asked again, and
    # the models that were up answer only what depended on the failed jobs' outputs.
    assert max(paid_first.values()) == 1 and max(paid_second.values()) == 1
    assert not set(paid_first) & set(paid_second)
    # The failures were retried once: each of the down model's requests failed twice in
    # the first run (max_retries 1) and was answered once in the second, together with
    # its scores of its own captions, which waited for them.
    failed_requests = first[down]["down"] // 2
    assert first[down] == {"down": 2 * failed_requests}
    assert failed_requests == N_IMAGES * len(PANEL)  # its captions + scores of 2 generators
    assert second[down] == {"ok": failed_requests + N_IMAGES}
    for model in PANEL:
        if model != DOWN:
            model_id = default_params["panel"][model]["model_id"]
            assert first[model_id] == {"ok": N_IMAGES * len(PANEL)}  # captions + 2 scores
            assert second[model_id] == {"ok": N_IMAGES}  # its scores of DOWN's captions
    scores = pd.concat(pd.read_parquet(project / path) for path in model_jobs(PANEL)
                       if "/scores/" in path)
    assert (scores["status"] != "failed").all()


@pytest.mark.slow
def test_random_failures_fail_their_jobs_until_a_rerun_completes(
        default_params, tmp_path, monkeypatch):
    """5% of requests answer 500, with max_retries 0 so some calls really fail, and the
    threshold at its default (0): the runs that meet a failure fail, the reruns retry
    only the failed calls, and the result holds no failed row."""
    monkeypatch.setenv(KEY_ENV, KEY)
    faults = Faults(rate_500=0.05)
    with RecordingServer(validate_params(default_params), api_key=KEY, faults=faults,
                         seed=3) as server:
        params = outage_params(default_params, server.url)
        params["backends"]["openai"]["max_retries"] = 0
        project = make_project(tmp_path, params)
        codes = []
        for _ in range(6):
            code, out = snakemake(project)
            codes.append(code)
            if code == 0:
                break
        failures = server.stats["outcomes"]["500"]
        paid = answered_keys(server)
    assert codes[0] != 0 and codes[-1] == 0, codes
    assert "calls failed" in out or failures > 0
    # every request answered exactly once; every 500 was one failed call, retried
    requests = N_IMAGES * len(PANEL) * (1 + len(PANEL))
    assert len(paid) == requests and max(paid.values()) == 1
    assert failures > 0
    for path in model_jobs(PANEL):
        assert (pd.read_parquet(project / path)["status"] != "failed").all(), path


def dead_endpoint(params: dict, model: str, url: str) -> dict:
    """`model` answered by serve-sim at `url`, whose endpoint for it is down (503 on
    every call, no retry), with its failures accepted (max_failures 1.0): every call of
    it fails, fast. (A port with nothing listening is a wrong base_url, not an outage:
    it stops the job at once, tests/core/test_fail_fast.py.)"""
    params = api_params(params, "openai", url, [model])
    params["backends"] = {"openai": {"max_retries": 0}}
    params["max_failures"] = {model: 1.0}
    return params


@pytest.mark.slow
def test_an_accepted_outage_runs_birch_to_the_report_with_the_counts(default_params,
                                                                    tmp_path, monkeypatch):
    """BIRCH with one of its two judges down and its failures accepted: every job runs,
    the analysis leaves the judge's rows out (it crashed with KeyError 'ds_mean' before)
    and the metrics and the report count them."""
    params = study_params(default_params, "birch", small=True)
    params["birch"]["datasets"]["synthetic"]["n_pairs"] = 20
    params["birch"]["models"] = ["corvid-pro", "lumen-large"]
    monkeypatch.setenv(KEY_ENV, KEY)
    down = frozenset({default_params["panel"]["lumen-large"]["model_id"]})
    with RecordingServer(validate_params(default_params), api_key=KEY,
                         down_models=down) as server:
        project = make_project(tmp_path, dead_endpoint(params, "lumen-large", server.url))
        run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    metrics = json.loads((project / "results/birch/synthetic/metrics.json").read_text())
    verdicts = pd.concat(pd.read_parquet(p) for p in
                         (project / "data/birch/synthetic/verdicts/lumen-large").glob("*.parquet"))
    failed = int((verdicts["status"] == "failed").sum())
    assert failed > 0 and metrics["failed_calls"] == {
        "lumen-large": {"failed": failed, "rows": len(verdicts)}}
    assert metrics["judges"]["lumen-large"]["base"]["acc"] is None
    assert metrics["judges"]["corvid-pro"]["base"]["acc"] is not None
    report = (project / "results/report.html").read_text()
    assert f"lumen-large {failed} of {len(verdicts)} rows" in report


def test_philautia_leaves_out_an_all_failed_evaluator_and_counts_it():
    """An evaluator every call of which failed (and a generator whose captions all
    failed): the analysis runs on the rest, that model's philautia score is null, and the
    counts name the failed rows."""
    models = [f"model{i}" for i in range(4)]
    table = long_table(planted(30, n_models=4, bias=0.06, seed=0), models)
    table["status"] = "ok"
    dead = (table["evaluator"] == "model1") | (table["generator"] == "model2")
    table.loc[dead, ["score", "status"]] = [np.nan, "failed"]
    metrics = analyse(table, models, {"model0": "fam", "model1": "fam"}, n_boot=50,
                      n_permutations=200, seed=0).metrics()
    json.dumps(metrics, allow_nan=False)
    assert metrics["counts"]["excluded_by_status"] == {"failed": int(dead.sum())}
    assert metrics["philautia"]["model1"]["score"] is None
    assert metrics["philautia"]["model0"]["score"] is not None


def test_pomms_selects_only_among_evaluators_with_a_usable_score():
    """A row with any NaN score is left out of Pomms' fit, so an evaluator whose calls
    all failed would leave no row: it is left out of the candidates instead."""
    rows = pd.DataFrame({"a": [0.1, 0.5, 0.9], "b": [np.nan] * 3, "c": [0.2, np.nan, 0.7]})
    assert candidates(rows, ["a", "b", "c"]) == ["a", "c"]


def test_frame_metrics_of_a_judge_without_usable_answers_are_null():
    """FRAME's per-judge tables have no row for a judge whose every call failed: its
    metrics are null (the report shows a dash), the other judge's are numbers."""
    from judgebias.studies.frame.measures.summary import metrics as frame_metrics
    from judgebias.studies.frame.report import _cell, _rate

    tables = {
        "attack_success": pd.DataFrame({"judge": ["up", "up"],
                                        "reading": ["in_sample", "cross_fitted"],
                                        "success_rate": [40.0, 25.0],
                                        "chance_rate": [80.0, 45.0]}),
        "table3_cross_fitted": pd.DataFrame({"judge": ["up"], "in_sample_q": [0.01]}),
        "human_correlation": pd.DataFrame({"judge": ["up", "down"],
                                           "pearson": [0.6, np.nan]}),
    }
    judges = frame_metrics(pd.DataFrame({"domain": ["people"]}), tables, ["up", "down"],
                           0.05)["judges"]
    assert judges["up"] == {"attack_success_in_sample": 40.0, "chance_in_sample": 80.0,
                            "attack_success_cross_fitted": 25.0, "chance_cross_fitted": 45.0,
                            "cells_significant": 1, "pearson_with_humans": 0.6}
    assert judges["down"] == {"attack_success_in_sample": None, "chance_in_sample": None,
                              "attack_success_cross_fitted": None,
                              "chance_cross_fitted": None, "cells_significant": 0,
                              "pearson_with_humans": None}
    assert _rate(None) == "–" and _rate(40.0) == "40%"
    assert _cell(None, None) == "-" and _cell(3.5, 12.0) == "3.50 (+12.0%)"


def test_mmb_report_says_a_judge_was_left_out_by_its_failed_calls():
    from judgebias.studies.mmb.report import judge_notes

    assert judge_notes({"left_out": True, "failed_answers": 40, "answers": 40}) == [
        "Left out of every table and figure: 40 of its 40 calls failed (accepted by "
        "max_failures), leaving too few pairs with a usable answer for every instruction."]
    notes = judge_notes({"failed_answers": 3, "pairs_used": 20, "pairs_dropped": 2})
    assert notes[0] == "3 failed calls were accepted (max_failures); they are left out."
