"""FRAME end to end on the default synthetic benchmark and simulated judges (a project
copy with the default `frame:` block and no other study): every planted susceptibility,
mitigation effect and pairwise flip is recovered, the paper's in-sample maximum is biased
upward where nothing is planted, and a new grid value renders and judges only its own
images (issue: incrementality)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.project import BIN, make_project, run, study_params

from judgebias.studies.frame.recipes import SHORT_NAMES, applies, step
from judgebias.studies.frame.sim import JudgeTraits, planted_change


@pytest.fixture(scope="module")
def frame_project(tmp_path_factory, default_params):
    project = make_project(tmp_path_factory.mktemp("frame"), study_params(default_params, "frame"))
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    return project


def _traits(params: dict) -> dict[str, JudgeTraits]:
    return {j: JudgeTraits.from_block(params["panel"][j]["sim"]["frame"])
            for j in params["frame"]["models"]}


def _planted(params: dict) -> pd.DataFrame:
    """The planted change of each judge's cell at its planted best setting."""
    rows = []
    for judge, traits in _traits(params).items():
        for manipulation, grid in params["frame"]["manipulations"].items():
            planted = traits.susceptibility.get(manipulation)
            best = planted.best if planted and planted.best is not None else grid[0]
            for domain in ("people", "animal", "illustration", "indoor", "outdoor"):
                if applies(manipulation, domain):
                    rows.append({"judge": judge, "domain": domain,
                                 "manipulation": manipulation, "best": str(best),
                                 "planted": planted_change(traits, [(manipulation, best)],
                                                           domain)})
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_planted_susceptibilities_are_recovered(frame_project, default_params):
    results = frame_project / "results/frame"
    cross = pd.read_parquet(results / "table3_cross_fitted.parquet")
    cells = cross.merge(_planted(default_params), on=["judge", "domain", "manipulation"])
    assert len(cells) == 34 * len(default_params["frame"]["models"])
    real = cells[cells["planted"] >= 0.1]
    found = real["ci_low"] > 0
    assert found.mean() >= 0.9, real[~found]
    covered = ((real["ci_low"] - 0.03 <= real["planted"])
               & (real["planted"] <= real["ci_high"] + 0.03))
    assert covered.mean() >= 0.8, real[~covered]
    zero = cells[cells["planted"] == 0]
    assert (zero["p_value"] < 0.05).mean() <= 0.15  # null cells stay null (5 % expected)
    assert (zero["in_sample_p"] < 0.05).mean() <= 0.15
    # the best setting's simultaneous interval covers the planted best effect
    assert ((real["best_low"] - 0.03 <= real["planted"])
            & (real["planted"] <= real["best_high"] + 0.03)).mean() >= 0.9
    # lumen-mini has no susceptibility: the paper's in-sample maximum over a grid still
    # gains over the cross-fitted estimate, by about what its permutation null says (every
    # cell of an item shares its original's score, so both move with that draw together)
    null_judge = zero[zero["judge"] == "lumen-mini"]
    assert len(null_judge) == 34
    selection = null_judge["in_sample_gain"] - null_judge["cross_fitted_gain"]
    assert selection.mean() > 0.03 and null_judge["null_mean"].mean() > 0.03
    success = pd.read_parquet(results / "attack_success.parquet").set_index(["judge", "reading"])
    assert (success.loc[("lumen-mini", "in_sample"), "success_rate"]
            > success.loc[("lumen-mini", "cross_fitted"), "success_rate"] + 20)
    # a judge with no visual bias "succeeds" ~S/(S+1) of the time in-sample and ~1/2
    # cross-fitted on average (the cells of a domain share their originals, so one run's
    # 34 cells move in five blocks: measured 50 % vs 81 % and 12 % vs 47 %; the average
    # over worlds is tests/frame/test_frame_effects.py's), and no cell survives the FDR
    for reading, chance in (("in_sample", (75, 95)), ("cross_fitted", (30, 55))):
        row = success.loc[("lumen-mini", reading)]
        assert chance[0] < row["chance_rate"] < chance[1]
    metrics = json.loads((results / "metrics.json").read_text())["judges"]
    assert metrics["lumen-mini"]["cells_significant"] == 0
    assert (null_judge["best_low"] <= 0).mean() >= 0.9  # its best effect may be 0


@pytest.mark.slow
def test_greedy_search_finds_the_planted_best_setting(frame_project, default_params):
    recipes = pd.read_parquet(frame_project / "results/frame/recipes/corvid-pro.parquet")
    planted = _planted(default_params)
    strong = planted[(planted["judge"] == "corvid-pro") & (planted["planted"] >= 0.12)
                     & planted["manipulation"].isin(["brightness", "gamma", "padding",
                                                     "keyword_overlay", "instruction_overlay"])]
    chosen = strong.merge(recipes, on=["domain", "manipulation"])
    grid = default_params["frame"]["manipulations"]
    steps_off = []
    for manipulation, best, setting in zip(chosen["manipulation"], chosen["best"],
                                           chosen["setting"], strict=True):
        settings = [step(manipulation, v).setting for v in grid[manipulation]]
        steps_off.append(abs(settings.index(setting)
                             - settings.index(step(manipulation, best).setting)))
    steps_off = pd.Series(steps_off, index=chosen.index)
    # 12 items per domain: the in-sample argmax is the planted setting in most cells and
    # otherwise its neighbour on the grid (the planted dose is a tent around it)
    assert len(chosen) >= 15 and (steps_off == 0).mean() >= 0.7, chosen[steps_off > 0]
    assert (steps_off <= 1).all(), chosen[steps_off > 1]


@pytest.mark.slow
def test_mitigation_pairwise_and_humans_follow_the_plant(frame_project, default_params):
    results = frame_project / "results/frame"
    table5 = pd.read_parquet(results / "table5.parquet").set_index(["prompt", "manipulation"])
    manipulated = [m for m in SHORT_NAMES if ("standard", m) in table5.index]
    change = table5["percent_change"]
    # Fig. 6 (told which manipulation) cuts the gain to 0.3 of it; Fig. 5 to 0.9
    assert (change["bias_definition"][manipulated].mean()
            < 0.6 * change["standard"][manipulated].mean())
    assert change["bias_aware"][manipulated].mean() > change["bias_definition"][manipulated].mean()
    # CoT lifts every score and helps boxes most (seed 004 §6)
    assert table5.loc[("cot", "original"), "original_mean"] > \
        table5.loc[("standard", "original"), "original_mean"] + 0.2
    assert change[("cot", "bounding_box")] > change[("standard", "bounding_box")]
    rates = pd.read_parquet(results / "win_rates.parquet")
    manip = rates[rates["condition"] == "manipulated"]
    assert manip["change"].mean() > 0.05  # instruction overlay flips preferences to A
    correlation = pd.read_parquet(results / "human_correlation.parquet").set_index("judge")
    for judge, traits in _traits(default_params).items():
        assert correlation.loc[judge, "slope_on_alignment"] == pytest.approx(traits.slope,
                                                                             rel=0.25)
    html = (frame_project / "results/report.html").read_text()
    assert "FRAME: visual manipulations" in html and "cross-fitted" in html
    section = html.split('<section id="study-frame">')[1]  # the card's section is first
    headline = section.split('<p class="headline">')[1].split("</p>")[0]  # with numbers
    assert section.index('class="headline"') < section.index("Seed 004.")
    judges = json.loads((results / "metrics.json").read_text())["judges"]
    assert all(f"{judge} " in headline for judge in judges)
    assert headline.startswith("Cells significant after BH-FDR") and "chance" in headline
    assert "gain of a setting chosen on half the items" in html
    assert "best setting&#x27;s effect" in html or "best setting's effect" in html


@pytest.mark.slow
def test_judge_card_shows_each_planted_trait(frame_project, default_params):
    """results/judges.parquet (built by the default target): FRAME's rows for the judges it
    judged, each planted susceptibility significant in its direction where FRAME's own test
    finds it, the judge with no visual bias without a significant row, and the mitigation
    and pairwise rows for the analysis judge only."""
    card = pd.read_parquet(frame_project / "results/judges.parquet")
    card = card[card["study"] == "frame"].set_index(["model", "measure", "setting"])
    frame = default_params["frame"]
    analyst = frame["analysis_judge"]
    assert set(card.index.get_level_values("model")) == set(frame["models"])
    followups = {"mitigation", "win_rate_change", "pc", "pf", "first_slot_rate"}
    for judge in frame["models"]:
        measures = set(card.loc[judge].index.get_level_values("measure"))
        assert (measures & followups == followups) == (judge == analyst), judge
    heads = card[card["headline"]].reset_index()
    assert set(heads["measure"]) == {"inflated_cells", "max_gain", "attack_success"}
    results = frame_project / "results/frame"
    metrics = json.loads((results / "metrics.json").read_text())["judges"]
    cross = pd.read_parquet(results / "table3_cross_fitted.parquet")
    planted = cross.merge(_planted(default_params), on=["judge", "domain", "manipulation"])
    for judge in frame["models"]:
        cells = card.loc[(judge, "inflated_cells", "")]
        assert cells["estimate"] == metrics[judge]["cells_significant"]  # the study's count
        fooled = (planted.loc[planted["judge"] == judge, "planted"] >= 0.1).any()
        assert cells["significant"] == fooled, judge
        gain = card.loc[(judge, "max_gain", "")]
        mine = planted[planted["judge"] == judge]
        top = mine.loc[mine["cross_fitted_percent"].idxmax()]
        assert gain["estimate"] == pytest.approx(top["cross_fitted_percent"])  # not in-sample
        assert not gain["significant"]  # an estimate without a test (card.py)
        if fooled:  # the cell that fools it most is a planted one, named in the reading
            assert gain["estimate"] > 0 and top["planted"] > 0
            assert top["manipulation"].replace("_", " ") in gain["reading"]
            assert cells["reading"].endswith(gain["reading"])
        success = card.loc[(judge, "attack_success", "")]
        assert success["chance"] == pytest.approx(metrics[judge]["chance_cross_fitted"])
        assert np.isnan(success["p_value"]) and "no test" in success["note"]
    null_judge = card.loc["lumen-mini"]
    assert not null_judge["significant"].any(), null_judge[null_judge["significant"]]
    # corvid-pro: Fig. 6's prompt (multiplier 0.3) helps most and is recommended; the
    # instruction overlay lifts set A's win rate; its pull to the first image (0.1 logit) is
    # too weak to show on 60 pairs, and it must not show the other way
    mitigation = card.loc[analyst].xs("mitigation", level="measure")
    assert mitigation.index[0] == "bias_definition"
    told = mitigation.loc["bias_definition"]
    assert told["estimate"] < 0 and told["significant"] and told["recommendation"]
    assert (mitigation["estimate"] < 0).all()
    flip = card.loc[(analyst, "win_rate_change", "")]
    assert flip["estimate"] > 0.05 and flip["significant"]
    pf = card.loc[analyst].xs("pf", level="measure")
    assert (~pf["significant"] | (pf["estimate"] < 0)).all()
    assert card.loc[(analyst, "pc", "original"), "n"] == 12 * 5


@pytest.mark.slow
def test_a_new_grid_value_renders_and_judges_only_its_images(frame_project):
    params = yaml.safe_load((frame_project / "params.yaml").read_text())
    logs = frame_project / "logs/frame"
    before = {j: (logs / f"score/{j}/gamma.log").stat().st_mtime_ns
              for j in params["frame"]["models"]}
    params["frame"]["manipulations"]["padding"].append(35)
    (frame_project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], frame_project)
    n_items = json.loads((frame_project / "data/frame/summary.json").read_text())["items"]
    drawn = re.search(r"(\d+) images: (\d+) drawn", (logs / "render/padding.log").read_text())
    assert int(drawn.group(1)) == 8 * n_items and int(drawn.group(2)) == n_items
    for judge in params["frame"]["models"]:
        text = (logs / f"score/{judge}/padding.log").read_text()
        new = re.findall(r"(\d+) requests, (\d+) from the journal, (\d+) new calls", text)[-1]
        assert int(new[2]) == n_items, text
        # the other grids' jobs did not rerun
        assert (logs / f"score/{judge}/gamma.log").stat().st_mtime_ns == before[judge]


@pytest.mark.slow
@pytest.mark.browser
def test_report_reads_well_in_chromium(frame_project, browser):
    """The report this project built, in headless Chromium (tests/helpers/report_browser.py)."""
    from helpers.report_browser import check_report

    check_report(browser, frame_project / "results/report.html", ["FRAME"], "frame")
