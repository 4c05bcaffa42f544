"""The real `openai` and `gemini` backends, for real over HTTP, against `serve-sim`.

serve-sim answers exactly as the sim backend does, so every result through a client
backend must equal the in-process sim result; with faults injected, a job must still
complete with every row, count its retries, never pay twice, and stop at once on a
permanent error.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.api import KEY, KEY_ENV, MODELS, RecordingServer, api_params
from helpers.project import BIN, make_project, run, study_params

from judgebias.config import ConfigError, validate_params
from judgebias.data.scenes import random_scene, render, to_png_bytes
from judgebias.devtools.serve_sim.faults import Faults
from judgebias.devtools.serve_sim.quotas import RequestQuota
from judgebias.devtools.serve_sim.server import SimServer
from judgebias.io.artifacts import read_table, write_table
from judgebias.models.api import PermanentError, RateLimiter
from judgebias.models.base import ChatRequest, Sampling
from judgebias.models.context import RunContext
from judgebias.models.journal import BudgetExceeded, Journal, journal_path, request_key
from judgebias.models.limits import ApiLimits
from judgebias.models.openai_backend import OpenAIBackend
from judgebias.models.openai_wire import PROTOCOL_VERSION
from judgebias.studies.philautia import jobs
from judgebias.studies.philautia.data import build_synthetic_dataset
from judgebias.studies.philautia.params import PhilautiaParams
from judgebias.studies.philautia.tables import CAPTIONS, IMAGES


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def images_table(tmp_path: Path, n: int, seed: int) -> str:
    """A synthetic images table written where the jobs read it (they take paths)."""
    path = tmp_path / "images.parquet"
    write_table(build_synthetic_dataset(tmp_path / "dataset", n, seed), path, IMAGES)
    return str(path)


@pytest.fixture
def images(tmp_path):
    return images_table(tmp_path, 6, 3)


def caption_images(config: dict, generator: str, images: str) -> pd.DataFrame:
    """Run the caption job and write its captions artifact (the score job reads a path);
    return the table read back, with that path in a `path` column. Each config has its
    own journal_dir, so the file is named after it: sim and API captions never mix."""
    journal = Path(config["journal_dir"])
    path = journal.parent / f"captions-{journal.name}-{generator}.parquet"
    write_table(jobs.caption_images(RunContext(config), generator, images,
                                    prompt=PhilautiaParams.from_params(config).caption_prompt),
                path, CAPTIONS)
    return read_table(path, CAPTIONS).assign(path=str(path))


def score_captions(config: dict, evaluator: str, setting: str, images: str,
                   captions: pd.DataFrame) -> pd.DataFrame:
    return jobs.score_captions(RunContext(config), evaluator, setting, images,
                               captions["path"].iloc[0],
                               spec=PhilautiaParams.from_params(config).settings[setting])


def configs(params, tmp_path, backend, url):
    sim = validate_params(params)
    sim["journal_dir"] = str(tmp_path / "journal-sim")
    api = validate_params(api_params(params, backend, url))
    api["journal_dir"] = str(tmp_path / "journal-api")
    return sim, api


def _same_answers(a: pd.DataFrame, b: pd.DataFrame, columns: list[str]) -> None:
    pd.testing.assert_frame_equal(a[columns].reset_index(drop=True),
                                  b[columns].reset_index(drop=True))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["openai", "gemini"])
def test_client_backends_equal_the_sim(backend, params, tmp_path, images, key_env):
    with SimServer(validate_params(params), api_key=KEY) as server:
        sim, api = configs(params, tmp_path, backend, server.url)
        for generator in MODELS:
            caps_sim = caption_images(sim, generator, images)
            caps_api = caption_images(api, generator, images)
            _same_answers(caps_sim, caps_api, ["image_id", "label", "status", "raw_text",
                                               "logprobs", "finish_reason"])
            assert (caps_api["backend"] == backend).all()
            scores_sim = score_captions(sim, "corvid-pro", "ref_based", images, caps_sim)
            scores_api = score_captions(api, "corvid-pro", "ref_based", images, caps_api)
            _same_answers(scores_sim, scores_api, ["status", "value", "expected", "mass",
                                                   "raw_text", "logprobs", "finish_reason"])
            assert scores_api["logprobs_available"].all()


def test_batch_mode_answers_the_jobs_as_online_and_a_rerun_pays_nothing(
        params, tmp_path, images, key_env):
    """panel.<m>.batch on the openai backend (issue 23): the caption and score jobs run
    through the provider's Batch API (serve-sim's, through the openai SDK) and their rows
    equal the in-process sim's; every request went into a batch and none online, and the
    same jobs again answer from the journal without a new batch."""
    with SimServer(validate_params(params), api_key=KEY) as server:
        sim, api = configs(params, tmp_path, "openai", server.url)
        for key in MODELS:
            api["panel"][key]["batch"] = True
        api = validate_params(api)
        caps_sim = caption_images(sim, "corvid-pro", images)
        caps_api = caption_images(api, "corvid-pro", images)
        _same_answers(caps_sim, caps_api, ["image_id", "label", "status", "raw_text",
                                           "logprobs", "finish_reason"])
        scores_sim = score_captions(sim, "lumen-large", "ref_free", images, caps_sim)
        scores_api = score_captions(api, "lumen-large", "ref_free", images, caps_api)
        _same_answers(scores_sim, scores_api, ["status", "value", "expected", "raw_text",
                                               "logprobs"])
        stats = server.stats
        assert stats["outcomes"]["batch"] == len(caps_api) + len(scores_api) == 12
        assert stats["outcomes"]["ok"] == 0  # no online chat call
        score_captions(api, "lumen-large", "ref_free", images, caps_api)
        assert server.stats["outcomes"]["batch"] == 12
    params["panel"]["corvid-pro"]["batch"] = True  # a sim model cannot batch
    with pytest.raises(ConfigError, match=r"panel\.corvid-pro\.batch: batch mode is for "
                                          r"the openai, gemini and anthropic backends"):
        validate_params(params)


def test_gemini_model_without_logprobs_falls_back_once(params, tmp_path, images, key_env,
                                                        caplog):
    with SimServer(validate_params(params), api_key=KEY,
                   no_logprobs_models=frozenset({"sim/corvid-pro"})) as server:
        sim, api = configs(params, tmp_path, "gemini", server.url)
        captions = caption_images(sim, "lumen-large", images)
        with caplog.at_level(logging.WARNING):
            scores = score_captions(api, "corvid-pro", "ref_free", images, captions)
        stats = server.stats
    assert (scores["status"] == "ok").all() and not scores["logprobs_available"].any()
    assert scores["expected"].isna().all() and scores["value"].notna().all()
    assert sum("rejects log-probs" in r.message for r in caplog.records) == 1
    assert stats["outcomes"]["400"] == 1  # detected once, not once per request


@pytest.mark.slow
def test_faults_are_survived_and_counted(params, tmp_path, key_env, caplog):
    images = images_table(tmp_path, 30, 5)
    faults = Faults(rate_429=0.15, retry_after_s=0.05, rate_500=0.1, rate_stall=0.05,
                    stall_s=1.0, rate_drop=0.05, rate_garbled=0.05)
    with SimServer(validate_params(params), api_key=KEY, faults=faults, seed=1) as server:
        sim, api = configs(params, tmp_path, "openai", server.url)
        api["backends"] = {"openai": {"concurrency": 4, "timeout_s": 0.4, "max_retries": 20,
                                      "backoff_initial_s": 0.01, "backoff_max_s": 0.05}}
        with caplog.at_level(logging.INFO):
            captions = caption_images(api, "lumen-large", images)
        outcomes = server.stats["outcomes"]
    assert (captions["status"] == "ok").all() and len(captions) == 30
    _same_answers(caption_images(sim, "lumen-large", images), captions,
                  ["label", "raw_text", "logprobs"])
    retries = [r.message for r in caplog.records if "retries by reason" in r.message]
    assert retries, "the job log must count the retries"
    for reason in ("429", "500"):
        assert outcomes[reason] > 0 and f"'{reason}'" in retries[-1]
    assert sum(outcomes[k] for k in ("stall", "drop", "garbled")) > 0


@pytest.mark.slow
def test_retry_after_is_honoured(params, tmp_path, images, key_env):
    with SimServer(validate_params(params), api_key=KEY,
                   faults=Faults(rate_429=0.5, retry_after_s=0.3), seed=2) as server:
        _, api = configs(params, tmp_path, "openai", server.url)
        api["backends"] = {"openai": {"concurrency": 1, "max_retries": 20,
                                      "backoff_initial_s": 0.0, "backoff_max_s": 0.0}}
        start = time.monotonic()
        caption_images(api, "lumen-large", images)
        elapsed = time.monotonic() - start
        n_429 = server.stats["outcomes"]["429"]
    assert n_429 > 0 and elapsed >= 0.3 * n_429  # waited as told, not the (zero) backoff


def _quota_run(url: str, n: int, limits: ApiLimits) -> tuple[OpenAIBackend, list]:
    backend = OpenAIBackend("sim/lumen-large", "quota", limits, base_url=f"{url}/v1",
                            api_key=KEY)
    png = to_png_bytes(render(random_scene(np.random.default_rng(0)), 32))
    requests = [ChatRequest("sim/lumen-large", f"Rate caption {i}.", (png,), Sampling())
                for i in range(n)]
    return backend, backend.complete(requests)


@pytest.mark.slow
def test_a_quota_storm_costs_time_never_a_request(params):
    """No requests_per_minute in params, 16 in flight, a 20/s quota with a burst of 1:
    the client learns the pace from the 429s. Every request is answered, each once, and
    no 429 spends max_retries (0 here)."""
    with SimServer(validate_params(params), api_key=KEY, no_compute=True,
                   quota=RequestQuota(1200, burst=1)) as server:
        backend, responses = _quota_run(server.url, 40, ApiLimits(concurrency=16,
                                                                  max_retries=0))
        outcomes = server.stats["outcomes"]
    assert len(responses) == 40 and all(r.ok for r in responses)
    assert outcomes["ok"] == 40  # answered once each: nothing paid twice
    assert outcomes["rate_limited"] == backend.retry_counts["429"] > 0
    # learning the pace: far fewer refusals than a client retrying all 16 blindly
    assert outcomes["rate_limited"] < 40


def test_a_quota_that_never_recovers_ends_the_wait(params):
    with SimServer(validate_params(params), api_key=KEY, no_compute=True,
                   quota=RequestQuota(6, burst=1)) as server:  # one token per 10 s
        _, responses = _quota_run(server.url, 2, ApiLimits(concurrency=2,
                                                           max_rate_limited=0))
    assert sorted(r.status for r in responses) == ["failed", "ok"]
    failed = next(r for r in responses if not r.ok)
    assert "1 rate-limit refusals" in failed.error and failed.text == ""


def test_rate_limiter_learns_the_providers_pace():
    limiter = RateLimiter(None)
    assert limiter.interval == 0.0
    limiter.throttle(started=time.monotonic(), retry_after=0.004)
    assert limiter.interval == 0.004  # nothing answered yet: the Retry-After seeds it
    for k in range(RateLimiter.window):  # the provider admitted one request per 50 ms
        limiter.succeeded(started=100.0 + 0.05 * k)
    limiter.throttle(started=time.monotonic() + 1.0, retry_after=0.001)
    assert limiter.interval == pytest.approx(0.05)
    limiter.throttle(started=0.0, retry_after=0.001)  # scheduled at the old pace
    assert limiter.interval == pytest.approx(0.05)
    limiter.succeeded(started=200.0)
    assert limiter.interval == pytest.approx(0.05 * RateLimiter.decrease)
    configured = RateLimiter(requests_per_minute=600)
    for _ in range(3):
        configured.succeeded(started=0.0)
    assert configured.interval == 0.1  # never faster than params allow


@pytest.mark.parametrize("what", ["bad key", "unknown model"])
def test_permanent_errors_stop_at_once(what, params, tmp_path, images, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "wrong" if what == "bad key" else KEY)
    with SimServer(validate_params(params), api_key=KEY) as server:
        _, api = configs(params, tmp_path, "openai", server.url)
        if what == "unknown model":
            api["panel"]["lumen-large"]["model_id"] = "sim/does-not-exist"
        with pytest.raises(PermanentError) as info:
            caption_images(api, "lumen-large", images)
        requests = server.stats["requests"]
    message = str(info.value)
    assert "panel.lumen-large" in message and ("401" in message or "404" in message)
    assert "wrong" not in message and KEY not in message
    assert requests <= api.get("backends", {}).get("openai", {}).get("concurrency", 8)


def test_budget_stops_before_any_call(params, tmp_path, images, key_env):
    with SimServer(validate_params(params), api_key=KEY) as server:
        _, api = configs(params, tmp_path, "openai", server.url)
        api["panel"]["lumen-large"]["max_requests"] = 4
        with pytest.raises(BudgetExceeded, match="max_requests=4"):
            caption_images(api, "lumen-large", images)
        assert server.stats["requests"] == 0


def _journal_keys(path: Path) -> set[str]:
    if not path.exists():
        return set()
    with Journal(path) as journal:
        return {k for (k,) in journal._db.execute("SELECT key FROM responses")}


@pytest.mark.slow  # a real job process, killed and rerun (14 s)
def test_kill_9_resumes_without_paying_twice(default_params, tmp_path, key_env):
    """SIGKILL a caption job mid-run; the rerun re-sends nothing that had completed and
    writes the same artifact as an uninterrupted run."""
    table = images_table(tmp_path, 40, 9)
    config = validate_params(default_params)
    with RecordingServer(config, api_key=KEY, latency_s=0.05) as server:
        params = api_params(default_params, "openai", server.url)
        params["backends"] = {"openai": {"concurrency": 2}}

        def caption_job(journal_dir: Path, out: Path) -> subprocess.Popen:
            params["journal_dir"] = str(journal_dir)
            path = tmp_path / f"params-{journal_dir.name}.yaml"
            path.write_text(yaml.safe_dump(params))
            return subprocess.Popen(
                [str(Path(sys.executable).parent / "judgebias"), "--params", str(path),
                 "plumbing", "step", "philautia.caption", "--wildcard", "generator",
                 "lumen-large",
                 "--in", "images", str(table), "--out", "captions", str(out)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

        journal = journal_path(tmp_path / "killed", "openai", "sim/lumen-large")
        job = caption_job(tmp_path / "killed", tmp_path / "killed.parquet")
        deadline = time.monotonic() + 60
        while len(_journal_keys(journal)) < 10 and time.monotonic() < deadline:
            assert job.poll() is None, job.stderr.read().decode()  # died before the kill
            time.sleep(0.02)
        os.kill(job.pid, signal.SIGKILL)
        job.wait()
        completed = _journal_keys(journal)
        assert 10 <= len(completed) < 40 and not (tmp_path / "killed.parquet").exists()
        server.answered.clear()
        rerun = caption_job(tmp_path / "killed", tmp_path / "killed.parquet")
        assert rerun.wait(timeout=120) == 0, rerun.stderr.read().decode()
        resent = {request_key(r, "openai", PROTOCOL_VERSION) for r in server.answered}
        assert not resent & completed, "a completed request was paid for twice"
        assert len(resent) == 40 - len(completed)
        whole = caption_job(tmp_path / "whole", tmp_path / "whole.parquet")
        assert whole.wait(timeout=120) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "killed.parquet"),
                                  pd.read_parquet(tmp_path / "whole.parquet"))


def test_plan_counts_what_is_left(params, tmp_path, key_env, monkeypatch, capsys):
    """`judgebias plan` adds up every active study's calls: philautia's captions and
    scores (scores of captions not written yet wait), and Pomms' item scores (waiting
    until the judgement dataset is built, then keyed)."""
    from judgebias.cli import main
    from judgebias.studies.philautia.tables import DATASET_TABLE, captions_path
    from judgebias.studies.pomms.data import build_judgements
    from judgebias.studies.pomms.tables import JUDGEMENTS, judgement_images, judgements_path

    monkeypatch.chdir(tmp_path)
    # their plans: tests/core/test_plan.py
    del params["mmb"], params["frame"], params["birch"], params["leaderboard"]
    images = build_synthetic_dataset(tmp_path / "data/dataset", 6, 3)
    write_table(images, DATASET_TABLE, IMAGES)
    params["philautia"]["models"] = ["lumen-large", "lumen-mini", "corvid-pro"]
    params["pomms"]["datasets"]["synthetic"]["n_items"] = 10
    params["journal_dir"] = str(tmp_path / "journal")
    params["panel"]["corvid-pro"]["pricing"] = {"input_per_mtok": 2.5, "output_per_mtok": 10}
    Path("params.yaml").write_text(yaml.safe_dump(params))
    config = validate_params(params)
    write_table(jobs.caption_images(RunContext(config), "lumen-large", DATASET_TABLE,
                                    prompt=PhilautiaParams.from_params(config).caption_prompt),
                captions_path("lumen-large"), CAPTIONS)

    def plan() -> tuple[dict[str, list[str]], str]:
        assert main(["plan"]) == 0
        out = capsys.readouterr().out
        return {line.split()[0]: line.split() for line in out.splitlines()[1:4]}, out

    rows, out = plan()
    n, items = len(images), 10
    assert set(rows) == {"lumen-large", "lumen-mini", "corvid-pro"}  # panel models in studies
    # lumen-large: its captions are journaled; 2 settings x 3 generators of scores remain,
    # those of 2 generators wait on their captions; Pomms' items wait on their dataset
    assert rows["lumen-large"][2:6] == [str(n * 7 + items), str(n), str(n * 6 + items),
                                        str(n * 4 + items)]
    # corvid-pro: nothing journaled
    assert rows["corvid-pro"][2:6] == [str(n * 7 + items), "0", str(n * 7 + items),
                                       str(n * 4 + items)]
    assert rows["corvid-pro"][-1] != "-"  # priced: a cost estimate
    assert rows["lumen-mini"][-1] == "-"
    assert "total:" in out
    # Once the judgement dataset exists, Pomms' requests are keyed, one per item.
    spec = config["pomms"]["datasets"]["synthetic"]
    write_table(build_judgements("synthetic", spec, Path(judgement_images("synthetic"))),
                judgements_path("synthetic"), JUDGEMENTS)
    rows, _ = plan()
    assert rows["corvid-pro"][2:6] == [str(n * 7 + items), "0", str(n * 7 + items), str(n * 4)]


def test_plan_of_a_philautia_only_params_file(params, tmp_path, key_env, monkeypatch, capsys):
    """Without a `pomms:` block only the philautia study's calls are planned."""
    from judgebias.cli import main

    monkeypatch.chdir(tmp_path)
    del params["pomms"], params["mmb"], params["frame"], params["birch"]
    del params["leaderboard"]  # its pomms method needs the pomms block
    params["philautia"]["models"] = ["lumen-large", "lumen-mini", "corvid-pro"]
    params["philautia"]["dataset"]["synthetic"]["n_images"] = 5
    params["journal_dir"] = str(tmp_path / "journal")
    Path("params.yaml").write_text(yaml.safe_dump(params))
    assert main(["plan"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:4]]
    # no dataset yet: 5 captions + 2 settings x 3 generators x 5 scores, all waiting
    assert [row[2:6] for row in rows] == [["35", "0", "35", "35"]] * 3


@pytest.mark.slow  # the whole small pipeline, through Snakemake over HTTP
def test_secrets_are_never_written(default_params, tmp_path, key_env, monkeypatch):
    """A canary key travels the whole pipeline over HTTP and appears in no output.

    One model answers through the Batch API (issue 23: a batch study end to end through
    Snakemake): its jobs log their batches' progress, the journal holds every batch
    ingested, each line was answered once, and Snakemake has nothing left to do."""
    canary = "sk-canary-7f3a9c1e5b2d4068"
    monkeypatch.setenv(KEY_ENV, canary)
    base = study_params(default_params, "philautia", "pomms", small=True)
    with SimServer(validate_params(default_params), api_key=canary) as server:
        params = api_params(base, "openai", server.url, base["philautia"]["models"])
        params["panel"]["corvid-pro"]["batch"] = True
        params["backends"] = {"openai": {"batch_poll_s": 0.2, "batch_poll_max_s": 1.0}}
        project = make_project(tmp_path, params)
        run([str(BIN / "judgebias"), "export-dvc"], project)
        run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
        assert server.stats["outcomes"]["ok"] > 0
        batched = server.stats["outcomes"]["batch"]
    leaks = [str(path) for path in project.rglob("*")
             if path.is_file() and canary.encode() in path.read_bytes()]
    assert leaks == []
    metrics = json.loads((project / "results/philautia/ref_free/metrics.json").read_text())
    assert set(metrics["philautia"]) == set(base["philautia"]["models"])
    with Journal(journal_path(project / ".judgebias/journal", "openai",
                              "sim/corvid-pro")) as journal:
        assert journal.count() == batched > 0  # every line answered (paid) once
        assert journal.live_batches("openai", "sim/corvid-pro") == []
    log = (project / "logs/caption/corvid-pro.log").read_text()
    assert "1 batches submitted" in log and "completed, 12 of 12 done" in log
    assert "Nothing to be done" in run([str(BIN / "snakemake"), "-n", "--cores", "1"],
                                       project).stdout
