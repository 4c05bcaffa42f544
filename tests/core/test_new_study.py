"""A sixth study from the template (`judgebias new-study`), in a temporary copy of the
project: it touches only its package, its rules file, its prompt and the registry line,
and runs end to end on the simulated panel, finding the length preference planted in one
judge and none in a judge without bias."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers.project import BIN, make_project, run, undeclared_reads

from judgebias.workflow.paramsread import RECORD_ENV


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def _toy_params(default_params: dict) -> dict:
    """The default's shared blocks, two judges, and only the toy study."""
    from judgebias.studies import STUDIES

    params = {k: v for k, v in default_params.items() if k not in STUDIES}
    panel = {key: dict(default_params["panel"][key]) for key in ("lumen-large", "corvid-pro")}
    panel["lumen-large"]["sim"] = {**panel["lumen-large"]["sim"], "toy": {"length_bias": 0.5}}
    panel["corvid-pro"]["sim"] = {**panel["corvid-pro"]["sim"], "preferences": {},
                                  "toy": {"length_bias": 0.0}}  # no bias at all
    return {**params, "panel": panel, "toy": {"n_items": 80, "seed": 3}}


@pytest.mark.slow
def test_a_new_study_from_the_template_runs_end_to_end(tmp_path, default_params,
                                                      monkeypatch):
    project = make_project(tmp_path, {"panel": {}})
    before = _files(project)
    out = run([str(BIN / "judgebias"), "new-study", "toy"], project).stdout
    assert "wrote src/judgebias/studies/toy/steps.py" in out
    after = _files(project)
    changed = {p for p in after if before.get(p) != after[p]}
    assert not set(before) - set(after)
    own = ("src/judgebias/studies/toy/", "workflow/rules/toy.smk",
           "src/judgebias/prompts/templates/toy_")
    assert {p for p in changed if not p.startswith(own)} == {
        "src/judgebias/studies/__init__.py"}
    registry_diff = (set(after["src/judgebias/studies/__init__.py"].decode().splitlines())
                     - set(before["src/judgebias/studies/__init__.py"].decode().splitlines()))
    assert registry_diff == {'    "toy": "judgebias.studies.toy",'}
    assert not any(b"_template" in after[p] for p in changed)

    import yaml

    (project / "params.yaml").write_text(yaml.safe_dump(_toy_params(default_params)))
    monkeypatch.setenv("PYTHONPATH", str(project / "src"))  # the copy's new package
    run([str(BIN / "judgebias"), "validate"], project)
    monkeypatch.setenv(RECORD_ENV, str(tmp_path / "reads"))  # the template's steps' reads
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    monkeypatch.delenv(RECORD_ENV)
    assert undeclared_reads(project, tmp_path / "reads") == {}
    slopes = pd.read_parquet(project / "results/toy/slopes.parquet").set_index("judge")
    assert slopes.loc["lumen-large", "ci_low"] > 0  # planted: 0.5 points per ten words
    assert slopes.loc["lumen-large", "ci_low"] < 0.5 < slopes.loc["lumen-large", "ci_high"]
    assert slopes.loc["corvid-pro", "ci_low"] < 0 < slopes.loc["corvid-pro", "ci_high"]
    assert (slopes["n_failed"] == 0).all()
    assert "Template study" in (project / "results/report.html").read_text()


def test_a_bad_or_taken_name_is_refused(tmp_path) -> None:
    from judgebias.devtools.new_study import new_study

    with pytest.raises(ValueError, match="lower-case letters"):
        new_study(tmp_path, "Toy-1")
    with pytest.raises(ValueError, match="run `judgebias new-study` in the project"):
        new_study(tmp_path, "toy")
    (tmp_path / "src/judgebias/studies/_template").mkdir(parents=True)
    (tmp_path / "src/judgebias/studies/__init__.py").write_text(
        'STUDIES = {\n    "toy": "judgebias.studies.toy",\n}\n')
    with pytest.raises(ValueError, match="study 'toy' already exists"):
        new_study(tmp_path, "toy")
