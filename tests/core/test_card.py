"""The judge card's core (judgebias.card): checks of study rows, the FDR adjustment over
the whole card, its JSON, its headline cells (the DVC metrics), the one-line reading, the
terminal card and two runs compared. Hand-made rows; each study's own rows are tested
with its pipeline."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from judgebias.card.build import _checked, adjust, card_metrics, headline_cells, write_headline
from judgebias.card.compare import Z, compare, load_card
from judgebias.card.schema import CARD, ROW_FIELDS
from judgebias.card.text import card_json, card_text, estimate_text, reading, signed_phrase
from judgebias.io.artifacts import ArtifactError, write_table
from judgebias.report.card import card_section, estimated, headline
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


def test_card_json_nests_model_study_measure_and_keeps_missing_numbers_null():
    card = adjust(frame(row(), row(measure="pf", setting="synthetic", ci_low=np.nan,
                                   ci_high=np.nan, p_value=np.nan)))
    metrics = card_metrics(card)
    assert set(metrics["judge-a"]["philautia"]) == {"self_preference", "pf[synthetic]"}
    assert metrics["judge-a"]["philautia"]["pf[synthetic]"] == {
        "estimate": 1.0, "ci_low": None, "ci_high": None, "p_adjusted": None}
    json.dumps(metrics, allow_nan=False)  # valid JSON: no NaN literals


def test_headline_cells_are_one_file_per_headline_measure_one_number_per_judge(tmp_path):
    """`dvc metrics show` reads the card on its side (issue 42 item 7): a file per
    headline measure (study.measure, and the setting where the study headlines the
    measure in two), a key per judge, null where the study gives no estimate; rows
    that are no headline are left out."""
    card = adjust(frame(
        row(), row(model="judge-b", estimate=np.nan, note="not identified"),
        row(measure="philautia_score", headline=False),
        row(study="birch", measure="ib", setting="synthetic", estimate=0.5),
        row(study="birch", measure="ib", setting="vlrb", estimate=0.25),
        row(study="birch", measure="irs", setting="synthetic", estimate=0.1)))
    cells = headline_cells(card)
    assert cells == {"philautia.self_preference": {"judge-a": 1.0, "judge-b": None},
                     "birch.ib.synthetic": {"judge-a": 0.5},
                     "birch.ib.vlrb": {"judge-a": 0.25}, "birch.irs": {"judge-a": 0.1}}
    folder = tmp_path / "card"
    folder.mkdir()
    (folder / "birch.pf.json").write_text("{}")  # a measure this card does not headline
    write_headline(card, folder)
    assert sorted(p.name for p in folder.iterdir()) == [
        "birch.ib.synthetic.json", "birch.ib.vlrb.json", "birch.irs.json",
        "philautia.self_preference.json"]
    assert json.loads((folder / "philautia.self_preference.json").read_text()) == {
        "judge-a": 1.0, "judge-b": None}


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
    text = card_text(card, "judge-a", "simulated")
    assert text.splitlines()[0] == "judge-a (simulated)"
    assert card_text(card, "judge-a", "imported").splitlines()[0] == \
        "judge-a (answers imported: judged outside judgebias)"
    assert card_text(card, "judge-a").splitlines()[0] == "judge-a"
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


def unestimated(model: str, measure: str, note: str, **values) -> dict:
    """A card row a study could not estimate: no number but its n, and the reason."""
    return row(model, measure, **{"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                                  "p_value": np.nan, "headline": False, "reading": "",
                                  "note": note, "n": 0, **values})


def test_the_card_folds_every_row_and_gives_each_judge_one_line_of_unestimated_measures():
    """Under the compact table the card's every row is folded (issue 42): the rows with a
    number one line each, the rows without one (no estimate, interval, p-value or chance
    level) one line per judge, each reason once, with every n; nothing is lost."""
    card = adjust(frame(
        row(p_value=1e-6),
        unestimated("judge-a", "pc", "one order only", label="PC", setting="synthetic"),
        unestimated("judge-a", "pf", "one order only", label="PF"),
        unestimated("judge-a", "rs", "not identifiable: no repeats.", label="RS", n=12),
        unestimated("judge-a", "first_slot", "no answer", chance=0.5),  # has a number
        row(model="judge-b", estimate=2.5, ci_low=0.25, ci_high=4.75, p_value=0.5),
        unestimated("judge-b", "frame_cells", "no cell could be tested", study="frame",
                    label="Cells")))
    section = card_section(card, ["judge-b", "judge-a"])
    rows = section.subsections[0]
    assert rows.fold == ("Show every measure on the card (7 rows): 3 estimates, each with "
                         "its test, adjusted p-value and n, and 4 measures without an "
                         "estimate, one line per judge with the reason")
    full, missing = (table.frame for table in rows.tables)
    assert sorted(full["measure"]) == ["First_Slot", "Self_Preference", "Self_Preference"]
    assert list(missing.index) == ["judge-b", "judge-a"]  # panel order
    assert list(missing.columns) == ["philautia", "frame"]  # registry order
    assert missing.loc["judge-a", "philautia"] == (
        "PC [synthetic], PF: one order only. RS (n 12): not identifiable: no repeats.")
    assert missing.loc["judge-b", "frame"] == "Cells: no cell could be tested."
    assert missing.isna().sum().sum() == 2  # judge-a has no frame row, judge-b no philautia
    html = render_report(Report(title="t", sections=[section]))
    folded = html[html.index("<details><summary>Show every measure"):]
    assert folded.index("</details>") > folded.index("no cell could be tested")
    for _, kept in card[estimated(card)].iterrows():  # every number of every row
        assert f">{estimate_text(kept)}</td>" in folded, kept["measure"]
        p = kept["p_adjusted"]
        assert np.isnan(p) or f'<td class="num">{p:.3g}</td>' in folded, kept["measure"]
    assert "<td>0.5</td>" in folded  # the chance level of the row without an estimate
    assert "n/a" not in html[:html.index("<details>")]  # no headline is unestimated here
    assert adjust(frame(row())).pipe(card_section, ["judge-a"]).subsections[0].fold == (
        "Show every measure on the card (1 row): 1 estimate, each with its test, "
        "adjusted p-value and n")
    assert len(card_section(adjust(frame(row())), ["judge-a"]).subsections[0].tables) == 1


def test_the_card_headline_counts_each_judges_findings_over_the_card():
    """The card's sentence: how many judges have significant findings and how many each
    (the findings themselves are the readings table's), or that none has, or no test."""
    card = adjust(frame(row(p_value=1e-6), row(measure="other", p_value=1e-6),
                        row(measure="fix", p_value=1e-6, reading="", recommendation="x"),
                        row(model="judge-b", p_value=0.5), row(model="judge-c", p_value=0.9)))
    models = ["judge-a", "judge-b", "judge-c"]
    assert headline(card, models) == (
        "1 of 3 judges has significant findings (Benjamini-Yekutieli FDR 5% over the card's "
        "5 tests): judge-a 2; none for judge-b, judge-c. Each judge's findings in words: the "
        "table of readings under the card.")
    calm = adjust(frame(row(p_value=0.5)))
    assert headline(calm, ["judge-a"]) == (
        "No judge has a significant finding (Benjamini-Yekutieli FDR 5% over the card's "
        "1 test).")
    untested = adjust(frame(row(p_value=np.nan)))
    assert headline(untested, ["judge-a"]) == "No test of bias could be run on this panel."
    assert card_section(card, models).headline == headline(card, models)


FULL_CARD = {  # study: (rows, rows without an estimate, headline rows) per judge
    "philautia": (8, 4, 1), "pomms": (3, 0, 0), "mmb": (18, 3, 3), "frame": (7, 3, 3),
    "birch": (11, 1, 3)}
"""The shape of the five-study card of a five-judge panel (235 rows, 50 of them without
an estimate), which pushed the first study some 19,000 px down before it was folded."""

SUBSECTIONS = {"philautia": 2, "pomms": 0, "mmb": 5, "frame": 6, "birch": 7}
"""How many subsections each study's section has there (one contents line each)."""


def full_card(models: list[str]) -> pd.DataFrame:
    """A card of `FULL_CARD`'s shape, each judge significant on two headline measures."""
    rng = np.random.default_rng(0)
    rows = []
    for model in models:
        for study, (n_rows, n_missing, n_headline) in FULL_CARD.items():
            for k in range(n_rows):
                measure, label = f"{study}_m{k}", f"{study.title()} measure {k} of its kind"
                if k >= n_rows - n_missing:
                    rows.append(unestimated(model, measure, f"{study} cannot estimate it "
                                            "from this design: " + "a reason " * 20,
                                            study=study, label=label, n=k))
                    continue
                estimate = float(rng.normal())
                rows.append(row(model, measure, study=study, label=label, estimate=estimate,
                                ci_low=estimate - 1, ci_high=estimate + 1,
                                p_value=1e-9 if k < 2 and n_headline else rng.uniform(),
                                headline=k < n_headline, setting="synthetic" * (k % 2),
                                reading=f"shifts {label.lower()} by {estimate:.2g} points"))
    return adjust(frame(*rows))


@pytest.mark.browser
def test_a_full_card_leaves_the_first_study_within_two_screens(tmp_path: Path, browser):
    """A report with a card of the five-study default's size: in headless Chromium its
    first study starts within two screens of the top, and its card passes the browser
    checks with the fold open (tests/helpers/report_browser.py); unfolded, the same card
    fails the top-down check."""
    from helpers.report_browser import check_card, check_report

    from judgebias.report.figures import heatmap
    from judgebias.report.html import Figure, Section, Table, write_report

    models = ["lumen-large", "lumen-mini", "corvid-pro", "corvid-flash", "corvid-lite"]
    matrix = pd.DataFrame(np.arange(25.0).reshape(5, 5), index=models, columns=models)
    figure = heatmap(matrix, tmp_path / "figures" / "phi.png", "Phi", diverging=True)
    studies = [Section(title=f"{name.title()}: a study of the five-study report", anchor=
                       f"study-{name}", figures=[Figure(figure, "Phi")],
                       tables=[Table(matrix, "Phi")],
                       subsections=[Section(title=f"Part {k}") for k in range(parts)])
               for name, parts in SUBSECTIONS.items()]
    card = card_section(full_card(models), models)
    assert len(card.subsections[0].tables[0].frame) == 5 * (47 - 11)

    def report(name: str) -> Path:
        return write_report(Report(title="judgebias report", sections=[card, *studies],
                                   simulated_models=models), tmp_path / f"{name}.html")

    titles = ["Judge card", *(s.title.partition(":")[0] for s in studies)]
    check_report(browser, report("folded"), titles, "full-card")
    assert check_card(browser, report("folded"), "full-card") == [
        f"#study-{name}" for name in sorted(SUBSECTIONS) if FULL_CARD[name][2]]
    card.subsections[0].fold = ""
    with pytest.raises(AssertionError, match=r"the first section after the judge card, "
                       r"'Philautia: a study of the five-study report', starts \d+ px down"):
        check_report(browser, report("unfolded"), titles, "full-card-unfolded")


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
