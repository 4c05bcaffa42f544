"""`birch.repeats`: the Base judgement asked again (steps.repeat) for the judge card's
repetition stability, through the real step, judging core, journal and sim backend. A
repeat is its own request (the judge's sampling seed + r), answered once and kept on
resume; RS recovers what is planted: a judge that always answers the same scores 1, a
fair coin scores its chance floor."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest

from judgebias.config import validate_params
from judgebias.io.artifacts import read_table
from judgebias.models.context import RunContext
from judgebias.stats.position import position_bias
from judgebias.studies.birch import steps
from judgebias.studies.birch.card import position_verdicts
from judgebias.studies.birch.params import BirchParams
from judgebias.studies.birch.tables import REPEATS, VERDICTS

REPEATS_ASKED = 4
JUDGES = {  # a judge with nothing random left in it (a tiny noise, a small pull to the
    # first answer that settles its utility ties: the sums of 1.0s and 2.5s never equal
    # -0.1, so every verdict has one answer), and a fair coin
    "steady": {"informativeness": 1.0, "correctness": 2.5, "length": 0.0,
               "position_bias": 0.1, "perception": 0.0, "image_use": 0.0, "noise": 1e-6},
    "coin": {"informativeness": 0.0, "correctness": 0.0, "length": 0.0,
             "position_bias": 0.0, "perception": 0.0, "omission": 0.0, "noise": 1.0},
}


@pytest.fixture(scope="module")
def judged(tmp_path_factory, default_params):
    """Both judges on 120 synthetic pairs, Base and its repeats, in a fresh journal."""
    root = tmp_path_factory.mktemp("birch-repeats")
    params = copy.deepcopy(default_params)
    template = params["panel"]["corvid-pro"]
    for key, traits in JUDGES.items():
        model = copy.deepcopy(template)
        model["model_id"] = f"sim/{key}"
        model["sim"]["birch"] = traits
        model["sim"]["signature"] = key
        model["sim"].pop("mmb", None)
        model["sim"].pop("frame", None)
        params["panel"][key] = model
    params["journal_dir"] = str(root / "journal")
    params["birch"].update(models=list(JUDGES), repeats=REPEATS_ASKED)
    params["birch"]["datasets"]["synthetic"]["n_pairs"] = 120
    params = validate_params(params)
    pairs = root / "pairs.parquet"
    birch, run = BirchParams.from_params(params), RunContext(params)
    steps.data(birch, birch_dataset="synthetic", pairs=pairs, images=root / "images",
               summary=root / "summary.json")
    out = {}
    for judge in JUDGES:
        verdicts, repeats = root / f"{judge}.base.parquet", root / f"{judge}.repeats.parquet"
        steps.judge(birch, run, birch_judge=judge, birch_variant="base", pairs=pairs,
                    verdicts=verdicts)
        steps.repeat(birch, run, birch_judge=judge, pairs=pairs, repeats=repeats)
        out[judge] = (read_table(verdicts, VERDICTS), read_table(repeats, REPEATS))
    return params, pairs, root, out


def test_each_repeat_is_its_own_request_and_resume_pays_nothing(judged):
    params, pairs, root, out = judged
    base, repeats = out["coin"]
    assert sorted(repeats["repeat"].unique()) == list(range(1, REPEATS_ASKED))
    assert (repeats.groupby("repeat").size() == len(base)).all()
    keys = pd.concat([base["request_key"], repeats["request_key"]])
    assert keys.is_unique  # no repeat is a cache hit of another
    assert (repeats["variant"] == "base").all() and (repeats["status"] == "ok").all()
    again = root / "again.parquet"
    steps.repeat(BirchParams.from_params(params), RunContext(params), birch_judge="coin",
                 pairs=pairs, repeats=again)
    pd.testing.assert_frame_equal(read_table(again, REPEATS), repeats)  # the journal's
    seed = params["panel"]["coin"]["sampling"]["seed"]
    asked = repeats["sampling"].map(lambda s: json.loads(s)["seed"])
    assert (asked == seed + repeats["repeat"]).all()  # repeat r: the seed + r
    assert (base["sampling"].map(lambda s: json.loads(s)["seed"]) == seed).all()


def test_rs_recovers_a_steady_judge_and_a_coin(judged):
    _, pairs, _, out = judged
    preference = read_table(pairs, steps.PAIRS).set_index("pair_id")["preference"]
    rs = {}
    for judge, (base, repeats) in out.items():
        verdicts = pd.concat([base.assign(repeat=0), repeats], ignore_index=True)
        measures = position_bias(position_verdicts(verdicts, preference), randomised=False,
                                 n_resamples=999, seed=1).set_index("measure")
        rs[judge] = measures.loc["rs"]
    assert rs["steady"]["estimate"] == 1.0
    coin = rs["coin"]  # 2 options, 4 repeats: chance floor E[max share] = 11/16
    assert coin["chance"] == pytest.approx(11 / 16)
    assert coin["ci_low"] <= 11 / 16 <= coin["ci_high"]


def test_one_repeat_has_no_repeats_job(judged, tmp_path):
    params, pairs, _, _ = judged
    params = copy.deepcopy(params)
    params["birch"]["repeats"] = 1
    with pytest.raises(ValueError, match=r"birch\.repeats is 1"):
        steps.repeat(BirchParams.from_params(params), RunContext(params), birch_judge="coin",
                     pairs=pairs, repeats=tmp_path / "r.parquet")
