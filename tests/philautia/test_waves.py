"""Philautia in waves (issue 45): the partition, the looks, and a run that stops early
and is extended later, through both front doors, paying only for the new waves."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import numpy as np
import pandas as pd
import pytest
from helpers.project import (
    BIN,
    journaled_calls,
    make_project,
    planned_jobs,
    run,
    study_params,
    write_params,
)
from helpers.scores import long_table, planted

from judgebias.stats.sequential import critical_values
from judgebias.stats.waves import Look, stop_reason, wave_of, wave_sizes
from judgebias.studies.philautia.params import PhilautiaParams, Waves
from judgebias.studies.philautia.waves import look_at

MODELS = [f"m{i}" for i in range(6)]
FAMILIES = {m: (f"f{i % 3}",) for i, m in enumerate(MODELS)}  # three families: own identified


def view(families=FAMILIES, **waves) -> PhilautiaParams:
    """What a look reads of the block's view: judges, families, ci and waves."""
    return cast(PhilautiaParams, SimpleNamespace(judges=tuple(MODELS), families=families,
                                                 ci=0.95, waves=Waves(**waves)))


def test_waves_are_a_seeded_partition_of_the_ids_whatever_their_order() -> None:
    ids = [f"img{i:03d}" for i in range(10)]
    waves = wave_of(ids, 3, seed=4)
    assert wave_of(list(reversed(ids)), 3, seed=4) == waves
    assert sorted(wave_sizes(waves, 3)) == [3, 3, 4] and set(waves) == set(ids)
    assert wave_of(ids, 3, seed=5) != waves
    with pytest.raises(ValueError, match="repeat"):
        wave_of(["a", "a"], 1, seed=0)
    with pytest.raises(ValueError, match="count"):
        wave_of(ids, 11, seed=0)


def test_stop_reason_waits_for_every_measure() -> None:
    assert stop_reason([{"decision": "excludes 0"}, {"decision": None}]) is None
    assert stop_reason([]) is None
    assert stop_reason([{"decision": "excludes 0"}, {"decision": "not identified"}]) == \
        "every measure decided: 1 excludes 0, 1 not identified"


def _long(n_images: int, bias: float, seed: int) -> pd.DataFrame:
    return long_table(planted(n_images, len(MODELS), bias=bias, seed=seed), MODELS)


def test_a_strong_planted_effect_stops_at_the_first_look_with_a_wider_interval() -> None:
    long = _long(300, bias=0.15, seed=1)
    first = long[long["image_id"] < "img00100"]
    params = view(count=3, measures=("own",), target_width=30.0)
    look = look_at(first, params, 1, [100, 100, 100], None)
    assert look.stopped_at == 1 and look.reason.startswith("every measure decided")
    own = {m["model"]: m for m in look.measures}
    assert own["m0"]["decision"] == "excludes 0" and own["m0"]["ci_low"] > 0
    # the first look's O'Brien-Fleming boundary, not the fixed design's 1.96
    assert look.critical == pytest.approx(critical_values([1 / 3], 0.05)[0])
    assert look.critical > 3 and look.level > 0.999
    # carried forward: a later look of a stopped run is the stopping look
    later = look_at(long, params, 2, [100, 100, 100], look)
    assert later.stopped_at == 1 and later.wave == 2 and later.measures == look.measures


def test_an_undecided_run_goes_on_until_the_images_run_out() -> None:
    long = _long(60, bias=0.0, seed=2)
    params = view(count=2, measures=("own",))
    first = look_at(long[long["image_id"] < "img00030"], params, 1, [30, 30], None)
    assert first.stopped_at is None and first.runs_next_wave
    assert first.reason.startswith("undecided: ")
    last = look_at(long, params, 2, [30, 30], first)
    assert last.stopped_at == 2 and not last.runs_next_wave
    assert Look.from_record(json.loads(json.dumps(last.as_record()))) == last


def test_a_look_that_spends_no_alpha_decides_nothing_and_is_written_as_json() -> None:
    # 20 equal waves: the O'Brien-Fleming-type function spends nothing at 1/20
    params = view(count=20, measures=("own",), target_width=1000.0)
    look = look_at(_long(40, 0.15, 4).query("image_id < 'img00002'"), params, 1, [2] * 20,
                   None)
    assert look.critical == float("inf") and look.measures == () and look.runs_next_wave
    assert look.reason == "no alpha is spent at this look"
    record = json.loads(json.dumps(look.as_record(), allow_nan=False))
    assert record["critical"] is None and Look.from_record(record) == look


def test_unidentified_effects_never_decide() -> None:
    # two families: own effects are not identified, so only a target width can stop
    two = {m: (f"f{i % 2}",) for i, m in enumerate(MODELS)}
    params = view(two, count=2, measures=("own",), target_width=1000.0)
    look = look_at(_long(60, 0.1, 3), params, 1, [60, 60], None)
    assert {m["decision"] for m in look.measures} == {"not identified"}
    assert look.stopped_at is None and look.reason == "undecided: no chosen effect is identified"


# ------------------------------------------------------------------ through the pipeline

SETTING = "ref_free"


def waves_params(default_params: dict, target_width: float | None) -> dict:
    params = study_params(default_params, "philautia", small=True)
    philautia = params["philautia"]
    philautia["dataset"]["synthetic"]["n_images"] = 24
    philautia["settings"] = {SETTING: philautia["settings"][SETTING]}
    philautia.update(n_bootstrap=20, n_permutations=100)
    philautia["waves"] = {"count": 2, "measures": ["own_vs_family"],
                          "target_width": target_width}
    return params


def scored(project: Path) -> dict[int, int]:
    """Score rows written per wave (a wave that asked nothing writes none)."""
    return {w: sum(len(pd.read_parquet(p)) for p in
                   (project / "data/scores" / SETTING / f"wave-{w}").rglob("*.parquet"))
            for w in (1, 2)}


@pytest.mark.slow
def test_a_stopped_run_is_extended_paying_only_for_new_waves(tmp_path, default_params):
    # A target width no interval can miss: decided at the first look.
    params = waves_params(default_params, target_width=1000.0)
    project = make_project(tmp_path, params)
    run([str(BIN / "judgebias"), "export-dvc"], project)
    run(["git", "init", "-q"], project)  # DVC works in a git repository, as a clone is
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    look = json.loads((project / f"results/philautia/{SETTING}/waves/look-2.json").read_text())
    assert look["stopped_at"] == 1 and look["reason"].startswith("every measure decided")
    sizes = wave_sizes(wave_of([f"{i}" for i in range(24)], 2, 0), 2)
    judged = 3 * 3  # evaluator x generator
    assert scored(project) == {1: judged * sizes[0], 2: 0}
    captions = 3 * 24
    assert journaled_calls(project) == captions + judged * sizes[0]
    report = (project / "results/report.html").read_text()
    assert "the run stopped after wave 1 of 2" in report
    selfpref = pd.read_parquet(project / f"results/philautia/{SETTING}/selfpref.parquet")
    width = (selfpref["own_vs_family_ci_high"] - selfpref["own_vs_family_ci_low"]).dropna()
    assert len(width) and np.isfinite(width).all()

    # The plan builds the open wave's requests (all answered) and bounds the rest: what a
    # new call would be is only the later waves', counted as estimates
    total = json.loads(run([str(BIN / "judgebias"), "plan", "--json"], project).stdout)["total"]
    assert total["journaled"] == captions + judged * sizes[0]
    assert total["needed"] == total["estimated"] == judged * (24 - sizes[0])

    # Extended through DVC: only the looks and the new waves run, and only new calls paid
    run([str(BIN / "judgebias"), "dvc-record"], project)
    write_params(project, waves_params(default_params, target_width=None))
    planned = planned_jobs(project)
    assert {rule for rule, _ in planned} >= {"look", "score"}
    assert not {rule for rule, _ in planned} & {"caption", "dataset"}
    assert all(("wave", "1") not in wildcards for rule, wildcards in planned if rule == "score")
    # (dvc-repro's snakemake-record touches every output: the jobs' logs tell what ran)
    first_wave = {p: p.read_text() for p in (project / "logs/score" / SETTING / "wave-1"
                                             ).rglob("*.log")}
    assert len(first_wave) == judged
    run([str(BIN / "judgebias"), "dvc-repro", "--", "-q"], project)
    assert {p: p.read_text() for p in first_wave} == first_wave  # not run again
    look = json.loads((project / f"results/philautia/{SETTING}/waves/look-2.json").read_text())
    assert look["stopped_at"] == 2
    assert scored(project) == {1: judged * sizes[0], 2: judged * sizes[1]}
    assert journaled_calls(project) == captions + judged * 24
    assert "the run stopped after wave 2 of 2" in (project / "results/report.html").read_text()
    assert "Nothing to be done" in run([str(BIN / "snakemake"), "-n", "--cores", "1"],
                                       project).stdout
