"""The recorded study (issue 44 item 2): the audit's measures on judgements recorded
elsewhere, on small tables with a planted answer (self- and family-preference in score
points, position bias, informativeness bias) and tables with none (normal, skewed and
discrete noise), each recovered within its interval; bad side files named by file and
row. The pipeline run (tables as DVC-tracked inputs, a changed row rerunning only its
table) is test_recorded_pipeline.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.recorded_worlds import FAMILIES, MODELS, pairwise_world, scores_world

from judgebias.studies.recorded.data import (
    HUMAN_PAIRS,
    INFORMATIVE,
    human_ratings,
    pair_id,
    pair_labels,
)
from judgebias.studies.recorded.measures import pairwise_measures, score_measures

OPTIONS = {"ci": 0.95, "resamples": 1000, "seed": 0}


def _own(tables: dict[str, pd.DataFrame], model: str) -> pd.Series:
    return tables["self_preference"].set_index("model").loc[model]


def test_planted_self_and_family_preference_are_recovered_in_points():
    table, human = scores_world(self_points={"alpha": 8.0}, family_points={"beta": 6.0})
    tables, metrics = score_measures(table, (0, 100), FAMILIES, human=human, **OPTIONS)
    alpha, gamma = _own(tables, "alpha"), _own(tables, "gamma")
    assert alpha["own_ci_low"] < 8.0 < alpha["own_ci_high"] and alpha["own_ci_low"] > 0
    assert gamma["own_ci_low"] < 0 < gamma["own_ci_high"]
    beta = _own(tables, "beta")  # beta likes alpha's outputs (its sibling's), not its own
    assert beta["family_ci_low"] < 6.0 < beta["family_ci_high"] and beta["family_ci_low"] > 0
    assert metrics["square_panel"] == MODELS and "philautia" in tables
    philautia = tables["philautia"].set_index("model")["score"]
    assert philautia.idxmax() == "alpha"  # the paper's score ranks the planted judge first
    agreement = tables["agreement"].set_index("judge")
    assert (agreement["tau_b"] > 0.3).all() and (agreement["tau_b_low"] > 0).all()


@pytest.mark.parametrize("noise", ["normal", "skewed", "discrete"])
def test_a_table_without_bias_shows_none(noise):
    table, _ = scores_world(noise=noise, seed=3)
    tables, _ = score_measures(table, (0, 100), FAMILIES, **OPTIONS)
    effects = tables["self_preference"]
    assert ((effects["own_ci_low"] < 0) & (effects["own_ci_high"] > 0)).all(), effects


def test_a_panel_that_is_not_square_says_so_and_keeps_what_it_can():
    """Models only generating (delta) or only judging (an outside judge) are allowed:
    self-preference of the others stands; the paper's score needs a square panel."""
    table, _ = scores_world(self_points={"alpha": 8.0})
    table = table[table["judge"] != "delta"]
    noise = np.random.default_rng(1).normal(0, 6, (table["judge"] == "gamma").sum())
    outside = table[table["judge"] == "gamma"].assign(judge="outsider")
    outside["score"] = np.clip((outside["score"] + noise).round(), 0, 100)
    table = pd.concat([table, outside], ignore_index=True)
    tables, metrics = score_measures(table, (0, 100), FAMILIES, **OPTIONS)
    assert metrics["left_out_of_square"] == ["delta", "outsider"]
    assert metrics["square_panel"] == ["alpha", "beta", "gamma"]
    assert _own(tables, "alpha")["own_ci_low"] > 0
    assert not _own(tables, "outsider")["own_identified"]


def test_planted_position_and_informativeness_bias_are_recovered(tmp_path):
    table, human, informative = pairwise_world(
        first_slot={"primacy": 0.3}, informative_pull={"swayed": 0.4})
    pairs = {pair_id(i, a, b) for i, a, b in zip(table["item"], table["first"],
                                                 table["second"], strict=True)}
    human.to_csv(tmp_path / "human.csv", index=False)
    informative.to_csv(tmp_path / "informative.csv", index=False)
    preferred = pair_labels(tmp_path / "human.csv", HUMAN_PAIRS, pairs, allow_empty=False)
    labels = pair_labels(tmp_path / "informative.csv", INFORMATIVE, pairs, allow_empty=True)
    tables, _ = pairwise_measures(table, preferred=preferred, more_informative=labels,
                                  randomised=False, **OPTIONS)
    position = tables["position"].set_index(["judge", "measure"])
    pc = position.loc[("primacy", "pc")]
    assert pc["ci_high"] < position.loc[("fair", "pc"), "ci_low"]
    pf = position.loc[("primacy", "pf")]  # primacy: negative PF (recency - primacy)
    assert pf["ci_high"] < 0 and pf["p_value"] < 0.01
    fair = position.loc[("fair", "pf")]
    assert fair["ci_low"] < 0 < fair["ci_high"]
    accuracy = tables["accuracy"].set_index(["judge", "statistic"])
    swayed, unswayed = accuracy.loc[("swayed", "ib")], accuracy.loc[("fair", "ib")]
    # planted: on CDS pairs 40 % of verdicts go to the informative (wrong) answer, the
    # rest right 80 %: Acc_CDS = 0.6 x 0.8 = 0.48, Acc_IDS = 0.8 + 0.4 x 0.2 ... = 0.8
    # (pulled verdicts on IDS pairs pick the preferred answer: accuracy + pull x error)
    assert swayed["low"] > 0.15 and swayed["low"] < 0.8 - 0.48 < swayed["high"] + 0.05
    assert unswayed["low"] < 0 < unswayed["high"]


def test_side_files_name_the_row_of_a_bad_label(tmp_path):
    table, human, _ = pairwise_world(n_pairs=5)
    pairs = {pair_id(i, a, b) for i, a, b in zip(table["item"], table["first"],
                                                 table["second"], strict=True)}
    human.loc[2, "preferred"] = "someone-else"
    path = tmp_path / "human.csv"
    human.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"human.csv: row 3: preferred 'someone-else' is "
                                         "neither"):
        pair_labels(path, HUMAN_PAIRS, pairs, allow_empty=False)
    human.loc[2, "preferred"] = human.loc[2, "a"]
    human.loc[4, "item"] = "q999"
    human.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"human.csv: row 5: the pair .* is not judged"):
        pair_labels(path, HUMAN_PAIRS, pairs, allow_empty=False)
    scores, ratings = scores_world(n_items=3)
    ratings = pd.concat([ratings, ratings.iloc[[1]]], ignore_index=True)
    ratings.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"human.csv: row 13: .* given twice"):
        human_ratings(path, set(zip(scores["item"], scores["output_id"], strict=True)))
