"""MMB read from sampled verdicts through Snakemake (issue 41 item 7): a small project
whose judge gives p(y | x, a) from n samples per (pair, instruction, order); what the
journal, the tables, the metrics and the report say, and what a change reruns."""

from __future__ import annotations

import json
import re
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
    write_params,
)

JUDGE = "corvid-pro"
SAMPLES = 4


def _params(default_params: dict, **probability) -> dict:
    params = study_params(default_params, "mmb")
    small_mmb(params)
    params["mmb"]["probability"] = {"source": "samples", "samples": SAMPLES, "prior": 1.0,
                                    "by_judge": {}, **probability}
    return params


@pytest.fixture(scope="module")
def sampled_project(tmp_path_factory, default_params):
    project = make_project(tmp_path_factory.mktemp("mmb-sampled"), _params(default_params))
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    return project


@pytest.mark.slow
def test_every_sample_is_a_call_and_the_report_says_how_p_was_read(sampled_project):
    judged = pd.read_parquet(sampled_project / f"data/mmb/judgements/{JUDGE}.parquet")
    pairs = len(pd.read_parquet(sampled_project / "data/mmb/pairs.parquet"))
    pool = judged["instruction"].nunique()
    assert len(judged) == SAMPLES * pairs * pool and judged["request_key"].is_unique
    assert sorted(judged["sample"].unique()) == list(range(SAMPLES))
    assert set(judged["p_source"]) == {"samples"}
    # the estimate is (k + 1) / (n + 2): a multiple of 1/6 at n = 4
    assert ((judged["p_a"] * (SAMPLES + 2)).round(9) % 1 == 0).all()
    log = (sampled_project / f"logs/mmb/judge/{JUDGE}.log").read_text()
    found = re.search(r"(\d+) requests, (\d+) from the journal, (\d+) new calls", log)
    assert found and int(found.group(3)) == SAMPLES * pairs * pool
    metrics = json.loads((sampled_project / "results/mmb/metrics.json").read_text())
    assert metrics["judges"][JUDGE]["probability"] == {
        "source": "samples", "samples": SAMPLES, "prior": 1.0,
        "usable_samples": SAMPLES * pairs * pool}
    card = pd.read_parquet(sampled_project / "results/judges.parquet")
    rows = card[(card["study"] == "mmb") & (card["model"] == JUDGE)].set_index("measure")
    assert 0.5 <= rows.loc["rs", "estimate"] <= 1  # the samples make RS identifiable
    html = (sampled_project / "results/report.html").read_text()
    assert f"estimated from {SAMPLES} verdicts sampled per" in html


@pytest.mark.slow
def test_the_prior_reruns_the_judge_step_from_the_journal_and_n_asks_only_the_new(
        sampled_project, default_params):
    assert planned_jobs(sampled_project) == Counter()
    analysis = Counter([job("mmb_judge", judge=JUDGE), job("mmb_factorial", judge=JUDGE),
                        job("mmb_analysis"), job("mmb_save", judge=JUDGE), job("card"),
                        job("report")])
    write_params(sampled_project, _params(default_params, prior=0.5))
    assert planned_jobs(sampled_project) == analysis
    write_params(sampled_project, _params(default_params, samples=SAMPLES + 2))
    assert planned_jobs(sampled_project) == analysis
    run([str(BIN / "snakemake"), f"data/mmb/judgements/{JUDGE}.parquet", "--cores", "2"],
        sampled_project)
    log = (sampled_project / f"logs/mmb/judge/{JUDGE}.log").read_text()
    found = re.search(r"(\d+) requests, (\d+) from the journal, (\d+) new calls", log)
    assert found and int(found.group(3)) * SAMPLES == 2 * int(found.group(2))  # 2 new of 6
