"""The judge card's core (judgebias.card): checks of study rows, the FDR adjustment over
the whole card, judges.json, the one-line reading, the terminal card and two runs
compared. Hand-made rows; each study's own rows are tested with its pipeline."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from judgebias.artifacts import ArtifactError, write_table
from judgebias.card.build import _checked, adjust, card_metrics
from judgebias.card.compare import Z, compare, load_card
from judgebias.card.schema import CARD, ROW_FIELDS
from judgebias.card.section import card_section
from judgebias.card.text import card_json, card_text, reading, signed_phrase
from judgebias.report.html import Report, render_report


def row(model: str = "judge-a", measure: str = "self_preference", **values) -> dict:
    base = {f.name: "" for f in ROW_FIELDS if f.type == "string"}
    base.update(model=model, study="philautia", measure=measure, label=measure.title(),
                unit="points", estimate=1.0, ci_low=0.5, ci_high=1.5, p_value=0.01,
                test="Wald", interval="t 95%", n=100, null_value=0.0, chance=np.nan,
                headline=True, reading=f"{model} {measure}")
    base.update(values)
    return base


def frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))[[f.name for f in ROW_FIELDS]]


def test_by_adjustment_over_the_whole_card_and_untested_rows_never_significant():
    p = [0.001, 0.01, 0.02, 0.04, np.nan, 0.3]
    rows = frame(*(row(measure=f"m{k}", p_value=v) for k, v in enumerate(p)))
    out = adjust(rows)
    tested = np.isfinite(p)
    expected = multipletests(np.array(p)[tested], method="fdr_by")[1]
    assert np.allclose(out.loc[tested, "p_adjusted"], expected)
    assert math.isnan(out.loc[4, "p_adjusted"]) and not out.loc[4, "significant"]
    # BY's factor for 5 tests is 1 + 1/2 + ... + 1/5 = 2.283: only the first survives
    assert out["significant"].tolist() == [True, False, False, False, False, False]


@pytest.mark.parametrize(("change", "message"), [
    ({"model": "not-judged"}, "models the study did not judge: \\['not-judged'\\]"),
    ({"study": "frame"}, "rows name another study"),
    ({"estimate": np.nan}, "a missing estimate without a note"),
])
def test_study_rows_are_checked(change, message):
    rows = frame(row(), row(measure="other", **change))
    with pytest.raises(ArtifactError, match=message):
        _checked(rows, "philautia", {"judge-a"})


def test_duplicate_rows_and_missing_columns_are_errors():
    with pytest.raises(ArtifactError, match=r"duplicate rows for .*self_preference"):
        _checked(frame(row(), row()), "philautia", {"judge-a"})
    with pytest.raises(ArtifactError, match="missing \\['note'\\]"):
        _checked(frame(row()).drop(columns="note"), "philautia", {"judge-a"})
    explained = frame(row(estimate=np.nan, note="not identified"))
    assert len(_checked(explained, "philautia", {"judge-a"})) == 1


def test_judges_json_nests_model_study_measure_and_keeps_missing_numbers_null():
    card = adjust(frame(row(), row(measure="pf", setting="synthetic", ci_low=np.nan,
                                   ci_high=np.nan, p_value=np.nan)))
    metrics = card_metrics(card)
    assert set(metrics["judge-a"]["philautia"]) == {"self_preference", "pf[synthetic]"}
    assert metrics["judge-a"]["philautia"]["pf[synthetic]"] == {
        "estimate": 1.0, "ci_low": None, "ci_high": None, "p_adjusted": None}
    json.dumps(metrics, allow_nan=False)  # a valid DVC metric: no NaN literals


def test_reading_lists_significant_findings_headline_first_then_fixes():
    card = adjust(frame(
        row(measure="minor", headline=False, p_value=1e-6, reading="minor finding"),
        row(measure="major", p_value=1e-6, reading="major finding"),
        row(measure="null", p_value=0.9, reading="not shown"),
        row(measure="fix", headline=False, p_value=1e-6, reading="",
            recommendation="the anchor helps"),
        row(model="judge-b", measure="null", p_value=0.5)))
    assert reading(card, "judge-a") == "major finding; minor finding. Helps: the anchor helps."
    assert reading(card, "judge-b") == "no bias found in 1 test (FDR 5% over the card)."
    with pytest.raises(KeyError, match="no card rows for model 'judge-c'"):
        reading(card, "judge-c")


def test_a_negative_effect_reads_as_its_size_in_the_other_direction():
    assert (signed_phrase(-2.1, -3.9, -0.4, "adds {} points", "takes {} points off")
            == "takes 2.1 [0.4, 3.9] points off")
    assert signed_phrase(2.1, 0.4, 3.9, "adds {} points", "-") == "adds 2.1 [0.4, 3.9] points"


def test_terminal_card_and_json(tmp_path):
    card = adjust(frame(row(), row(measure="score", p_value=np.nan, ci_low=np.nan,
                                   ci_high=np.nan, note="no test")))
    text = card_text(card, "judge-a", simulated=True)
    assert text.splitlines()[0] == "judge-a (simulated)"
    assert "Self_Preference: 1 [0.5, 1.5] points  p_adj 0.01 *  n=100" in text
    assert "Score: 1 points  n=100  -- no test" in text
    parsed = json.loads(card_json(card, "judge-a"))
    assert parsed["metrics"]["philautia"]["self_preference"]["p_adjusted"] == 0.01
    assert parsed["rows"][1]["ci_low"] is None and parsed["rows"][1]["key"] == "score"


def test_compare_gives_each_change_an_interval_and_lists_unmatched_measures(tmp_path):
    a = adjust(frame(row(estimate=1.0, ci_low=0.0, ci_high=2.0),
                     row(measure="gone")))
    b = adjust(frame(row(estimate=4.0, ci_low=2.0, ci_high=6.0),
                     row(measure="new")))
    for name, card in (("a", a), ("b", b)):
        (tmp_path / name).mkdir()
        write_table(card, tmp_path / name / "judges.parquet", CARD)
    out = compare(load_card(str(tmp_path / "a")), load_card(str(tmp_path / "b")))
    moved = out[out["measure"] == "self_preference"].iloc[0]
    se = math.hypot(1.0 / Z, 2.0 / Z)
    assert moved["change"] == 3.0
    assert moved["ci_low"] == pytest.approx(3.0 - Z * se)
    assert moved["ci_high"] == pytest.approx(3.0 + Z * se) and moved["moved"]
    status = dict(zip(out["measure"], out["status"], strict=True))
    assert status == {"self_preference": "both", "gone": "only A", "new": "only B"}
    assert out.loc[out["status"] != "both", "change"].isna().all()  # never against zero


def test_the_card_section_links_every_cell_to_its_study_and_colours_significant_ones():
    card = adjust(frame(row(p_value=1e-6), row(model="judge-b", p_value=0.5),
                        row(measure="frame_cells", headline=True, p_value=0.5)
                        | {"study": "frame"}))
    section = card_section(card, ["judge-a", "judge-b", "judge-c"])
    html = render_report(Report(title="t", sections=[section]))
    compact = section.tables[0].frame
    assert list(compact.index) == ["judge-a", "judge-b"]  # judge-c has no rows: no line
    assert compact.loc["judge-b", ("frame", "Frame_Cells")] is None  # not judged: empty
    assert html.count('href="#study-philautia"') == 2 and html.count('href="#study-frame"') == 1
    # one significant cell in the compact table, and its row in the table of every row
    assert html.count('<td class="significant">') == 2
    assert '<section id="judge-card">' in html


def test_the_report_opens_with_the_card(tmp_path: Path):
    from judgebias.report.html import Section

    card = adjust(frame(row()))
    report = Report(title="t", sections=[card_section(card, ["judge-a"]),
                                         Section(title="Philautia", anchor="study-philautia")])
    html = render_report(report)
    assert html.index('id="judge-card"') < html.index('id="study-philautia"')
    assert '<a href="#judge-card">Judge card</a>' in html


@pytest.mark.slow
def test_adding_a_judge_to_one_study_reruns_its_jobs_its_analysis_the_card_and_report(
        tmp_path, default_params):
    """Every output of the five-study DAG made (empty) and recorded (`snakemake --touch`),
    then one judge added to BIRCH's panel: the dry run plans that judge's BIRCH jobs,
    BIRCH's analysis, the card and the report, and nothing of any other study."""
    from helpers.project import (
        BIN,
        make_project,
        planned_jobs,
        run,
        study_params,
        write_params,
    )

    from judgebias.studies import STUDIES

    params = study_params(default_params, *STUDIES, small=True)
    project = make_project(tmp_path, params)
    summary = run([str(BIN / "snakemake"), "--summary", "--cores", "1"], project).stdout
    for line in summary.splitlines()[1:]:
        path = project / line.split("\t")[0]
        if path.suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        else:  # the rules' directory() outputs (image folders) are the only ones without
            path.mkdir(parents=True, exist_ok=True)
    run([str(BIN / "snakemake"), "--touch", "--cores", "1", "--quiet"], project)
    assert not planned_jobs(project)
    added = next(m for m in params["panel"] if m not in params["birch"]["models"])
    params["birch"]["models"].append(added)
    write_params(project, params)
    planned = planned_jobs(project)
    rules = {rule for rule, _ in planned}
    assert rules == {"birch_prepare", "birch_judge", "birch_analysis", "birch_supplement",
                     "card", "report"}, planned
    for rule, wildcards in planned:
        if rule in ("birch_prepare", "birch_judge"):
            assert dict(wildcards)["birch_judge"] == added


def test_the_card_command_prints_a_judge_its_json_and_a_comparison(tmp_path, capsys):
    from helpers.project import REPO

    from judgebias.cli import main

    for name, estimate in (("old", 1.0), ("new", 4.0)):
        (tmp_path / name).mkdir()
        card = adjust(frame(row(model="corvid-pro", estimate=estimate, ci_low=estimate - 1,
                                ci_high=estimate + 1)))
        write_table(card, tmp_path / name / "judges.parquet", CARD)
    params = ["--params", str(REPO / "params.yaml")]
    assert main([*params, "card", "corvid-pro", "--results", str(tmp_path / "new")]) == 0
    text = capsys.readouterr().out
    assert text.startswith("corvid-pro (simulated)\n") and "4 [3, 5] points" in text
    assert main([*params, "card", "--json", "--results", str(tmp_path / "new")]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "corvid-pro"
    assert main([*params, "card", "--compare", str(tmp_path / "old"),
                 str(tmp_path / "new")]) == 0
    assert "corvid-pro:\n  philautia Self_Preference: 1 -> 4 points, change 3 [" in (
        capsys.readouterr().out)
