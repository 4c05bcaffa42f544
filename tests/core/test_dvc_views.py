"""What DVC shows people (issue 42 item 7; judgebias.workflow.dvcviews): dvc.yaml's metrics
are exactly the judge card's headline cells, every other JSON file a plain output; the
papers' curves are top-level DVC plots with their axes, template and titles, and DVC draws
them from the files the steps write."""

from __future__ import annotations

import json
import os
import subprocess
from types import SimpleNamespace

import pandas as pd
import yaml
from helpers.project import BIN, REPO

from judgebias.studies.birch import tables as birch
from judgebias.studies.birch.figures import cds_share_rows
from judgebias.studies.mmb import tables as mmb
from judgebias.studies.mmb.figures import curve_rows
from judgebias.workflow.dvcviews import write_curve

PROPS = {"x", "y", "template", "title", "x_label", "y_label"}


def _pipeline() -> dict:
    return yaml.safe_load((REPO / "dvc.yaml").read_text())


def _outs(stage: dict) -> set[str]:
    return {o if isinstance(o, str) else next(iter(o)) for o in stage.get("outs", [])}


def test_the_metrics_are_exactly_the_card_headline_cells(default_params):
    """`dvc metrics show` and `dvc exp show` read the headline cells only (one file per
    headline measure, a number per judge: judgebias.card.build.headline_cells); each
    study's metrics.json, hundreds of values, is a plain cached output."""
    stages = _pipeline()["stages"]
    metrics = {name: stage["metrics"] for name, stage in stages.items() if "metrics" in stage}
    assert metrics == {"card": [{"results/card": {"cache": True}}]}
    outs = set().union(*map(_outs, stages.values()))
    studies = [s for s in ("philautia", "pomms", "mmb", "frame", "birch") if default_params[s]]
    for study in studies:
        assert any(o.startswith(f"results/{study}/") and o.endswith("metrics.json")
                   for o in outs), study


def test_the_curves_are_plots_with_axes_a_template_and_titles(default_params):
    """Each curve of MMB and BIRCH (tables.CURVES) for each judge is a top-level plot whose
    id is its CSV, an output of one stage, with x, y (a list: one line per column), one of
    DVC's built-in templates and its titles; the figures stay image plots of their stage."""
    from dvc_render.vega_templates import TEMPLATES

    pipeline = _pipeline()
    plots = {path: props for entry in pipeline["plots"] for path, props in entry.items()}
    expected = {mmb.curve_path(name, judge) for name in mmb.CURVES
                for judge in default_params["mmb"]["models"]}
    expected |= {birch.curve_path(dataset, name, judge) for dataset in
                 default_params["birch"]["datasets"] for name in birch.CURVES
                 for judge in default_params["birch"]["models"]}
    assert set(plots) == expected
    builtin = {template.DEFAULT_NAME for template in TEMPLATES}
    for path, props in plots.items():
        assert set(props) == PROPS, path
        assert isinstance(props["y"], list) and props["y"], path
        assert props["template"] in builtin, path
        assert [path in _outs(stage) for stage in pipeline["stages"].values()].count(True) == 1
    images = [next(iter(p)) for stage in pipeline["stages"].values()
              for p in stage.get("plots", [])]
    assert images and all(path.endswith(".png") for path in images)


def test_dvc_draws_the_curves_the_steps_write(tmp_path):
    """The rows the analysis steps write (MMB's three curves, BIRCH's Fig. 4) under the
    plot definitions dvc.yaml gives them: `dvc plots show --json` draws each, every line
    present, and fails on none."""
    judge = "judge-1.5"  # a dot in a judge's name: the file name, never a field name
    bands = pd.DataFrame([{"judge": judge, "n_prompts": 10, "n_val": 20, "method": method,
                           "coverage": coverage, "error": error}
                          for method in ("STD", "BEST", "AVG", "BPE", "MMB", "BPE-ref (printed)")
                          for coverage, error in ((0.5, 0.1), (1.0, 0.2))])
    frames = {"error_coverage": bands,
              "power": pd.DataFrame({"judge": judge, "per_cluster": [0, 1], "AVG": [0.2, 0.2],
                                     "BPE": [0.2, 0.1], "MMB": [0.2, 0.05],
                                     "recovery": [0.0, 1.0]}),
              "tau_sweep": pd.DataFrame({"judge": judge, "tau": [0.1, 1.0],
                                         "ece": [0.05, 0.07], "configured": [True, False]})}
    params = SimpleNamespace(report=SimpleNamespace(n_prompts=10, n_val=20))
    plots = []
    for name, curve in mmb.CURVES.items():
        path = mmb.curve_path(name, judge)
        write_curve(curve_rows(params, frames, name, judge), curve, tmp_path / path)
        plots.append({path: curve.props(judge)})
    cds = pd.DataFrame({"judge": judge, "target_ratio": [0.1, 0.1, 0.5],
                        "accuracy": [0.8, 0.6, 0.5], "analytic": [0.72, 0.72, 0.5]})
    path = birch.curve_path("synthetic", "cds_share", judge)
    write_curve(cds_share_rows(cds, judge), birch.CURVES["cds_share"], tmp_path / path)
    plots.append({path: birch.CURVES["cds_share"].props(judge)})
    assert (tmp_path / path).read_text().splitlines() == [
        "target_ratio,accuracy,analytic", "0.1,0.7,0.72", "0.5,0.5,0.5"]
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"plots": plots}, sort_keys=False))

    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    for command in (["git", "init", "-q"], [str(BIN / "dvc"), "init", "-q"]):
        subprocess.run(command, cwd=tmp_path, env=env, check=True, capture_output=True)
    shown = subprocess.run([str(BIN / "dvc"), "plots", "show", "--json"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    drawn = json.loads(shown.stdout)
    assert not drawn.get("errors"), drawn["errors"]
    for entry in plots:
        [(path, props)] = entry.items()
        [render] = drawn["data"][path]
        points = render["content"]["data"]["values"]
        # each line's points (DVC names the field only where a plot has several lines)
        assert {point.get("field", props["y"][0]) for point in points} == set(props["y"])
