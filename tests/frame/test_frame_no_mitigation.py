"""`frame.mitigation: []` (no Table 5 prompts) is a valid choice (issue 39): the mitigation
step writes an empty, valid score table instead of failing ("No objects to concatenate"),
and the run goes on to the report, whose Table 5 then holds the standard prompt alone."""

from __future__ import annotations

import pandas as pd
import pytest
from helpers.project import BIN, make_project, run, study_params

from judgebias.config import validate_params
from judgebias.io.artifacts import read_table, write_frame, write_table
from judgebias.models.context import RunContext
from judgebias.studies.frame import steps
from judgebias.studies.frame import tables as frame
from judgebias.studies.frame.params import FrameParams
from judgebias.studies.frame.tables import ITEMS, RENDERS, SCORES


def test_the_mitigation_step_without_prompts_writes_an_empty_table(tmp_path, params):
    params["frame"]["mitigation"] = []
    params = validate_params(params)
    benchmark, recipes = tmp_path / "items.parquet", tmp_path / "recipes.parquet"
    write_table(ITEMS.empty_table().to_pandas(), benchmark, ITEMS)
    write_frame(pd.DataFrame({"judge": ["corvid-pro"], "domain": ["people"],
                              "manipulation": ["brightness"], "setting": [1.5],
                              "recipe": ["brightness=1.5"]}), recipes)
    renders = tmp_path / "renders.parquet"
    write_table(RENDERS.empty_table().to_pandas(), renders, RENDERS)
    scores = tmp_path / "mitigation.parquet"
    steps.mitigation(FrameParams.from_params(params), RunContext(params), benchmark=benchmark,
                     recipes=recipes, renders=[renders], scores=scores)
    table = read_table(scores, SCORES)
    assert table.empty and list(table.columns) == SCORES.names


@pytest.mark.slow
def test_a_run_without_mitigation_prompts_reaches_the_report(tmp_path, default_params):
    params = study_params(default_params, "frame")
    block = params["frame"]
    block.update(models=["corvid-pro"], analysis_judge="corvid-pro", mitigation=[],
                 combinations=[2], manipulations={"brightness": [1.5], "padding": [20],
                                                  "instruction_overlay": ["top-right"]})
    block["dataset"]["synthetic"].update(n_per_domain=2, domains=["people", "animal"])
    block["analysis"].update(n_permutations=100, n_bootstrap=100)
    project = make_project(tmp_path, params)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    assert pd.read_parquet(project / frame.MITIGATION_PATH).empty
    table5 = pd.read_parquet(project / frame.result_path("table5"))
    assert set(table5["prompt"]) == {"standard"}
    assert (project / "results/report.html").is_file()
