"""BIRCH end to end: the default block on the synthetic data and simulated panel (every
artifact, the report section, incrementality), and panels the default does not use, each
varying one planted trait, where the measures must order the judges as planted (spec
birch.md, "What the simulated judge must plant")."""

from __future__ import annotations

import copy
import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from helpers.project import (
    BIN,
    job,
    make_project,
    planned_jobs,
    run,
    study_params,
    undeclared_reads,
    write_params,
)
from statsmodels.stats.multitest import multipletests

from judgebias.studies.birch import vqa
from judgebias.workflow.paramsread import RECORD_ENV


@pytest.fixture(scope="module")
def birch_project(tmp_path_factory, default_params):
    project = make_project(tmp_path_factory.mktemp("birch"),
                           study_params(default_params, "birch", small=True))
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    return project


@pytest.mark.slow
def test_default_run_writes_every_table_and_the_report(birch_project):
    from judgebias.studies.birch.tables import FIGURES, TABLES

    results = birch_project / "results/birch/synthetic"
    for name in TABLES:
        assert (results / f"{name}.parquet").exists(), name
    for name in FIGURES:
        assert (results / "figures" / f"{name}.png").stat().st_size > 1000, name
    # Fig. 4's curve per judge, a DVC plot: one row per CDS share, its analytic line exact
    for judge in ("corvid-pro", "lumen-large", "lumen-mini", "corvid-lite"):
        curve = pd.read_csv(results / "curves" / "cds_share" / f"{judge}.csv")
        assert list(curve.columns) == ["target_ratio", "accuracy", "analytic"], judge
        assert curve["target_ratio"].is_monotonic_increasing and curve.notna().all().all()
    metrics = json.loads((results / "metrics.json").read_text())
    assert metrics["counts"]["pairs"] == 200
    assert set(metrics["judges"]) == {"corvid-pro", "lumen-large", "lumen-mini",
                                      "corvid-lite"}
    downsampled = pd.read_parquet(results / "downsampling.parquet")
    per_statistic = downsampled.groupby(["judge", "variant", "statistic"]).size()
    assert (per_statistic == 160).all()  # Appendix C.3: 4 x 4 x 10
    table7 = pd.read_parquet(results / "table7.parquet").iloc[0]
    assert table7["against"] == "planted informativeness" and table7["kappa"] > 0.8
    methods = pd.read_parquet(results / "table4.parquet").pivot(index="judge",
                                                                  columns="method")
    drop = methods[("acc_ids", "base")] - methods[("acc_ids", "standard_ref")]
    assert drop.mean() > 0.05  # Standard Ref penalises details its reference omits
    table2 = pd.read_parquet(results / "table2.parquet").set_index("judge")
    # equal lengths leave the informativeness part of IB (the most length-driven judges)
    assert (table2.loc[["corvid-lite", "lumen-large"], "ib_after"] > 0.3).all()
    # Table 5 analogue: the anchor repairs a false claim more often the better the judge
    # sees (planted perception: corvid-pro 0.9, lumen-large 0.7, lumen-mini 0.3,
    # corvid-lite 0.15), and the sharpest eyes write anchors truer than either answer
    table5 = pd.read_parquet(results / "table5.parquet").set_index(["text", "model"])
    repaired = table5.loc["Anchor", "repaired"]
    assert list(repaired.sort_values(ascending=False).index) == [
        "corvid-pro", "lumen-large", "lumen-mini", "corvid-lite"]
    assert table5.loc[("Anchor", "corvid-pro"), "truthful"] > table5.loc[
        [("Answer 1", ""), ("Answer 2", "")], "truthful"].max()
    html = (birch_project / "results/report.html").read_text()
    assert "BIRCH: image reliance, informativeness bias" in html
    assert "Table 7 analogue" in html
    section = html.split('<section id="study-birch">')[1]  # the card's section is first
    assert section.index('class="headline"') < section.index("pairwise VQA items")


@pytest.mark.slow
def test_a_new_labeller_reruns_labelling_and_the_measures_never_a_judge_call(
        birch_project, default_params, tmp_path, monkeypatch):
    assert planned_jobs(birch_project) == Counter()
    logs = birch_project / "logs/birch/synthetic/judge"
    judge_logs = {p: p.read_text() for p in logs.rglob("*.log")}
    params = study_params(default_params, "birch", small=True)
    params["birch"]["labeller"] = "lumen-large"
    write_params(birch_project, params)
    assert planned_jobs(birch_project) == Counter([
        job("birch_label", birch_dataset="synthetic"),
        job("birch_analysis", birch_dataset="synthetic"), job("card"), job("report")])
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], birch_project)
    assert {p: p.read_text() for p in judge_logs} == judge_logs
    table7 = pd.read_parquet(birch_project / "results/birch/synthetic/table7.parquet").iloc[0]
    assert table7["labeller"] == "lumen-large"
    # repeats for the card's RS: one repeats job per judge, the card and the report; the
    # study's own analysis does not read them (birch.repeats is not one of its keys)
    params["birch"]["repeats"] = 3
    write_params(birch_project, params)
    judges = params["birch"]["models"]
    assert planned_jobs(birch_project) == Counter([
        *(job("birch_repeat", birch_dataset="synthetic", birch_judge=j) for j in judges),
        job("card"), job("report")])
    monkeypatch.setenv(RECORD_ENV, str(tmp_path / "reads"))  # the params each step reads
    run([str(BIN / "snakemake"), "results/judges.parquet", "--cores", "2", "--quiet"],
        birch_project)
    monkeypatch.delenv(RECORD_ENV)
    assert undeclared_reads(birch_project, tmp_path / "reads", every_step=False) == {}
    card = pd.read_parquet(birch_project / "results/judges.parquet")
    rs = card[(card["study"] == "birch") & (card["measure"] == "rs")].set_index("model")
    assert set(rs.index) == set(judges)
    # every default judge samples (noise > 0): RS at or above the chance floor of 3
    # repeats of 2 options (3/4; a near-random judge's estimate may fall just below it)
    # and below 1, the more so the clearer its pulls (lumen-mini, the weakest, lowest)
    assert np.allclose(rs["chance"], 0.75) and (rs["estimate"] < 1).all()
    assert (rs["ci_high"] >= 0.75).all() and rs["estimate"].idxmin() == "lumen-mini", rs
    assert (rs["ci_low"] <= rs["estimate"]).all() and (rs["estimate"] <= rs["ci_high"]).all()

    # swapping orders: one new verdict job per (judge, variant), nothing else upstream
    params["birch"]["swap_order"] = True
    write_params(birch_project, params)
    planned = planned_jobs(birch_project)
    assert planned[job("birch_judge", birch_dataset="synthetic", birch_judge="corvid-pro",
                       birch_variant="base")] == 1
    assert not any(rule in ("birch_data", "birch_label", "birch_prepare", "birch_equalise")
                   for rule, _ in planned)


@pytest.mark.slow
def test_card_has_the_default_panels_rows_copied_from_the_study(birch_project):
    """The card (results/judges.parquet, built by the default `snakemake`) holds BIRCH's
    rows for its four judges only, each number copied from the study's tables; IB is
    planted strong for three of them (informativeness 1.0-1.8) and its interval is above
    0; one order only (swap_order false): PC and PF say so, the one-order measures stand."""
    judges = {"corvid-pro", "lumen-large", "lumen-mini", "corvid-lite"}
    card = pd.read_parquet(birch_project / "results/judges.parquet")
    rows = card[card["study"] == "birch"]
    assert set(rows["model"]) == judges
    per_judge = rows.groupby("model")["measure"].apply(set)
    assert (per_judge == {"accuracy", "irs", "ib", "lb", "balanced_accuracy", "birch_gain",
                          "pc", "pf", "rs", "extraction_rate", "first_slot_rate",
                          "gold_slot_gap"}).all()
    rows = rows.set_index(["model", "measure"])
    intervals = _by(birch_project, "intervals", variant="base", statistic="ib", versus="")
    for judge in judges:
        assert rows.loc[(judge, "ib"), "estimate"] == intervals.loc[judge, "estimate"]
        assert rows.loc[(judge, "ib"), "ci_low"] == intervals.loc[judge, "low"]
        assert np.isnan(rows.loc[(judge, "pf"), "estimate"])
        assert "one order only" in rows.loc[(judge, "pf"), "note"]
    assert (rows.loc[[(j, "ib") for j in ("corvid-pro", "lumen-large", "corvid-lite")],
                     "ci_low"] > 0).all()
    tests = _by(birch_project, "tests", variant="birch", pair_set="labelled")
    for judge in judges:
        assert rows.loc[(judge, "birch_gain"), "p_value"] == tests.loc[judge, "p_value"]
    # the card's headline cells, DVC's metrics (results/card/): IB per judge, as on the card
    assert json.loads((birch_project / "results/card/birch.ib.json").read_text()) == {
        judge: rows.loc[(judge, "ib"), "estimate"] for judge in judges}


# --------------------------------------------------------------------- planted panels

TRAIT_PANELS = {
    # only perception differs: IRS, the no-image rise of IB and BIRCH's gain follow it
    "perception": {"eyes-low": {"perception": 0.1}, "eyes-mid": {"perception": 0.5},
                   "eyes-high": {"perception": 1.0}},
    # only the pull of informativeness differs: IB follows it
    "informativeness": {"pull-low": {"informativeness": 0.2},
                        "pull-mid": {"informativeness": 1.0},
                        "pull-high": {"informativeness": 2.0}},
    # only the pull of length differs: LB follows it
    "length": {"len-none": {"length": 0.0}, "len-mid": {"length": 0.6},
               "len-high": {"length": 1.5}},
    # a pull towards the answer shown first (one order, drawn by the seeded generator, as
    # the default judges); every other judge has none
    "position": {"pos-first": {"position_bias": 0.5}},
}
SHARED = {"image_use": 0.3, "informativeness": 1.0, "correctness": 2.5, "noise": 1.0,
          "perception": 0.7}
# A judge with no bias at all (a world the default does not use): no pull of
# informativeness, length or position, no eyes and no use for a reference, so every
# verdict is a fair coin on every variant and every IB, LB, IRS and gain is 0.
COIN = ("coin", {"informativeness": 0.0, "correctness": 0.0, "length": 0.0,
                 "position_bias": 0.0, "perception": 0.0, "omission": 0.0, "noise": 1.0})


def planted_params(default_params: dict) -> dict:
    params = study_params(default_params, "birch", small=True)
    template = params["panel"]["corvid-pro"]
    planted = [*(item for traits in TRAIT_PANELS.values() for item in traits.items()), COIN]
    for key, traits in planted:
        model = copy.deepcopy(template)
        model["model_id"] = f"sim/{key}"
        model["sim"]["birch"] = {**SHARED, **traits}
        model["sim"]["signature"] = key.replace("-", "")  # distinct, no scene word
        model["sim"].pop("mmb", None)
        model["sim"].pop("frame", None)
        params["panel"][key] = model
    params["birch"].update(models=[key for key, _ in planted],
                           variants=["base", "no_image", "birch"])
    params["birch"]["datasets"]["synthetic"]["n_pairs"] = 1200
    return params


@pytest.fixture(scope="module")
def planted_project(tmp_path_factory, default_params):
    project = make_project(tmp_path_factory.mktemp("birch-planted"),
                           planted_params(default_params))
    run([str(BIN / "snakemake"), "results/birch/synthetic/metrics.json",
         "results/judges.parquet", "--cores", "2", "--quiet"], project)
    return project


def _by(project, table: str, **where) -> pd.DataFrame:
    frame = pd.read_parquet(project / f"results/birch/synthetic/{table}.parquet")
    for column, value in where.items():
        frame = frame[frame[column] == value]
    return frame.set_index("judge")


@pytest.mark.slow
def test_measures_order_the_judges_as_planted(planted_project):
    """Each panel varies one trait. With ~1,000 usable pairs a difference of accuracies
    has a standard error of about 0.02, so neighbours are compared with that margin of
    noise and the extremes must be apart by several standard errors.

    BIRCH's gain in Acc_CDS rests on the ~210 CDS pairs only: each judge's gain has a
    bootstrap se of about 0.045 and the difference of two judges' gains about 0.06. The
    sim's own draws (its functions, 200 draws per pair on this panel's pairs) put the
    expected gains at 0.075 / 0.19 / 0.26 for perception 0.1 / 0.5 / 1.0, so mid - low =
    0.115 and high - low = 0.18: the old margins (mid - low > 0.1, high - low > 0.15)
    held with probability 0.59 and 0.72 over redraws of the answers. The `{{image}}`
    markers changed the request text, hence every draw; the sim reads the new layout
    right (answers, reference and image as before), and the observed 0.014 sits at the
    3.6th percentile of that distribution. What is planted and holds with high
    probability: BIRCH's gain is positive for the judges that see (its interval above
    0: about 0.99 for mid, ~1 for high) and larger for sharp eyes than for blind ones
    (0.999)."""
    low, mid, high = TRAIT_PANELS["perception"]
    irs = _by(planted_project, "table1")["irs"]  # IRS tracks perception
    assert irs[high] - irs[low] > 0.04 and irs[mid] > irs[low] - 0.02
    ib = _by(planted_project, "bias", statistic="IB", variant="base")["value"]
    ib_blind = _by(planted_project, "bias", statistic="IB", variant="no_image")["value"]
    assert ib_blind[high] - ib[high] > 0.08  # IB is larger without the image
    assert ib_blind[low] - ib[low] > -0.06  # ...and about the same for a judge that can't see
    gain = _by(planted_project, "intervals", variant="birch", statistic="acc_cds",
               versus="base")
    assert (gain.loc[[mid, high], "low"] > 0).all(), gain  # BIRCH raises Acc_CDS...
    assert gain.loc[high, "estimate"] > gain.loc[low, "estimate"]  # ...more for sharp eyes
    methods = pd.read_parquet(planted_project / "results/birch/synthetic/table4.parquet")
    wide = methods.pivot(index="judge", columns="method", values="ib")
    seeing = [j for j in wide.index if j != COIN[0]]
    assert (wide.loc[seeing, "birch"] < wide.loc[seeing, "base"]).all()  # BIRCH lowers IB
    pull = list(TRAIT_PANELS["informativeness"])  # IB orders the judges as planted
    assert ib[pull].is_monotonic_increasing and ib[pull[-1]] - ib[pull[0]] > 0.4
    length = list(TRAIT_PANELS["length"])  # and so does LB, by the length weight
    lb = _by(planted_project, "bias", statistic="LB", variant="base")["value"]
    assert lb[length].is_monotonic_increasing and lb[length[-1]] - lb[length[0]] > 0.25


@pytest.mark.slow
def test_a_judge_with_no_bias_shows_none(planted_project):
    """The coin judge (no bias at all): every difference it is measured by (IB, LB, IRS,
    BIRCH's gains) is 0 in truth. Its 23 intervals are strongly correlated (one fluke on
    the ~210 CDS pairs moves Acc_CDS, IB and balanced accuracy together: on this seed 18
    of 23 cover 0, the others miss it by at most 0.02), so neither "all cover 0" nor
    "most cover 0" is a high-probability claim; what is: no estimate lies more than 3.5
    bootstrap se from 0 (P(fail) at most 23 x 0.0005; here the largest is 2.4 se), and
    none of its McNemar
    tests is significant after BH within its own six (the family-wise rate under a
    global null, <= 0.05: benchmarks/birch_null.py)."""
    intervals = _by(planted_project, "intervals").loc[COIN[0]]
    differences = intervals[intervals["statistic"].isin(["ib", "lb", "irs", "irs_ids",
                                                          "irs_cds"])
                            | (intervals["versus"] == "base")]
    assert len(differences) >= 20
    assert (differences["estimate"].abs() < 3.5 * differences["se"]).all(), differences
    tests = _by(planted_project, "tests").loc[[COIN[0]]]
    own = multipletests(tests["p_value"], alpha=0.05, method="fdr_bh")[0]
    assert not own.any(), tests
    accuracy = _by(planted_project, "table4", method="base").loc[COIN[0]]
    assert abs(accuracy["acc"] - 0.5) < 0.06  # a fair coin: about 0.5 on ~800 pairs


def planted_first_rate(pairs: pd.DataFrame, traits: dict) -> float:
    """The expected first-slot pick rate of a simulated judge with `traits` on these
    pairs in the order shown (ab), Base variant, exactly: per the sim
    (studies/birch/sim.py), P(first wins) = sigmoid((u(first) - u(second) + position_bias)
    / noise), where u(X) = informativeness * facts(X) - correctness * caught(X) + length *
    words(X) / 10 and each false fact of X is caught with P = image_use * perception
    independently per request (so caught ~ Binomial); the rate is its mean over pairs."""
    from scipy.special import expit
    from scipy.stats import binom

    from judgebias.data.scenes import scene_from_json
    from judgebias.studies.birch.traits import Traits

    t = Traits(**traits)
    q = t.image_use * t.perception
    leans = []
    for row in pairs.itertuples():
        truth = vqa.true_facts(scene_from_json(row.scene))
        sides = []
        for text in (row.answer_a, row.answer_b):
            facts = vqa.read_facts(text)
            wrong = sum(vqa.is_true(f, truth) is False for f in facts)
            caught = np.arange(wrong + 1)
            sides.append((t.informativeness * len(facts) + t.length * len(text.split()) / 10
                          - t.correctness * caught, binom.pmf(caught, wrong, q)))
        (u_a, p_a), (u_b, p_b) = sides
        weight = p_a[:, None] * p_b[None, :]
        du = u_a[:, None] - u_b[None, :]
        leans.append((weight * expit((du + t.position_bias) / t.noise)).sum())
    return float(np.mean(leans))


@pytest.mark.slow
def test_the_card_recovers_the_planted_traits(planted_project):
    """The card of the planted panel (one order, as the default judges; the shown order is
    a seeded draw, so the one-order measures are tested). Position: the judge with a
    first-position pull (position_bias 0.5) picks the first-shown answer more often,
    flagged after the card's FDR, within 3 Wilson se of the sim's exact expectation on
    these pairs (:func:`planted_first_rate`); PC and PF say they need both orders; no
    other judge (position_bias 0) is flagged on the first-slot rate. The coin judge has
    no significant row at all. IB and LB order their panels as planted, and the
    strongest informativeness pull is flagged (the card's two-proportion score test); IRS
    and BIRCH's gain carry the study's McNemar p-values."""
    card = pd.read_parquet(planted_project / "results/judges.parquet")
    planted = [key for traits in TRAIT_PANELS.values() for key in traits] + [COIN[0]]
    assert set(card["model"]) == set(planted) and (card["study"] == "birch").all()
    rows = card.set_index(["model", "measure"])
    (pulled, traits), = TRAIT_PANELS["position"].items()
    pairs = pd.read_parquet(planted_project / "data/birch/synthetic/pairs.parquet")
    truth = planted_first_rate(pairs, {**SHARED, **traits})
    rate = rows.loc[(pulled, "first_slot_rate")]
    se = (rate["ci_high"] - rate["ci_low"]) / (2 * 1.96)
    assert abs(rate["estimate"] - truth) < 3 * se, (truth, rate.to_dict())
    assert truth > 0.55 and rate["estimate"] > 0.5 and rate["significant"]
    assert "shown first" in rate["reading"]
    assert np.isnan(rows.loc[(pulled, "pf"), "estimate"])
    assert "one order only" in rows.loc[(pulled, "pf"), "note"]
    others = [key for key in planted if key != pulled]
    assert not rows.loc[[(key, "first_slot_rate") for key in others], "significant"].any()
    assert not card.loc[card["model"] == COIN[0], "significant"].any()
    pull = [(key, "ib") for key in TRAIT_PANELS["informativeness"]]
    assert rows.loc[pull, "estimate"].is_monotonic_increasing
    length = [(key, "lb") for key in TRAIT_PANELS["length"]]
    assert rows.loc[length, "estimate"].is_monotonic_increasing
    assert (rows.loc[pull + length, "test"]
            == "two-proportion score test (disjoint pair sets)").all()
    assert rows.loc[pull[-1], "significant"]
    tests = pd.read_parquet(planted_project / "results/birch/synthetic/tests.parquet")
    mcnemar = tests.set_index(["judge", "variant", "pair_set"])["p_value"]
    for key in planted:
        assert rows.loc[(key, "irs"), "p_value"] == mcnemar[(key, "no_image", "all")]
        assert rows.loc[(key, "birch_gain"), "p_value"] == mcnemar[(key, "birch", "labelled")]


@pytest.mark.slow
def test_a_logistic_choice_model_recovers_the_planted_weights(planted_project):
    """Without the image nothing is caught, so the simulated choice is exactly
    P(A) = sigmoid(w_info * d_facts + w_len * d_words / 10): a logit fit of the no-image
    verdicts recovers the planted weights (the simulator's own check, not the paper's)."""
    data = planted_project / "data/birch/synthetic"
    pairs = pd.read_parquet(data / "pairs.parquet").set_index("pair_id")
    facts = {s: pairs[f"answer_{s}"].map(lambda t: len(vqa.read_facts(t))) for s in "ab"}
    words = {s: pairs[f"answer_{s}"].str.split().str.len() for s in "ab"}
    design = pd.DataFrame({"facts": facts["a"] - facts["b"],
                           "words10": (words["a"] - words["b"]) / 10})
    for key, planted in {"len-high": 1.5, "len-mid": 0.6}.items():
        verdicts = pd.read_parquet(data / f"verdicts/{key}/no_image.parquet")
        verdicts = verdicts[verdicts["order"] == "ab"]  # as shown: the pair's own order
        chose_a = (verdicts.set_index("pair_id")["verdict"] == "A").astype(float)
        fit = sm.Logit(chose_a.reindex(design.index), design).fit(disp=0)
        low, high = fit.conf_int(alpha=0.01).loc["words10"]
        assert low < planted < high, (key, fit.params.to_dict())
        low, high = fit.conf_int(alpha=0.01).loc["facts"]
        assert low < SHARED["informativeness"] < high
    assert np.isfinite(design.to_numpy()).all()


@pytest.mark.slow
@pytest.mark.browser
def test_report_reads_well_in_chromium(birch_project, browser):
    """The report this project built, in headless Chromium (tests/helpers/report_browser.py)."""
    from helpers.report_browser import check_report

    check_report(browser, birch_project / "results/report.html", ['BIRCH'], "birch")
