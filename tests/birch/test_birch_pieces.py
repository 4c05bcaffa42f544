"""BIRCH's pieces the main analysis does not print (issue 20, item 7): Fig. 11 (per-domain
accuracy with vs without the image, per-domain IRS), Table 5 (anchor quality on the
planted scene), Table 6 (calls, tokens and cost per pair from the journal), each on a
small case computed by hand; and what the paper's printed tables let one recompute.
The pipeline path (two datasets in one run) is in tests/birch/test_birch_real_data.py."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pandas as pd
import pytest

from judgebias.data.scenes import Scene, SceneObject, scene_to_json
from judgebias.models.base import ChatRequest, ChatResponse
from judgebias.models.entry import Pricing
from judgebias.models.journal import Journal, journal_path
from judgebias.studies.birch.measures.anchors import anchor_quality
from judgebias.studies.birch.measures.cost import cost_table, method_cost
from judgebias.studies.birch.measures.formulas import domain_reliance
from judgebias.studies.birch.report import table4
from judgebias.studies.birch.steps import journal_usage

# -- Fig. 11 ------------------------------------------------------------------------------------


def test_domain_reliance_by_hand():
    """x: 3 pairs, 2/3 right with the image, 1/3 without: IRS 1/3. y: the pair whose
    with-image verdict is missing is dropped from both, leaving 1/1 vs 0/1."""
    index = pd.Index([f"p{i}" for i in range(1, 6)], name="pair_id")
    image = pd.Series(pd.array([True, True, False, True, None], dtype="boolean"), index)
    no_image = pd.Series(pd.array([True, False, False, False, True], dtype="boolean"), index)
    domain = pd.Series(["x", "x", "x", "y", "y"], index)
    table = domain_reliance("j", image, no_image, domain).set_index("domain")
    assert table.loc["x", "n_pairs"] == 3 and table.loc["y", "n_pairs"] == 1
    assert table.loc["x", ["acc_image", "acc_no_image", "irs"]].tolist() == pytest.approx(
        [2 / 3, 1 / 3, 1 / 3])
    assert table.loc["y", ["acc_image", "acc_no_image", "irs"]].tolist() == [1.0, 0.0, 1.0]


def test_a_judge_that_ignores_the_image_has_zero_irs_in_every_domain():
    """The null: identical verdicts with and without the image give IRS exactly 0."""
    rng = np.random.default_rng(0)
    correct = pd.Series(pd.array(rng.random(60) < 0.6, dtype="boolean"))
    domain = pd.Series(rng.choice(["a", "b", "c"], 60))
    table = domain_reliance("blind", correct, correct.copy(), domain)
    assert (table["irs"] == 0).all() and table["n_pairs"].sum() == 60


# -- Table 5 ------------------------------------------------------------------------------------

SCENE = Scene(background="beige", objects=(
    SceneObject(shape="circle", color="orange", size="large", position="center"),
    SceneObject(shape="diamond", color="orange", size="small", position="right")))
T1, T2, T3 = ("The background is beige.", "The shape in the center is a circle.",
              "The shape on the right is small.")
F1, F2 = "The background is black.", "The shape on the left is red."  # F2: an empty slot


def _pairs(scene: str | None) -> pd.DataFrame:
    return pd.DataFrame({"pair_id": ["p1", "p2"], "scene": [scene, scene],
                         "answer_a": [f"{T1} {T2}", f"{T2} {F2}"],
                         "answer_b": [f"{F1} {T3} I hope this helps.", T1]}
                        ).set_index("pair_id", drop=False)


def test_anchor_quality_by_hand():
    """Answer 1: p1 clean (2 facts), p2 one false (2 facts). Answer 2: p1 one false
    (2 facts), p2 clean (1 fact). Judge j1 repairs p1 (keeps all 3 true facts) but not
    p2; j2's p1 anchor failed (counted, never scored) and its p2 anchor keeps one of
    the two true facts."""
    anchors = {"j1": pd.Series({"p1": f"{T1} {T2} {T3}", "p2": f"{T2} {F2} {T1}"}),
               "j2": pd.Series({"p1": None, "p2": T1})}
    table = anchor_quality(_pairs(scene_to_json(SCENE)), anchors)
    rows = {(r.text, r.model): r for r in table.itertuples()}
    first, second = rows[("Answer 1", "")], rows[("Answer 2", "")]
    assert (first.n, first.truthful, first.false_facts, first.facts) == (2, 0.5, 0.5, 2.0)
    assert (second.n, second.truthful, second.false_facts, second.facts) == (2, 0.5, 0.5, 1.5)
    j1, j2 = rows[("Anchor", "j1")], rows[("Anchor", "j2")]
    assert (j1.n, j1.n_missing, j1.truthful, j1.false_facts, j1.facts) == (2, 0, 0.5, 0.5, 3)
    assert (j1.repaired, j1.kept, j1.n_with_false_candidate) == (0.5, 1.0, 2)
    assert (j2.n, j2.n_missing, j2.truthful, j2.facts) == (1, 1, 1.0, 1.0)
    assert (j2.repaired, j2.kept, j2.n_with_false_candidate) == (1.0, 0.5, 1)


def test_anchor_quality_needs_planted_truth():
    """A real benchmark plants no scene: no row is guessed."""
    assert anchor_quality(_pairs(None), {"j1": pd.Series({"p1": T1, "p2": T1})}).empty


# -- Table 6 ------------------------------------------------------------------------------------


def test_method_cost_by_hand():
    """Verdicts: two calls (100 + 120 prompt, 5 + 5 completion tokens) and a pair not
    asked; the anchor pass: one call without usage (failed: counted, never priced) and
    one of 200 + 50 tokens. At $2 / $10 per million: (420 * 2 + 60 * 10) / 1e6 over
    2 pairs."""
    verdicts = pd.DataFrame({"request_key": ["k1", "k2", None],
                             "prompt_tokens": [100, 120, np.nan],
                             "completion_tokens": [5, 5, np.nan]})
    anchors = pd.DataFrame({"request_key": ["k3", "k4"], "prompt_tokens": [np.nan, 200],
                            "completion_tokens": [np.nan, 50]})
    pricing = Pricing(input_per_mtok=2.0, output_per_mtok=10.0)
    row = method_cost("j", "birch", [(verdicts, pricing), (anchors, pricing)], n_pairs=2)
    assert (row["calls"], row["calls_without_usage"]) == (4, 1)
    assert (row["prompt_tokens"], row["completion_tokens"]) == (420, 60)
    assert row["calls_per_pair"] == 2 and row["prompt_tokens_per_pair"] == 210
    assert row["cost_per_pair"] == pytest.approx(1.44e-3 / 2)
    unpriced = method_cost("j", "birch", [(verdicts, None)], n_pairs=2)
    assert np.isnan(unpriced["cost_per_pair"]) and unpriced["calls"] == 2


def test_cost_table_prices_each_part_at_its_models_prices():
    """The equalised ablation's lengthened texts are priced at the lengthener's prices,
    a judge's own calls at the judge's; only the models whose calls are priced are asked
    their prices, and a model without any leaves the cost NaN."""
    def rows(**columns):
        return pd.DataFrame({"request_key": ["k"], "prompt_tokens": [1e6],
                             "completion_tokens": [0.0], **columns})

    verdicts = pd.concat([rows(judge="j", variant="base", pair_id="p1"),
                          rows(judge="j", variant="equalised", pair_id="p1"),
                          rows(judge="free", variant="base", pair_id="p1")],
                         ignore_index=True)
    texts = rows(model="len", step="lengthen_a", pair_id="p1")
    prices = {"j": Pricing(input_per_mtok=2.0, output_per_mtok=0.0),
              "len": Pricing(input_per_mtok=5.0, output_per_mtok=0.0), "free": None,
              "unused": Pricing(input_per_mtok=1.0, output_per_mtok=1.0)}
    asked = []

    def pricing(model):
        asked.append(model)
        return prices[model]

    table = cost_table(verdicts, texts, pricing=pricing, lengthener="len").set_index(
        ["judge", "method"])["cost_per_pair"]
    assert table[("j", "base")] == 2.0 and table[("j", "equalised")] == 2.0 + 5.0
    assert np.isnan(table[("free", "base")])
    assert set(asked) == {"j", "len", "free"}


def test_journal_usage_reads_each_answer_by_its_key(tmp_path):
    """Usage comes from the journal row of each request key; a failed call (kept only in
    the failures table) and a model without a journal have none."""
    path = journal_path(tmp_path, "sim", "sim/x")
    request = ChatRequest(model="sim/x", prompt="p")
    with Journal(path) as journal:
        journal.record("k1", request, ChatResponse(
            text="a", usage={"prompt_tokens": 7, "completion_tokens": 3}))
        journal.record("k2", request, ChatResponse(text="", status="failed", error="x"))
    calls = pd.DataFrame({"backend": ["sim", "sim", "sim"],
                          "model_id": ["sim/x", "sim/x", "sim/none"],
                          "request_key": ["k1", "k2", "k9"]})
    usage = journal_usage(tmp_path, calls)
    assert usage.loc[0, ["prompt_tokens", "completion_tokens"]].tolist() == [7, 3]
    assert usage.loc[1:, ["prompt_tokens", "completion_tokens"]].isna().all().all()


# -- the paper's printed numbers ----------------------------------------------------------------

# Seed 003 Table 3 (MLLM-as-a-Judge, GPT-4o) and Table 4 (GPT-4o on MLLM-as-a-Judge), %.
TABLE3_GPT4O = {"base": 66.45, "standard_ref": 65.14, "birch": 75.78}
TABLE4_GPT4O = {  # method: (Acc, Acc_IDS, Acc_CDS, IB, LB)
    "base": (66.5, 85.3, 26.3, 59.0, 32.9),
    "standard_ref": (65.1, 80.7, 31.8, 48.9, 16.9),
    "birch": (75.8, 90.1, 45.3, 44.8, 20.3)}
TABLE4_CHANGES = {"standard_ref": (-1.4, -4.6, 5.5, -10.1, -16.0),
                  "birch": (9.3, 4.8, 19.0, -14.2, -12.6)}


def test_the_paper_table4_is_recomputable_from_table3():
    """What the paper lets one recompute (the issue's "Table 5 from Table 3": Table 5
    holds GPT-5 quality scores of texts, which no other table determines; the table
    Table 3 determines is Table 4). Table 4's Acc column is Table 3's GPT-4o row rounded
    to one decimal, its IB is Acc_IDS - Acc_CDS, and its bracketed changes are what our
    Tables 4/8 report computes from its rows."""
    for method, acc in TABLE3_GPT4O.items():
        rounded = float(Decimal(str(acc)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
        assert rounded == TABLE4_GPT4O[method][0]
        _, ids, cds, ib, _ = TABLE4_GPT4O[method]
        assert ids - cds == pytest.approx(ib, abs=1e-9)
    methods = pd.DataFrame([{"judge": "GPT-4o", "method": method,
                             **dict(zip(("acc", "acc_ids", "acc_cds", "ib", "lb"),
                                        np.array(values) / 100, strict=True))}
                            for method, values in TABLE4_GPT4O.items()])
    methods["balanced"] = (methods["acc_ids"] + methods["acc_cds"]) / 2
    methods["acc_all"], methods["n_ids"], methods["n_cds"] = methods["acc"], 0, 0
    changes = table4(methods).filter(like="Δ").drop(columns="Δ balanced Acc")
    for method, expected in TABLE4_CHANGES.items():
        row = changes.loc[("GPT-4o", {"standard_ref": "Standard Ref", "birch": "BIRCH"}[method])]
        assert row.tolist() == pytest.approx(list(expected), abs=1e-9)


def test_the_paper_table5_anchors_beat_both_answers():
    """Table 5 as printed: each anchor's average score exceeds both answers' (§6.4's
    claim, checked on the printed numbers)."""
    answers, anchors = (3.1034, 3.2126), {"Gemini-2.5-Flash": 4.3793, "LLaVA-1.5-13B": 3.7364}
    assert all(score > max(answers) for score in anchors.values())
