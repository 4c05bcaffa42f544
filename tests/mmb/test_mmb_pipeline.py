"""MMB end to end on the default synthetic data and simulated judge (a project copy with
the default `mmb:` block and no other study): the planted answer is recovered, and a
change reruns only what depends on it (issue: incrementality)."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.project import BIN, job, make_project, planned_jobs, run, study_params, write_params

from judgebias.studies.mmb.sim import JudgeTraits, landscape_key, position_bias
from judgebias.studies.mmb.tables import read_pool

ANALYSIS = Counter([job("mmb_factorial", judge="corvid-pro"), job("mmb_analysis"),
                    job("mmb_save", judge="corvid-pro"), job("card"), job("report")])



@pytest.fixture(scope="module")
def mmb_project(tmp_path_factory, default_params):
    project = make_project(tmp_path_factory.mktemp("mmb"), study_params(default_params, "mmb"))
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    return project


@pytest.mark.slow
def test_planted_answer_is_recovered(mmb_project, default_params):
    """Instruction reliability is planted per style, with the judge's own landscape
    (issue 20: no default tuned so MMB wins). Whichever way it comes out, the report says
    whether MMB beats AVG and BPE (interval over test groups, BY-adjusted p, verdict);
    a planted best instruction tops at least one style-dominated cluster, K = 1 is BPE
    exactly (entropy per_group), and a badly set tau (near-uniform assignments) raises
    ECE. Level and power of the comparison: tests/mmb/test_mmb_comparison.py and
    benchmarks/mmb_power.py."""
    metrics = json.loads((mmb_project / "results/mmb/metrics.json").read_text())
    judge = metrics["judges"]["corvid-pro"]
    assert set(judge["comparisons"]) == {"MMB - AVG", "MMB - BPE"}
    tests = pd.read_parquet(mmb_project / "results/mmb/comparisons.parquet")
    assert (tests["low"] <= tests["high"]).all() and (tests["ece_low"] <= tests["ece_high"]).all()
    assert (tests["p_adjusted"] >= tests["p_value"]).all()
    assert set(tests["verdict"]) <= {"MMB better", "MMB worse", "not distinguishable"}
    power = pd.read_parquet(mmb_project / "results/mmb/power.parquet")
    assert power["per_cluster"].iloc[0] == 0
    assert power.iloc[0]["MMB"] == pytest.approx(power.iloc[0]["AVG"])  # no data: AVG
    assert judge["top_prompt_matches"] >= 1 and judge["clusters_with_style"] > 0
    assert judge["pairs_dropped"] == 0 and judge["smoothed_answers"] == 0
    runs = pd.read_parquet(mmb_project / "results/mmb/factorial/corvid-pro/configurations.parquet")
    keys = ["n_prompts", "n_val", "train_seed", "sampling_seed"]
    bpe = runs[runs["method"] == "BPE"].set_index(keys)["ece"]
    k1 = runs[(runs["method"] == "MMB") & (runs["k"] == 1)].groupby(keys)["ece"].mean()
    pd.testing.assert_series_equal(k1.sort_index(), bpe.sort_index(), check_names=False,
                                   atol=1e-9)
    sweep = pd.read_parquet(mmb_project / "results/mmb/tau_sweep.parquet").set_index("tau")
    assert sweep.loc[1.0, "ece"] > sweep.loc[0.05, "ece"]  # near-uniform p(z|x): worse
    assert sweep["mean_entropy"].is_monotonic_increasing
    html = (mmb_project / "results/report.html").read_text()
    assert "MMB: calibrating a pairwise image judge" in html and "<strong>" in html
    assert "Does MMB beat AVG and BPE?" in html and "Power view" in html
    assert re.search(r"<td>(def|tpl|reph|per)-\d+: \w", html)  # instructions with their text


@pytest.mark.slow
def test_the_card_shows_the_planted_traits(mmb_project, default_params):
    """Issue 22: the default judge's MMB rows on results/judges.parquet. Its planted
    miscalibration (STD's ECE above the best calibrated method's), the study's verdict
    that MMB weights help (the same numbers, significant on the card, recommended), its
    brightness bias (over-confident on no-preference pairs), and its planted position
    pulls: each instruction's b(a) (sim.py), whose mean over the pool sets the pooled
    first-slot rate of one randomised order (no PC or PF without both orders)."""
    card = pd.read_parquet(mmb_project / "results/judges.parquet")
    rows = card[card["study"] == "mmb"]
    assert set(rows["model"]) == {"corvid-pro"}  # the judged model only, not the panel
    mine = rows.set_index("measure")
    assert mine.loc["ece_std", "estimate"] > mine.loc["ece_best", "estimate"]
    assert mine.loc["mce_std", "estimate"] > mine.loc["mce_best", "estimate"]
    tests = pd.read_parquet(mmb_project / "results/mmb/comparisons.parquet")
    for test in tests.to_dict("records"):
        row = mine.loc[f"mmb_vs_{test['comparison'][-3:].lower()}_brier"]
        assert (row["estimate"], row["p_value"]) == (test["difference"], test["p_value"])
        if test["verdict"] == "MMB better":
            assert row["significant"] and row["recommendation"].startswith("MMB weights")
    assert mine.loc["nopref_confidence_std", "estimate"] > 0.5

    planted = default_params["panel"]["corvid-pro"]["sim"]["mmb"]["position_bias"]
    traits = JudgeTraits(experts={}, position_bias=planted,
                         world=landscape_key(default_params["seed"], "corvid-pro"))
    pool = read_pool(mmb_project / "data/mmb/instructions.yaml")
    pull = np.mean([position_bias(traits, text) for text in pool["text"]])
    first, gap = mine.loc["first_slot_rate"], mine.loc["gold_slot_gap"]
    assert np.sign(first["estimate"] - 0.5) == np.sign(pull) and first["significant"]
    assert np.sign(gap["estimate"]) == np.sign(pull) or not gap["significant"]
    assert mine.loc[["pc", "pf"], "estimate"].isna().all()
    assert mine.loc["pf", "note"].startswith("one order only")


@pytest.mark.slow
def test_changes_rerun_only_what_depends_on_them(mmb_project, default_params):
    assert planned_jobs(mmb_project) == Counter()

    # where the embedding cache lies: a run setting (x-run-setting), declared by no rule
    params = study_params(default_params, "mmb")
    params["mmb"]["embedding"]["cache_dir"] = ".judgebias/moved-embeddings"
    write_params(mmb_project, params)
    assert planned_jobs(mmb_project) == Counter()

    params = study_params(default_params, "mmb")  # tau: no clustering, no embedding, no judge call
    params["mmb"]["clustering"]["tau"] = 0.1
    write_params(mmb_project, params)
    assert planned_jobs(mmb_project) == ANALYSIS

    # K: reclustering. The data job is checked to carry the largest K (its rule declares
    # it), so it reruns, and so does all after it: the judge job finds every answer in the
    # journal, the embedding job every embedding in the cache.
    params = study_params(default_params, "mmb")
    params["mmb"]["clustering"]["ks"] = [*params["mmb"]["clustering"]["ks"], 3]
    write_params(mmb_project, params)
    assert planned_jobs(mmb_project) == ANALYSIS + Counter([
        job("mmb_data"), job("mmb_judge", judge="corvid-pro"), job("mmb_embed"),
        job("mmb_cluster")])
    run([str(BIN / "snakemake"), "data/mmb/clusters.parquet",
         "data/mmb/judgements/corvid-pro.parquet", "--cores", "2"], mmb_project)
    assert "'computed': 0" in (mmb_project / "logs/mmb/embed.log").read_text()
    log = (mmb_project / "logs/mmb/judge/corvid-pro.log").read_text()
    assert re.search(r"\d+ requests, \d+ from the journal, 0 new calls", log)

    extra = mmb_project / "extra.yaml"  # one more instruction: judged alone
    extra.write_text(yaml.safe_dump([{"id": "mine-01", "kind": "rephrasing",
                                      "text": "Which picture is nicer to look at?"}]))
    params["mmb"]["instructions"]["extra"] = str(extra)
    write_params(mmb_project, params)
    assert planned_jobs(mmb_project) == ANALYSIS + Counter([job("mmb_pool"),
                                                            job("mmb_judge", judge="corvid-pro")])
    run([str(BIN / "snakemake"), "data/mmb/judgements/corvid-pro.parquet", "--cores", "2"],
        mmb_project)
    pairs = len(pd.read_parquet(mmb_project / "data/mmb/pairs.parquet"))
    log = (mmb_project / "logs/mmb/judge/corvid-pro.log").read_text()
    found = re.search(r"(\d+) requests, (\d+) from the journal, (\d+) new calls", log)
    assert found and int(found.group(3)) == pairs and int(found.group(2)) == 44 * pairs


@pytest.mark.slow
@pytest.mark.browser
def test_report_reads_well_in_chromium(mmb_project, browser):
    """The report this project built, in headless Chromium (tests/helpers/report_browser.py)."""
    from helpers.report_browser import check_report

    check_report(browser, mmb_project / "results/report.html", ['MMB'], "mmb")
