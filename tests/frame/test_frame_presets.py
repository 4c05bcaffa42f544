"""FRAME presets (`frame.presets: paper`, issue 20 item 4): the paper's Tables 9-10 as
recipes, tested with no selection (judgebias.studies.frame.presets, measures.presets).
Hand-computed cases of every statistic, the transcription against the printed tables, and
one small pipeline run with a judge that has no bias at all."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.project import (
    BIN,
    make_project,
    planned_jobs,
    run,
    study_params,
    undeclared_reads,
    write_params,
)
from scipy import stats

from judgebias.paramsblock import block_schema
from judgebias.studies.frame import presets
from judgebias.studies.frame.measures.presets import paired_effects, preset_effects, sign_flip_p
from judgebias.studies.frame.params import FrameParams
from judgebias.studies.frame.presets import paper_judges, paper_table, preset_recipes
from judgebias.workflow.paramsread import RECORD_ENV


def _setting(table: pd.DataFrame, judge: str, domain: str, manipulation: str) -> str:
    row = table[(table["preset_judge"] == judge) & (table["domain"] == domain)
                & (table["manipulation"] == manipulation)]
    assert len(row) == 1
    return row["setting"].iloc[0]


def test_tables_9_and_10_as_printed():
    table = paper_table()
    assert len(table) == 8 * 5 * 6  # 8 judges x 5 domains x 6 gridded manipulations
    # App. B.3's own examples: GPT-4.1-mini Bright. 0.9 (People), Inst. center
    # (Illustration), Inst. top-right (People) and bottom-right (Animal)
    assert _setting(table, "gpt-4.1-mini", "people", "brightness") == "0.9"
    assert _setting(table, "gpt-4.1-mini", "illustration", "instruction_overlay") == "center"
    assert _setting(table, "gpt-4.1-mini", "people", "instruction_overlay") == "top-right"
    assert _setting(table, "gpt-4.1-mini", "animal", "instruction_overlay") == "bottom-right"
    # Table 9, not Table 11 (2.1), for GPT-4.1-mini's Animal gamma (spec frame.md)
    assert _setting(table, "gpt-4.1-mini", "animal", "gamma") == "1.3"
    assert _setting(table, "llava-next-8b", "indoor", "brightness") == "2.3"
    assert _setting(table, "qwen2.5-vl-32b", "outdoor", "padding") == "50"
    assert _setting(table, "gpt-4o", "indoor", "authenticity_overlay") == "top-left"
    sources = table.drop_duplicates("preset_judge").set_index("preset_judge")["source"]
    assert sources["gpt-4o"] == "Table 9, GPT-4o"
    assert sources["llava-onevision-7b"] == "Table 10, LLaVA-Onevision-7B"


def test_schema_lists_exactly_the_papers_judges():
    schema = block_schema(FrameParams)  # the block's schema, emitted from its view
    assert schema["properties"]["preset_judges"]["items"]["enum"] == paper_judges()


def test_presets_skip_cells_that_do_not_apply():
    recipes = preset_recipes("paper", ["gpt-4.1-mini"])
    assert len(recipes) == 5 * 6 - 1  # Table 9 prints an Outdoor Keyword. the paper never ran
    assert not ((recipes["domain"] == "outdoor")
                & (recipes["manipulation"] == "keyword_overlay")).any()
    assert preset_recipes("none", ["gpt-4o"]).empty


def test_a_bad_row_is_named_with_file_row_and_key(tmp_path):
    data = yaml.safe_load(presets.PAPER_RECIPES.read_text())
    data["rows"][2]["Inst."] = "upper-left"
    path = tmp_path / "recipes.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=r"recipes.yaml: rows\[3\]\.Inst\.: .*upper-left"):
        paper_table(path)


def test_paired_effects_by_hand():
    got = paired_effects(np.array([1.0, 2.0, 3.0]), 2.0).iloc[0]
    half = stats.t.ppf(0.975, 2) * 1.0 / np.sqrt(3)  # sd of (1, 2, 3) is 1
    assert got["change"] == 2 and got["percent_change"] == 100
    assert got["ci_low"] == pytest.approx(2 - half) and got["ci_high"] == pytest.approx(2 + half)
    assert got["ci_low"] == pytest.approx(-0.48414, abs=1e-5)
    assert got["t_p"] == pytest.approx(0.074180, abs=1e-6)  # t = 2 / (1 / sqrt 3) = 3.46
    assert got["permutation_p"] == 0.25  # (+,+,+) and (-,-,-) of 8 patterns reach |2|
    assert got["sign_p"] == 0.25  # 3 of 3 positive: 2 x 1/8
    constant = paired_effects(np.full(4, 0.1), 2.0).iloc[0]  # no spread: no t statistic
    assert constant[["ci_low", "ci_high", "t_p"]].tolist() == pytest.approx([0.1, 0.1, 0.0])
    assert constant["permutation_p"] == 2 / 16 and constant["sign_p"] == 2 / 16
    zeros = paired_effects(np.array([0.0, 0.0, 0.3, -0.3]), 2.0).iloc[0]
    assert zeros[["t_p", "permutation_p", "sign_p"]].tolist() == [1.0, 1.0, 1.0]
    # rounding: 3.4 - 3.3 and 2.0 - 2.1 are exact opposites, so flips see a symmetric pair
    assert paired_effects(np.array([3.4 - 3.3, 2.0 - 2.1]), 2.0)["change"].iloc[0] == 0
    lone = paired_effects(np.array([0.5]), 2.0).iloc[0]
    assert lone["change"] == 0.5 and np.isnan(lone["permutation_p"])


def test_sign_flip_agrees_with_scipy():
    rng = np.random.default_rng(3)
    for n in (5, 12):
        d = np.round(rng.normal(0.2, 0.5, n), 1)
        reference = stats.permutation_test((d,), np.mean, permutation_type="samples",
                                           n_resamples=2**n, vectorized=True)
        assert sign_flip_p(d)[0] == pytest.approx(reference.pvalue)
    d = np.round(rng.normal(0.1, 0.5, 24), 1)  # above 16 items: random flips
    reference = stats.permutation_test((d,), np.mean, permutation_type="samples",
                                       n_resamples=20000, vectorized=True, rng=1)
    assert sign_flip_p(d, 20000, seed=2)[0] == pytest.approx(reference.pvalue, abs=0.01)
    rows = rng.normal(size=(3, 6))  # rows are tested independently
    assert sign_flip_p(rows).tolist() == [sign_flip_p(r)[0] for r in rows]


def _scores(cells: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    """A judge's score table: originals 2.0, each recipe's items 2.0 + difference."""
    rows = []
    for (domain, recipe), differences in cells.items():
        for i, d in enumerate(differences):
            item = f"{domain}-{i}"
            rows.append((item, domain, "original", 2.0))
            rows.append((item, domain, recipe, 2.0 + d))
    table = pd.DataFrame(rows, columns=["item_id", "domain", "recipe", "score"])
    table = table.drop_duplicates(["item_id", "recipe"])
    return table.assign(judge="j", prompt="standard", named="", status="ok",
                        n_steps=(table["recipe"] != "original").astype(int))


def test_preset_effects_by_hand():
    recipes = pd.DataFrame({
        "preset_judge": ["a", "b", "a"], "source": ["Table 9, A", "Table 9, B", "Table 9, A"],
        "domain": ["people", "people", "animal"], "manipulation": ["padding"] * 3,
        "setting": ["40", "40", "10"], "recipe": ["padding=40", "padding=40", "padding=10"]})
    scores = _scores({("people", "padding=40"): [1.0, 1.0, 1.0, 1.0],
                      ("animal", "padding=10"): [0.0, 0.0, 0.0, 0.0]})
    got = preset_effects(scores, "j", recipes)
    assert len(got) == 3  # one row per paper judge listing the recipe
    people = got[got["domain"] == "people"]
    assert people["preset_judge"].tolist() == ["a", "b"]
    assert (people["change"] == 1).all() and (people["percent_change"] == 50).all()
    # two distinct cells tested: p = 2/16 and 1 -> BH q = 2 x 0.125 = 0.25 and 1
    assert people["permutation_p"].tolist() == [0.125, 0.125]
    assert people["q_value"].tolist() == [0.25, 0.25]
    assert got.loc[got["domain"] == "animal", "q_value"].tolist() == [1.0]


def test_a_planted_shift_is_found_and_no_shift_is_not():
    rng = np.random.default_rng(0)
    recipes = preset_recipes("paper", ["gpt-4.1-mini"])
    people = recipes[recipes["domain"] == "people"]
    cells = {("people", r): list(np.round(rng.normal(0, 0.4, 30), 1) + (0.6 if i == 0 else 0))
             for i, r in enumerate(people["recipe"])}
    got = preset_effects(_scores(cells), "j", people).set_index("recipe")
    planted = people["recipe"].iloc[0]
    assert got.loc[planted, "q_value"] < 0.05 and got.loc[planted, "ci_low"] > 0.3
    rest = got.drop(planted)
    assert (rest["q_value"] >= 0.05).all()
    assert ((rest["ci_low"] <= 0) & (rest["ci_high"] >= 0)).all()


def tiny_presets_params(default_params: dict) -> dict:
    """FRAME alone: one simulated judge with no bias at all, two domains of 6 items, a
    one-value grid of two manipulations (GPT-4.1-mini's People settings, so two presets
    are journal hits), one mitigation prompt, pairs only, GPT-4.1-mini's presets."""
    params = study_params(default_params, "frame")
    frame = params["frame"]
    frame.update(models=["lumen-mini"], analysis_judge="lumen-mini", mitigation=["bias_aware"],
                 combinations=[2], presets="paper", preset_judges=["gpt-4.1-mini"],
                 manipulations={"brightness": [0.9], "instruction_overlay": ["top-right"]})
    frame["dataset"]["synthetic"].update(n_per_domain=6, domains=["people", "animal"])
    frame["analysis"]["n_permutations"] = 100
    return params


@pytest.mark.slow
def test_presets_through_the_pipeline_find_nothing_in_a_judge_without_bias(
        tmp_path, default_params, monkeypatch):
    params = tiny_presets_params(default_params)
    assert params["panel"]["lumen-mini"]["sim"]["frame"].get("susceptibility") is None
    project = make_project(tmp_path, params)
    monkeypatch.setenv(RECORD_ENV, str(tmp_path / "reads"))  # the params each step reads
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    monkeypatch.delenv(RECORD_ENV)
    assert undeclared_reads(project, tmp_path / "reads") == {}  # presets' steps too
    table = pd.read_parquet(project / "results/frame/presets.parquet")
    assert len(table) == 2 * 6  # 2 domains x 6 manipulations
    assert set(table["source"]) == {"Table 9, GPT-4.1-mini"}
    assert (table["n"] == 6).all() and table["permutation_p"].between(0, 1).all()
    assert (table["q_value"] >= 0.05).all(), table
    covers = (table["ci_low"] <= 0) & (table["ci_high"] >= 0)
    assert covers.mean() >= 0.8, table[~covers]
    renders = pd.read_parquet(project / "data/frame/renders/presets.parquet")
    distinct = table[["domain", "recipe"]].drop_duplicates()
    assert len(renders) == 6 * len(distinct) and (renders["status"] == "ok").all()
    log = (project / "logs/frame/score/lumen-mini/presets.log").read_text()
    assert "12 from the journal" in log, log  # People's Bright. 0.9 and Inst. top-right
    html = (project / "results/report.html").read_text()
    assert "The paper&#x27;s recipes, no selection" in html or \
        "The paper's recipes, no selection" in html
    assert "p (exact sign-flip)" in html
    plan = json.loads(run([str(BIN / "judgebias"), "plan", "--json"], project).stdout)
    assert plan["total"]["needed"] == 0 and plan["total"]["estimated"] == 0
    # Where FRAME's caches lie are run settings (x-run-setting): moving them reruns nothing.
    params["frame"]["render_cache"] = ".judgebias/moved-renders"
    params["frame"]["dataset"]["synthetic"].setdefault("images", {})["cache_dir"] = ".moved"
    write_params(project, params)
    assert not planned_jobs(project)
