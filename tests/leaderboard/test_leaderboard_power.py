"""`judgebias plan --power --pilot DIR` for the leaderboard: from a small pilot run (the
simulated panel through Snakemake), the human labels a PPI++ interval width needs per task
and method, beside the human-only count (judgebias.studies.leaderboard.plan,
power_section; the formulas are judgebias.stats.ppi's, checked by simulation in
tests/core/test_ppi_power.py). The predictions are checked against the pilot's own PPI++
intervals (results/leaderboard/<task>/ppi.parquet) and the default target against the
spread of the pilot's PPI++ means under the baseline."""

from __future__ import annotations

import contextlib
import copy
import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.project import BIN, make_project, run, study_params
from scipy import stats

from judgebias.commands import COMMANDS
from judgebias.plan import power_plan
from judgebias.stats.power import PowerSettings
from judgebias.stats.ppi_power import FEW_LABELS
from judgebias.study import registered

TASK = "captions"
RESULTS = f"results/leaderboard/{TASK}"
IMAGES, LABELLED = 30, 12
JUDGES = ["lumen-mini", "corvid-flash", "corvid-pro"]


def pilot_params(default_params: dict) -> dict:
    """The leaderboard alone, its captions task on 30 images, 12 of them labelled, the
    default's four systems, a plain judge and a family-excluding panel of three (no
    Pomms: that needs the audit)."""
    params = study_params(default_params, "leaderboard")
    board = params["leaderboard"]
    board["tasks"] = {TASK: board["tasks"][TASK]}  # an images task needs the MMB study
    board["tasks"][TASK]["images"]["synthetic"]["n_images"] = IMAGES
    board["tasks"][TASK]["human_labels"]["synthetic"]["n_items"] = LABELLED
    board["methods"] = {"plain": {"kind": "single", "judge": "corvid-pro"},
                        "panel_no_family": {"kind": "panel", "judges": JUDGES,
                                            "exclude": "family"}}
    board["inference"] = {"resamples": 200}
    return params


@pytest.fixture(scope="module")
def pilot(tmp_path_factory, default_params) -> Path:
    assert_wired()
    project = make_project(tmp_path_factory.mktemp("pilot"), pilot_params(default_params))
    run([str(BIN / "snakemake"), f"{RESULTS}/metrics.json", "--cores", "2", "--quiet"],
        project)
    return project


def plan_power(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "judgebias"), *args], capture_output=True, text=True,
                          cwd=cwd)


def assert_wired() -> None:
    """The core reaches the study's section only through its declaration (the optional
    role power_section of judgebias.study, which the leaderboard's STUDY has), and the
    plan command declares --label-width (judgebias.commands)."""
    study = registered()["leaderboard"]
    assert getattr(study, "power_section", None) == (
        "judgebias.studies.leaderboard.plan:power_section"), (
        "judgebias.study needs the optional role power_section (plan:power_section) and "
        "the leaderboard's declaration has=('power_section',)")
    plan = next(c for c in COMMANDS if c.name == "plan")
    assert isinstance(plan.args, tuple) and any(
        "--label-width" in a.flags for a in plan.args), "`judgebias plan` has no --label-width"


def test_the_leaderboard_declares_its_power_section_and_plan_its_flag():
    assert_wired()


@pytest.mark.slow  # a Snakemake pilot (about 30 s) and two CLI processes
def test_plan_power_predicts_the_pilots_own_intervals_and_sizes_neighbours(pilot):
    """Configured as the pilot itself, each target's predicted half-width at the pilot's
    12 labels is the one the rank step reported: exactly for the human-only interval,
    to 15 % for PPI++ (its lambda tuned on these 12 labels against the prediction's
    expectation over such draws), and
    the default target is the one that detects the mean gap between neighbouring systems
    under the baseline."""
    out = plan_power(pilot, "plan", "--power", "--pilot", str(pilot), "--json")
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert set(found) == {"card", "leaderboard"} and found["card"] == []
    rows = pd.DataFrame(found["leaderboard"])
    assert (rows.groupby("method").size() == 4 + 6).all()  # 4 means, 6 differences
    assert set(rows["method"]) == {"plain", "panel_no_family"}
    assert (rows["pilot_labelled"] == LABELLED).all() and (rows["items"] == IMAGES).all()

    ppi = pd.read_parquet(pilot / RESULTS / "ppi.parquet")
    half = ppi.assign(half=(ppi["ci_high"] - ppi["ci_low"]) / 2).set_index(
        ["estimator", "method", "system", "other"])["half"]
    predicted = rows.set_index(["method", "system", "other"])
    # the human-only interval has no tuned lambda: its prediction is the reported one
    assert predicted["halfwidth_human"].to_numpy() == pytest.approx(
        half["human_only"].reindex(predicted.index).to_numpy())
    ratio = predicted["halfwidth"] / half["ppi++"].reindex(predicted.index)
    assert ratio.between(0.85, 1.1).all(), ratio.describe()

    means = ppi[(ppi["method"] == "plain") & (ppi["estimator"] == "ppi++")
                & (ppi["target"] == "mean")]["estimate"]
    gap = (means.max() - means.min()) / (len(means) - 1)  # evenly spaced neighbours
    z = stats.norm.ppf
    expected = z(0.975) * gap / (z(0.975) + z(0.8))
    assert rows["target_halfwidth"].to_numpy() == pytest.approx([expected] * len(rows))
    # a target is met at the configured labels exactly when it needs no more of them
    met = rows["halfwidth"] <= rows["target_halfwidth"]
    needs = rows["labels"].fillna(IMAGES + 1) <= LABELLED
    assert (met == needs).all()

    text = plan_power(pilot, "plan", "--power", "--pilot", str(pilot))
    assert text.returncode == 0, text.stderr
    assert "the pilot has no judge card" in text.stdout  # a leaderboard needs none
    assert "human labels for the leaderboard" in text.stdout
    assert "mean gap between neighbours" in text.stdout and "under plain" in text.stdout
    table = [line.split() for line in text.stdout.splitlines() if line.startswith("    ")]
    assert [row[0] for row in table[1:3]] == ["plain", "panel_no_family"]

    given = plan_power(pilot, "plan", "--power", "--pilot", str(pilot), "--label-width", "0.2")
    assert given.returncode == 0, given.stderr
    assert "target +-0.2 (--label-width)" in given.stdout
    assert "* fewer than 40 labels" in given.stdout  # 0.2 is wide: a handful of labels
    bad = plan_power(pilot, "plan", "--power", "--pilot", str(pilot), "--label-width", "-1")
    assert bad.returncode != 0 and "--label-width -1.0: expected a positive" in bad.stderr


@pytest.mark.slow  # shares the pilot
def test_a_bigger_configured_run_and_a_given_width(pilot, tmp_path):
    """A configured run of 400 images with 60 labels takes its sizes from params and its
    moments from the pilot; a width the judge makes cheaper needs fewer labels than the
    humans alone, and a width below what 400 images allow is said to need more images."""
    config = yaml.safe_load((pilot / "params.yaml").read_text())
    bigger = copy.deepcopy(config)
    task = bigger["leaderboard"]["tasks"][TASK]
    task["images"]["synthetic"]["n_images"] = 400
    task["human_labels"]["synthetic"]["n_items"] = 60
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(bigger, sort_keys=False))
    with contextlib.chdir(tmp_path):
        from judgebias.config import load_config

        params = load_config("params.yaml", data=False)
    for width in (0.05, 1e-4):
        plan = power_plan(params, pilot, PowerSettings(halfwidth=width))
        rows = pd.DataFrame(plan.sections["leaderboard"].rows)
        assert (rows["items"] == 400).all() and (rows["labelled"] == 60).all()
        assert (rows["target_halfwidth"] == width).all()
        if width == 1e-4:  # below z sqrt(rho^2 Var(Y) / 400): more images, not labels
            assert rows["labels"].isna().all()
            assert "> 400 images" in "\n".join(plan.sections["leaderboard"].lines)
            continue
        plain = rows[(rows["method"] == "plain") & rows["labels"].notna()]
        assert len(plain) and (plain["labels"] <= plain["labels_human"]).all()
        # the plain judge tracks the labels: it saves labels on some target
        assert (plain["labels"] < plain["labels_human"]).any()
        few = (rows["labels"] < FEW_LABELS).any()
        assert few == ("under-covers" in "\n".join(plan.sections["leaderboard"].lines))


def test_a_pilot_without_the_task_or_its_files_is_said(tmp_path, default_params):
    """No Snakemake: a pilot whose params lack the configured task's labels, and one
    whose files are not there, each get a line saying so rather than a number."""
    from judgebias.config import validate_params
    from judgebias.studies.leaderboard.plan import power_section

    params = validate_params(pilot_params(default_params), "params.yaml", data=False)
    no_labels = copy.deepcopy(params)
    del no_labels["leaderboard"]["tasks"][TASK]["human_labels"]
    section = power_section(params, no_labels, tmp_path, PowerSettings())
    assert section.rows == []
    assert any("no such task with human labels" in line for line in section.lines)
    section = power_section(params, params, tmp_path, PowerSettings())
    assert section.rows == []
    assert any("not in the pilot" in line and "outputs.parquet" in line
               for line in section.lines)
