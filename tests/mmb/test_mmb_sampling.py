"""MMB without log-probs (issue 41 item 7): p(y | x, a) from n sampled verdicts per
(pair, instruction, order) (``mmb.probability``), its formula on hand-computed counts, the
sampled rows through the judging core (each sample its own journaled call), how close the
estimate comes to the log-prob route on the simulated judge, what `validate` and `plan`
say, and which rules a change reruns."""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest
from helpers.mmb import judge_inputs

from judgebias.abilities import unmet_needs
from judgebias.config import ConfigError, validate_params
from judgebias.models.context import RunContext
from judgebias.models.journal import Journal, journal_path
from judgebias.studies.mmb.jobs import judge_pairs, sampled_p_first
from judgebias.studies.mmb.params import MmbParams, probability_keys, sampled
from judgebias.studies.mmb.plan import _samples

JUDGE = "corvid-pro"


@pytest.fixture
def params(default_params, tmp_path):
    params = copy.deepcopy(default_params)
    params["journal_dir"] = str(tmp_path / "journal")
    params["mmb"]["probability"] = {"source": "logprobs", "samples": 8, "prior": 1.0,
                                    "by_judge": {JUDGE: "samples"}}
    return validate_params(params)


def judged(params: dict, files: tuple[str, str]) -> pd.DataFrame:
    """`JUDGE`'s judgements rows of the pair table and pool `files`, the job given what
    the judge step gives it (steps.judge)."""
    mmb = MmbParams.from_params(params)
    return judge_pairs(RunContext(params), JUDGE, *files, prompt=mmb.prompt,
                       order=mmb.order, order_seed=mmb.order_seed,
                       how=mmb.probability.of(JUDGE))


def test_the_estimate_on_hand_computed_counts():
    # (k + prior) / (m + 2 prior): 3 of 4 -> 4/6; 0 of 4 -> 1/6; nothing usable -> NaN
    got = sampled_p_first(np.array([3, 0, 0]), np.array([4, 4, 0]), 1.0)
    np.testing.assert_allclose(got[:2], [4 / 6, 1 / 6])
    assert np.isnan(got[2])
    np.testing.assert_allclose(sampled_p_first(np.array([3]), np.array([4]), 0.5), [3.5 / 5])
    # one vote with Laplace's prior is the smoothed choice of a single parsed answer
    np.testing.assert_allclose(sampled_p_first(np.array([1, 0]), np.array([1, 1]), 1.0),
                               [2 / 3, 1 / 3])


def test_sampled_rows_are_their_own_calls_and_give_the_counted_estimate(params, tmp_path):
    params["mmb"]["order"] = "both"
    rows = judged(params, judge_inputs(tmp_path))
    items = 3 * 2  # 3 instructions x 2 orders
    assert len(rows) == items * 8 and sorted(rows["sample"].unique()) == list(range(8))
    assert rows["request_key"].is_unique  # sample r is not a cache hit of sample 0
    seed = params["panel"][JUDGE]["sampling"]["seed"]
    assert (rows["sampling"].map(lambda s: json.loads(s)["seed"]) == seed + rows["sample"]).all()
    assert set(rows["p_source"]) == {"samples"} and rows["p_a"].notna().all()
    for (_, order), group in rows.groupby(["instruction", "order"]):
        k = int((group["label"] == "A").sum())  # the image shown first
        p_first = (k + 1) / (8 + 2)
        expected = p_first if order == "ab" else 1 - p_first
        assert group["p_a"].to_numpy() == pytest.approx([expected] * 8)
    with Journal(journal_path(params["journal_dir"], "sim", f"sim/{JUDGE}")) as journal:
        assert len(journal.lookup(list(rows["request_key"]))) == len(rows)
    again = judged(params, judge_inputs(tmp_path))  # from the journal
    np.testing.assert_array_equal(rows["p_a"].to_numpy(), again["p_a"].to_numpy())


def test_many_samples_come_close_to_the_log_prob_route(params, tmp_path):
    params["mmb"]["probability"]["samples"] = 200
    params["mmb"]["probability"]["prior"] = 0.5
    rows = judged(params, judge_inputs(tmp_path))
    logprob = rows[rows["sample"] == 0]["probs"].map(lambda p: json.loads(p)["A"])
    p_first = rows[rows["sample"] == 0].apply(
        lambda r: r["p_a"] if r["order"] == "ab" else 1 - r["p_a"], axis=1)
    # the sim draws each verdict from the log-prob route's p (temperature 1): within
    # 4 binomial standard errors of it (plus the prior's pull, at most 1/201)
    se = np.sqrt(logprob * (1 - logprob) / 200) + 1 / 201
    assert (np.abs(p_first.to_numpy() - logprob.to_numpy()) <= 4 * se.to_numpy() + 1e-9).all()


def test_validate_refuses_a_judge_without_log_probs_and_names_the_sampling_route(params):
    params["mmb"]["probability"]["by_judge"] = {}
    params["panel"][JUDGE]["abilities"] = {"answer_logprobs": False}
    (problem,) = [p for p in unmet_needs(params) if "mmb" in p]
    assert JUDGE in problem and "log-probs" in problem
    assert "mmb.probability.by_judge" in problem  # the fallback the user can choose
    params["mmb"]["probability"]["by_judge"] = {JUDGE: "samples"}
    assert not [p for p in unmet_needs(params) if "mmb" in p]
    params["panel"][JUDGE]["abilities"]["temperature"] = False  # cannot sample either
    (problem,) = [p for p in unmet_needs(params) if "mmb" in p]
    assert "temperature above 0" in problem


def test_validate_refuses_sampling_at_temperature_zero_and_unknown_judges(params):
    cold = copy.deepcopy(params)
    cold["panel"][JUDGE]["sampling"]["temperature"] = 0.0
    with pytest.raises(ConfigError, match=rf"panel\.{JUDGE}\.sampling\.temperature is 0"):
        validate_params(cold)
    params["mmb"]["probability"]["by_judge"]["nobody"] = "samples"
    with pytest.raises(ConfigError, match=r"mmb\.probability\.by_judge\.nobody"):
        validate_params(params)


def test_plan_counts_n_calls_and_reruns_follow_the_route(params):
    plain = copy.deepcopy(params)
    plain["mmb"]["probability"]["by_judge"] = {}
    assert sampled(params, JUDGE).n == 8 and sampled(plain, JUDGE) is None
    assert len(_samples(params, JUDGE)) == 8 and len(_samples(plain, JUDGE)) == 1
    # n and the prior are keys of a sampled judge's step only
    assert set(probability_keys(params, JUDGE)) == {
        "mmb.probability.source", f"mmb.probability.by_judge.{JUDGE}",
        "mmb.probability.samples", "mmb.probability.prior"}
    assert probability_keys(plain, JUDGE) == ["mmb.probability.source"]


@pytest.mark.parametrize("block", [
    {},
    {"source": "logprobs", "samples": 3, "by_judge": {"lumen-mini": "samples"}},
    {"source": "samples", "samples": 3, "prior": 0.5, "by_judge": {JUDGE: "logprobs"}},
])
def test_the_judge_steps_view_reads_a_judge_as_sampled_and_only_its_keys(params, block):
    """The judge step asks its typed view how its judge is read (Probability.of): the
    answer `sampled` gives, reading nothing of mmb.probability that the judge's rule does
    not declare (probability_keys: n and the prior only for a sampled judge, of by_judge
    only its own entry)."""
    from judgebias.workflow.paramscheck import uncovered
    from judgebias.workflow.paramsread import Reads, RecordingParams, recording_view

    params["panel"]["lumen-mini"]["sim"]["mmb"] = copy.deepcopy(
        params["panel"][JUDGE]["sim"]["mmb"])
    params["mmb"]["models"] = [JUDGE, "lumen-mini"]
    params["mmb"]["probability"] = block
    params = validate_params(params)
    for judge in params["mmb"]["models"]:
        reads = Reads()
        view = recording_view(MmbParams.from_params, RecordingParams(params, reads))
        assert view.probability.of(judge) == sampled(params, judge)
        read = {path for _, path in reads.reads}
        assert read and all(path.startswith("mmb.probability") for path in read)
        assert not uncovered(reads.reads, probability_keys(params, judge), params)
