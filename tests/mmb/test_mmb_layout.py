"""MMB's layouts (issue 45): the shared-first template says the same words with the images
first and the instruction last, `mmb.layout` picks it, and the layout check measures what
the change does to a judge's answers, with an interval that covers a planted shift and,
for a judge the layout leaves alone, 0."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import yaml
from helpers.project import make_project, study_params
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import expit

from judgebias import prompts
from judgebias.config import PARAMS_ENV, ConfigError, validate_params
from judgebias.io.artifacts import read_table, write_table
from judgebias.io.filedigest import file_sha256
from judgebias.models.base import ChatRequest, Sampling
from judgebias.models.context import RunContext
from judgebias.models.journal import Journal, journal_path, request_key
from judgebias.models.registry import backend_version
from judgebias.models.sim import SimBackend, SimModel
from judgebias.plan import PlannedCalls
from judgebias.studies.mmb import steps
from judgebias.studies.mmb.data import synthetic
from judgebias.studies.mmb.jobs import layout_sample, pair_items
from judgebias.studies.mmb.measures.layout import clustered_mean, item_answers
from judgebias.studies.mmb.params import (
    MmbParams,
    builtin_pool,
    judge_prompt,
    other_layout,
)
from judgebias.studies.mmb.plan import planned_calls
from judgebias.studies.mmb.report import layout_table
from judgebias.studies.mmb.sim import JudgeTraits, PairwiseTask, judge_logit, landscape_key
from judgebias.studies.mmb.tables import (
    INSTRUCTIONS_PATH,
    JUDGEMENTS,
    PAIRS,
    PAIRS_PATH,
    layout_answers_path,
    layout_metrics_path,
    report_inputs,
)
from judgebias.workflow.paramscheck import check
from judgebias.workflow.paramsread import RECORD_ENV
from judgebias.workflow.step_dispatch import run_step

JUDGE = "corvid-pro"
STYLES = list(synthetic.STYLES)


def write_pairs(root: Path, n: int, seed: int = 0) -> tuple[Path, Path]:
    """(pair table, pool) files under `root`: `n` test pairs of two rendered images of one
    style each, qualities drawn with `seed`, and the built-in pool."""
    rng = np.random.default_rng(seed)
    rows = []
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        style = STYLES[i % len(STYLES)]
        paths = []
        for side in "ab":
            path = root / f"{i}{side}.png"
            path.write_bytes(synthetic.png_bytes(synthetic.render(
                style, float(rng.uniform(0.05, 1.0)), 32, int(rng.integers(1 << 30)))))
            paths.append(str(path))
        rows.append({"pair_id": f"p{i:02d}", "group": f"g{i}", "prompt": f"a {style}",
                     "image_a": paths[0], "image_b": paths[1], "preference": 1.0,
                     "split": "test", "fold": None, "source": "synthetic", "style_a": style,
                     "style_b": style, "image_a_sha256": file_sha256(paths[0]),
                     "image_b_sha256": file_sha256(paths[1])})
    pairs, pool = root / "pairs.parquet", root / "pool.yaml"
    write_table(pd.DataFrame(rows), pairs, PAIRS)
    pool.write_text(yaml.safe_dump(builtin_pool()))
    return pairs, pool


def world(default_params: dict, tmp_path: Path, *, shift: float, **check: int) -> dict:
    """The default params with `JUDGE`'s layout shift planted, a journal of their own and
    the layout check on (`check`)."""
    params = copy.deepcopy(default_params)
    params["journal_dir"] = str(tmp_path / "journal")
    params["panel"][JUDGE]["sim"]["mmb"]["layout_shift"] = shift
    params["mmb"]["layout_check"] = check
    return validate_params(params)


def test_the_shared_first_template_says_the_same_words_images_first():
    values = {"Instruction": "Judge as a pixel artist.", "Prompt": "a red fox"}
    paper, at = prompts.render_layout("mmb_pairwise", values)
    shared, shared_at = prompts.render_layout("mmb_pairwise_shared_first", values)
    assert at == () and shared_at == (0, 0)  # after the text; before it
    assert Counter(paper.split()) == Counter(shared.split())  # the same words
    assert paper.startswith(values["Instruction"]) and shared.rstrip().endswith(
        values["Instruction"])
    assert judge_prompt("mmb_pairwise", "paper") == "mmb_pairwise"
    assert judge_prompt("mmb_pairwise", "shared_first") == "mmb_pairwise_shared_first"
    assert other_layout("paper") == "shared_first" and other_layout("shared_first") == "paper"


def test_a_layout_without_its_template_is_refused(default_params):
    params = copy.deepcopy(default_params)
    params["mmb"].update(prompt="mmb_pairwise_shared_first", layout="paper")
    validate_params(params)  # the variant as the paper layout's template: fine
    params["mmb"]["layout_check"] = {"n_pairs": 5}  # now its own variant is needed
    with pytest.raises(ConfigError, match=r"mmb.layout \(shared_first\): unknown prompt id "
                                          r"'mmb_pairwise_shared_first_shared_first'"):
        validate_params(params)


def test_the_sim_reads_both_layouts_and_plants_its_shift():
    """With no opinion noise, the shared-first layout moves the logit by exactly
    `layout_shift`; with none planted, both layouts answer alike."""
    images = [synthetic.png_bytes(synthetic.render("ink sketch", q, 32, s))
              for q, s in ((0.7, 1), (0.5, 2))]
    values = {"Instruction": "Which image is better drawn?", "Prompt": "a cat"}

    def p_first(shift: float, layout: str) -> float:
        traits = {"experts": {"ink sketch": "comic book inker"}, "noise": 0.0,
                  "layout_shift": shift}
        model = SimModel.from_params("j", "f", {"caption_quality": 1.0, "style": {
            "opener": "Here", "signature": "calm"}, "mmb": traits})
        backend = SimBackend({"sim/j": model}, tasks=[PairwiseTask()])
        text, at = prompts.render_layout(judge_prompt("mmb_pairwise", layout), values)
        answer = backend.answer(ChatRequest("sim/j", text, tuple(images),
                                            Sampling(temperature=0), image_at=at))
        assert answer.ok, answer.error
        top = dict(answer.tokens[3].top)
        return float(np.exp(top["A"]))

    logit = {layout: np.log(p_first(1.5, layout) / (1 - p_first(1.5, layout)))
             for layout in ("paper", "shared_first")}
    assert logit["shared_first"] - logit["paper"] == pytest.approx(1.5, abs=1e-6)
    assert p_first(0.0, "paper") == pytest.approx(p_first(0.0, "shared_first"), abs=1e-12)


def test_the_sample_is_seeded_per_pair():
    pairs = pd.DataFrame({"pair_id": [f"p{i}" for i in range(8)], "prompt": "x",
                          "image_a": "a", "image_b": "b"})
    pool = pd.DataFrame({"id": [f"i{j}" for j in range(10)], "text": "t"})
    items = pair_items(pairs, pool, "random", 0)
    sample = layout_sample(items, 3, 4, seed=7)
    assert sample["pair_id"].nunique() == 3 and len(sample) == 12
    assert sample.groupby("pair_id")["instruction"].nunique().eq(4).all()
    pd.testing.assert_frame_equal(sample, layout_sample(items, 3, 4, seed=7))
    assert layout_sample(items, 3, 0, seed=7)["instruction"].nunique() == 10  # 0: all
    # every pair (more asked than there are): a new pair redraws no other pair's set
    more = pair_items(pd.concat([pairs, pairs.iloc[:1].assign(pair_id="p8")]), pool,
                      "random", 0)

    def asked(frame: pd.DataFrame) -> set[tuple[str, str]]:
        return set(zip(frame["pair_id"], frame["instruction"], strict=True))

    before, after = layout_sample(items, 20, 4, seed=7), layout_sample(more, 20, 4, seed=7)
    assert asked(before) == asked(after[after["pair_id"] != "p8"])


def test_the_interval_is_the_cluster_robust_wald_interval():
    """With as many items per pair, the t over pair means is statsmodels' cluster-robust
    (CR1) Wald interval and test of the mean, t with G - 1 degrees of freedom."""
    rng = np.random.default_rng(3)
    pairs = np.repeat(np.arange(15), 6)
    d = rng.normal(0.1, 0.3, 90) + np.repeat(rng.normal(0, 0.2, 15), 6)
    found = clustered_mean(d, pairs)
    fit = sm.OLS(d, np.ones(len(d))).fit(cov_type="cluster", cov_kwds={"groups": pairs},
                                         use_t=True)
    assert found["estimate"] == pytest.approx(fit.params[0])
    assert (found["low"], found["high"]) == pytest.approx(tuple(fit.conf_int()[0]))
    assert found["p_value"] == pytest.approx(fit.pvalues[0])
    assert (found["n_pairs"], found["df"]) == (15, 14)
    same = clustered_mean(np.zeros(10), np.arange(10))  # no spread: no t
    assert (same["low"], same["high"], same["p_value"]) == (0.0, 0.0, 1.0)
    assert clustered_mean([0.2], [1])["low"] is None  # one pair: no interval


def test_items_of_a_sampled_judge_pool_their_verdicts():
    rows = pd.DataFrame({"pair_id": "p", "instruction": "i", "order": ["ba"] * 4,
                         "p_a": [0.25] * 3 + [None], "status": ["ok"] * 3 + ["failed"],
                         "label": ["A", "A", "B", None]})
    [item] = item_answers(rows).to_dict("records")
    assert item["p_first"] == pytest.approx(0.75)  # shown second: p(A) = 1 - p(first)
    assert item["verdict_first"] == pytest.approx(2 / 3)  # the failed sample is no vote


def truth(params: dict, items: pd.DataFrame, shift: float) -> float:
    """The expected difference shared_first - paper of p(first shown preferred), mean over
    pairs of each pair's mean: the sim's own logit without its opinion, integrated over
    the opinion z ~ N(0, 1) drawn afresh per layout (Gauss-Hermite)."""
    block = params["panel"][JUDGE]["sim"]["mmb"]
    traits = JudgeTraits(experts=block["experts"], world=landscape_key(params["seed"], JUDGE),
                         **{k: float(block[k]) for k in JudgeTraits.numeric_traits()
                            if k in block})
    texts = dict(zip(*(pd.DataFrame(builtin_pool())[c] for c in ("id", "text")),
                     strict=True))
    z, w = hermegauss(60)
    w = w / w.sum()
    seen = {}
    rows = []
    for item in items.to_dict("records"):
        first, second = (seen.setdefault(p, synthetic.perceive(Path(p).read_bytes()))
                         for p in (item["first_image"], item["second_image"]))
        logit = judge_logit(traits, texts[item["instruction"]], first, second, 0.0)
        spread = traits.noise * z
        rows.append({"pair_id": item["pair_id"], "d": float(
            w @ expit(logit + shift + spread) - w @ expit(logit + spread))})
    return float(pd.DataFrame(rows).groupby("pair_id")["d"].mean().mean())


@pytest.mark.parametrize("shift", [0.0, 1.5])
def test_the_layout_check_finds_a_planted_shift_and_no_effect_where_none(
        shift, default_params, tmp_path):
    """The step functions as the rules run them: the judge job in `mmb.layout` (paper),
    then the layout check asks the sample in shared_first and reads the paper answers
    from the judgements; the interval covers the expected difference (0 without a
    shift) and, with one, excludes 0."""
    params = world(default_params, tmp_path, shift=shift, n_pairs=16, n_instructions=6,
                   seed=2)
    view, run = MmbParams.from_params(params), RunContext(params)
    pairs, pool = write_pairs(tmp_path / "data", 24)
    judgements = tmp_path / "judgements.parquet"
    steps.judge(view, run, judge=JUDGE, pairs=pairs, pool=pool, judgements=judgements)
    answers, metrics = tmp_path / "answers.parquet", tmp_path / "layout.json"
    steps.layout_check(view, run, judge=JUDGE, pairs=pairs, pool=pool,
                       judgements=judgements, answers=answers, metrics=metrics)
    found = json.loads(metrics.read_text())
    asked = read_table(answers, JUDGEMENTS)
    assert set(asked["prompt_id"]) == {"mmb_pairwise_shared_first"} and len(asked) == 96
    assert found["sample"] == {"n_pairs": 16, "n_instructions": 6, "seed": 2, "pairs": 16,
                               "items": 96, "paired": 96}
    assert found["simulated"] and (found["layout"], found["other"]) == ("paper",
                                                                        "shared_first")
    p, verdict = found["measures"]["p_first"], found["measures"]["verdict_first"]
    assert p["n_pairs"] == 16 and p["n_items"] == 96 and p["df"] == 15
    items = layout_sample(pair_items(read_table(pairs, PAIRS), pd.DataFrame(builtin_pool()),
                                     "random", 0), 16, 6, 2)
    expected = truth(params, items, shift)
    if shift:
        assert expected > 0.02
        assert p["low"] <= expected <= p["high"] and p["low"] > 0 and p["p_value"] < 0.05
        assert verdict["low"] <= expected <= verdict["high"]
    else:
        assert expected == 0.0
        assert p["low"] <= 0 <= p["high"] and verdict["low"] <= 0 <= verdict["high"]
    again = read_table(answers, JUDGEMENTS)  # the rerun pays nothing: same answers
    steps.layout_check(view, run, judge=JUDGE, pairs=pairs, pool=pool,
                       judgements=judgements, answers=answers, metrics=metrics)
    pd.testing.assert_frame_equal(again, read_table(answers, JUDGEMENTS))
    table = layout_table([found], "paper")
    assert list(table.frame.index.get_level_values("measure")) == [
        "p(first shown preferred)", "verdicts for the first shown", "verdicts changed"]


def test_the_rule_declares_what_the_steps_read(default_params, tmp_path, monkeypatch):
    """The judge and layout-check jobs run through the step dispatcher with their reads
    recorded, checked against the keys their rules declare in the project's DAG (the
    layout check's rule exists only when it is on), and the report reads its files."""
    params = study_params(default_params, "mmb")
    params["mmb"]["layout_check"] = {"n_pairs": 3, "n_instructions": 2}
    params["mmb"]["layout"] = "shared_first"
    (tmp_path / "project").mkdir()
    project = make_project(tmp_path / "project", params)
    monkeypatch.chdir(project)
    monkeypatch.delenv(PARAMS_ENV, raising=False)
    monkeypatch.setenv(RECORD_ENV, str(project / "reads"))
    validated = validate_params(copy.deepcopy(params))
    given, given_pool = write_pairs(project / "given", 4)
    pairs, pool = Path(PAIRS_PATH), Path(INSTRUCTIONS_PATH)
    pool.parent.mkdir(parents=True)
    pairs.write_bytes(given.read_bytes())
    pool.write_bytes(given_pool.read_bytes())
    judgements = "data/mmb/judgements/corvid-pro.parquet"
    wildcards = [["judge", JUDGE]]
    run_step("mmb.judge", validated, [["pairs", str(pairs)], ["pool", str(pool)]],
             [["judgements", judgements]], wildcards)
    run_step("mmb.layout_check", validated,
             [["pairs", str(pairs)], ["pool", str(pool)], ["judgements", judgements]],
             [["answers", layout_answers_path(JUDGE)],
              ["metrics", layout_metrics_path(JUDGE)]], wildcards)
    assert check(project / "Snakefile", project / "reads", validated, every_step=False) == []
    found = json.loads(Path(layout_metrics_path(JUDGE)).read_text())
    assert (found["layout"], found["other"]) == ("shared_first", "paper")
    assert set(read_table(judgements, JUDGEMENTS)["prompt_id"]) == {
        "mmb_pairwise_shared_first"}
    # `judgebias plan` keys exactly what the two jobs asked: nothing left to pay
    [calls] = [c for c in planned_calls(validated) if isinstance(c, PlannedCalls)]
    assert len(calls.requests) == 4 * len(builtin_pool()) + 3 * 2
    model = RunContext(validated).model(JUDGE)
    keys = [request_key(r, "sim", backend_version(model)) for r in calls.requests]
    with Journal(journal_path(validated["journal_dir"], "sim", model.model_id)) as journal:
        assert len(journal.lookup(keys)) == len(set(keys))
    assert layout_metrics_path(JUDGE) in report_inputs(validated).results
    validated["mmb"]["layout_check"]["n_pairs"] = 0
    assert layout_metrics_path(JUDGE) not in report_inputs(validated).results
