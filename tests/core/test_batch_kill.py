"""A batch-mode job killed with SIGKILL at each moment of specs/batch.md §4, then run
again: every answer present, one file and one batch on the provider, every line answered
(paid) once (issue 23, "How it is checked"), for each provider: OpenAI, Gemini and
Anthropic.

The job is a process of its own (tests/helpers/batch_job.py: the provider's backend with
``batch: true`` through run_requests, as a pipeline job); serve-sim carries the action
out and then holds its reply back (``BatchFaults.hold``), and the test kills the job
while it waits for that reply: the provider has acted, the job never heard of it.

========== ================= ============================================================
moment     held reply        what the journal holds when the job dies
========== ================= ============================================================
uploading  file upload       batch ``uploading``: no file id (the file is on the server)
creating   batch create      ``uploaded``: a file id, no batch id (the batch exists)
polling    first poll        ``submitted``; the batch is still in progress
finished   the poll that     ``submitted``; the provider finished it (answered, billed)
           completes it
downloading output download  ``finished``: output file ids, no answer yet
========== ================= ============================================================

Anthropic's Message Batches take their requests inline: there is no upload (so no
``uploading`` moment), and ``creating`` leaves a batch the provider does not name after
us, which the resumed job finds by its requests (judgebias.models.anthropic_batch); its
``content`` is the results download.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.api import (
    KEY,
    KEY_ENV,
    anthropic_client,
    api_params,
    gemini_client,
    openai_client,
    sim_server,
)
from helpers.batch import MODEL, batch_requests, on_provider
from helpers.claude import philautia_parsed

from judgebias.config import load_config
from judgebias.devtools.serve_sim.faults import BatchFaults
from judgebias.models.journal import BATCH_DONE, Journal, request_key
from judgebias.models.panel import panel_models
from judgebias.models.registry import backend_version

JOB = Path(__file__).resolve().parents[1] / "helpers" / "batch_job.py"
MOMENTS = {  # moment: (held action, seconds until the provider finishes a batch)
    "uploading": ("upload", 0.0),
    "creating": ("create", 0.0),
    "polling": ("retrieve", 3.0),
    "finished": ("retrieve", 0.0),
    "downloading": ("content", 0.0),
}
PROVIDERS = {"openai": openai_client, "gemini": gemini_client, "anthropic": anthropic_client}
CASES = [(provider, moment) for provider in PROVIDERS for moment in sorted(MOMENTS)
         if (provider, moment) != ("anthropic", "uploading")]  # nothing is uploaded


def _params(config: dict[str, Any], provider: str, url: str, folder: Path) -> Path:
    if provider == "anthropic":  # a study Claude judges without log-probs
        config = philautia_parsed(config)
    params = api_params(config, provider, url, models=["corvid-pro"])
    params["panel"]["corvid-pro"]["batch"] = True
    params.setdefault("backends", {})[provider] = {"batch_poll_s": 0.2,
                                                   "batch_poll_max_s": 0.5}
    path = folder / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def _job(params: Path, journal: Path) -> subprocess.Popen[str]:
    env = {**os.environ, KEY_ENV: KEY,
           "PYTHONPATH": os.pathsep.join([str(JOB.parents[1]), os.environ.get(
               "PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, str(JOB), str(params), str(journal)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.parametrize(("provider", "moment"), CASES)
def test_a_killed_batch_job_resumes_without_paying_twice(config, tmp_path, moment,
                                                         provider):
    action, completion_s = MOMENTS[moment]
    faults = BatchFaults(hold=(action,), hold_s=30.0)
    with sim_server(config, batch_faults=faults, batch_completion_s=completion_s) as server:
        params = _params(config, provider, server.url, tmp_path)
        store = {"openai": server.batches, "gemini": server.gemini_batches,
                 "anthropic": server.anthropic_batches}[provider]
        journal = tmp_path / "journal.sqlite"
        job = _job(params, journal)
        try:
            assert store.held[action].wait(timeout=120), job.communicate()
        finally:
            os.kill(job.pid, signal.SIGKILL)
            job.wait(timeout=30)
        assert job.returncode == -signal.SIGKILL
        with Journal(journal) as opened:
            assert opened.count() == 0  # nothing answered before the kill
        again = _job(params, journal)
        out, err = again.communicate(timeout=300)
        assert again.returncode == 0, err[-3000:]
        assert json.loads(out)["ok"] == 6
        # adopted or polled, never made twice; every line paid once
        client = PROVIDERS[provider](server)
        assert on_provider(provider, client) == (1, 1)
        assert server.stats["outcomes"]["batch"] == 6
    version = backend_version(panel_models(load_config(params))["corvid-pro"])
    keys = [request_key(r, provider, version) for r in batch_requests()]
    with Journal(journal) as opened:
        assert len(opened.lookup(keys)) == 6 and opened.failure_count() == 0
        assert opened.live_batches(provider, MODEL) == []
        assert opened._db.execute("SELECT state FROM batches").fetchall() == [(BATCH_DONE,)]
