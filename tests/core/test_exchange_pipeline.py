"""The round trip of issue 44 item 1 through Snakemake, every study: a judge declared
``backend: external`` is never called; its requests leave with `judgebias requests
export`, serve-sim's OpenAI Batch API answers the exported files (uploaded, batched and
downloaded through the openai SDK, as a researcher would with OpenAI or vLLM's
``run-batch``), `judgebias answers import` brings the answers back, and the pipeline runs
on, round after round (a study's later calls need its earlier answers), until nothing is
left. Every table and metric then equals a run where the same simulated model is called
directly; only the columns naming the backend and the journal key (which carries it)
differ, and what only a simulated judge has (its planted truth)."""

from __future__ import annotations

import copy
import json
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from helpers.api import KEY, RecordingServer, openai_client
from helpers.project import BIN, make_project, run, small_all_studies, write_params

from judgebias.config import validate_params
from judgebias.models.journal import Journal, journal_path

JUDGE = "corvid-pro"  # a judge of every study in small_all_studies
BACKEND_NAMED = {"backend", "request_key", "simulated"}  # differ wherever they appear
# What only a simulated judge has: its planted truth, and a method's recovery of it
PLANTED = {"results/mmb/top_prompts.parquet": {"planted", "matches"},
           "results/mmb/power.parquet": {"recovery"},
           "results/mmb/metrics.json": {"clusters_with_style", "top_prompt_matches"}}


def external(params: dict, key: str) -> dict:
    """`params` with panel model `key` answered elsewhere: its simulated traits gone, its
    log-probs stated (the external backend assumes none)."""
    params = copy.deepcopy(params)
    model = params["panel"][key]
    model.pop("sim")
    model.update(backend="external", abilities={"answer_logprobs": True})
    return params


def answer_in_batch(server: RecordingServer, requests: Path, out: Path) -> None:
    """Answer an exported file through serve-sim's Batch API, as one would OpenAI's."""
    client = openai_client(server)
    uploaded = client.files.create(file=(requests.name, requests.read_bytes()),
                                   purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
    while batch.status not in ("completed", "failed", "expired", "cancelled"):
        time.sleep(0.2)
        batch = client.batches.retrieve(batch.id)
    assert batch.status == "completed" and batch.output_file_id
    out.write_text(client.files.content(batch.output_file_id).text)


def _artifacts(project: Path) -> dict[str, Path]:
    """Every table and metric the run wrote (figures and the report are pictures of them)."""
    return {str(p.relative_to(project)): p for folder in ("data", "results")
            for p in (project / folder).rglob("*") if p.suffix in (".parquet", ".json")}


def _without(value: object, names: set[str]) -> object:
    """A JSON value with the keys `names` left out, at any depth."""
    if isinstance(value, dict):
        return {k: _without(v, names) for k, v in value.items() if k not in names}
    if isinstance(value, list):
        return [_without(v, names) for v in value]
    return value


def _same(name: str, a: Path, b: Path) -> bool:
    """Equal but for the backend's name and, for a simulated judge only, planted truth."""
    names = BACKEND_NAMED | PLANTED.get(name, set())
    if a.suffix == ".json":
        return _without(json.loads(a.read_text()), names) == \
            _without(json.loads(b.read_text()), names)
    left, right = pd.read_parquet(a), pd.read_parquet(b)
    named = [c for c in left.columns if c in names]
    return left.drop(columns=named).equals(right.drop(columns=named))


@pytest.mark.slow  # every study, then again in rounds from the journals (~8 min)
def test_every_study_runs_on_answers_answered_elsewhere(default_params, tmp_path):
    base = small_all_studies(default_params)
    (tmp_path / "online").mkdir()
    online = make_project(tmp_path / "online", base)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], online)
    # The same project with the judge answered elsewhere, rebuilt from nothing but the
    # online run's journals and caches (the other models' answers, MMB's embeddings,
    # FRAME's renders: they change no number, only the time), so every output is
    # remade, the judge's through the exchange. (Not the online run's outputs kept: a
    # job whose params changed and then failed leaves its output deleted, and Snakemake
    # does not remake a missing file whose readers are up to date.)
    project = tmp_path / "exchange"
    shutil.copytree(online, project, symlinks=True,
                    ignore=lambda folder, names: [n for n in names if folder == str(online)
                                                  and n in ("data", "results", "logs",
                                                            ".snakemake")])
    write_params(project, external(base, JUDGE))
    exported: set[str] = set()
    with RecordingServer(validate_params(base), api_key=KEY) as server:
        for round_ in range(1, 8):
            run([str(BIN / "snakemake"), "--cores", "2", "--keep-going", "--quiet"], project,
                check=False)
            folder = project / "exchange" / f"round-{round_}"
            run([str(BIN / "judgebias"), "requests", "export", str(folder), "--max-mb", "16"],
                project)
            manifest = json.loads((folder / "manifest.json").read_text())["models"][JUDGE]
            if not manifest["requests"]:
                assert not manifest["waiting_for_inputs"], manifest
                break
            for name in manifest["files"]:  # cut under serve-sim's 64 MB body limit
                lines = (folder / name).read_text().splitlines()
                keys = {json.loads(line)["custom_id"] for line in lines}
                assert len(keys) == len(lines) and not keys & exported  # each written once
                exported |= keys
                answers = folder / f"answers-{name}"
                answer_in_batch(server, folder / name, answers)
                run([str(BIN / "judgebias"), "answers", "import", str(answers)], project)
        else:
            pytest.fail("requests still left after 7 rounds")
    assert round_ >= 3  # captions, then their scores, then what reads the scores
    assert len(server.answered) == len(exported)  # every request answered once
    with Journal(journal_path(project / ".judgebias/journal", "external",
                              base["panel"][JUDGE]["model_id"])) as journal:
        assert journal.count() == len(exported) and journal.unanswered_exports() == {}
    assert "Nothing to be done" in run([str(BIN / "snakemake"), "-n", "--cores", "1"],
                                       project).stdout
    card = run([str(BIN / "judgebias"), "card", JUDGE], project).stdout
    assert card.splitlines()[0] == f"{JUDGE} (answers imported: judged outside judgebias)"
    assert f"{JUDGE}: imported" in (project / "results/report.html").read_text()

    ours, theirs = _artifacts(project), _artifacts(online)
    assert ours.keys() == theirs.keys()
    differ = sorted(name for name in ours if not _same(name, ours[name], theirs[name]))
    assert differ == []
