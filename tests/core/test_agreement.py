"""Tests for judgebias.agreement (seed 000 §6.3: Kendall tau-b and tau-c vs humans)."""

from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from helpers.project import shared_data_dir

from judgebias.agreement import agreement, join_scores, kendall


def pair_counts(x: list[float], y: list[float]) -> dict[str, int]:
    """Brute-force pair classification, to confirm the hand counts written below."""
    out = {"P": 0, "Q": 0, "tie_x_only": 0, "tie_y_only": 0, "tie_both": 0}
    for i, j in combinations(range(len(x)), 2):
        dx, dy = np.sign(x[j] - x[i]), np.sign(y[j] - y[i])
        if dx == 0 and dy == 0:
            out["tie_both"] += 1
        elif dx == 0:
            out["tie_x_only"] += 1
        elif dy == 0:
            out["tie_y_only"] += 1
        elif dx == dy:
            out["P"] += 1
        else:
            out["Q"] += 1
    return out


def test_tau_b_and_c_with_ties_by_hand() -> None:
    x = [1, 2, 2, 3, 4]
    y = [1, 1, 2, 3, 3]
    # Pairs (i, j), i < j, of the 5 rows (n0 = 10):
    # (0,1) x up, y tied -> tie in y   (0,2) C  (0,3) C  (0,4) C
    # (1,2) x tied, y up -> tie in x   (1,3) C  (1,4) C
    # (2,3) C  (2,4) C                 (3,4) x up, y tied -> tie in y
    P, Q = 7, 0
    n, n0 = 5, 10
    n1 = 1  # pairs tied in x: the two 2s
    n2 = 2  # pairs tied in y: the two 1s and the two 3s
    m = 3  # min(#distinct x = 4, #distinct y = 3)
    assert pair_counts(x, y) == {"P": 7, "Q": 0, "tie_x_only": 1, "tie_y_only": 2, "tie_both": 0}
    tau_b = (P - Q) / math.sqrt((n0 - n1) * (n0 - n2))  # 7 / sqrt(72)
    tau_c = 2 * (P - Q) / (n**2 * (m - 1) / m)  # 14 / (50 / 3) = 0.84
    assert tau_c == pytest.approx(0.84)
    result = kendall(x, y)
    assert result["tau_b"] == pytest.approx(tau_b, abs=1e-12)
    assert result["tau_c"] == pytest.approx(tau_c, abs=1e-12)
    assert (result["n"], result["n_missing"]) == (5, 0)


def test_tau_with_discordant_pairs_by_hand() -> None:
    x = [1, 2, 3, 4, 4]
    y = [2, 1, 3, 3, 1]
    # (0,1) D  (0,2) C  (0,3) C  (0,4) D
    # (1,2) C  (1,3) C  (1,4) tie in y (1, 1)
    # (2,3) tie in y (3, 3)  (2,4) D  (3,4) tie in x (4, 4)
    P, Q, n0, n1, n2, n, m = 4, 3, 10, 1, 2, 5, 3
    assert pair_counts(x, y) == {"P": 4, "Q": 3, "tie_x_only": 1, "tie_y_only": 2, "tie_both": 0}
    result = kendall(x, y)
    assert result["tau_b"] == pytest.approx((P - Q) / math.sqrt((n0 - n1) * (n0 - n2)))
    assert result["tau_c"] == pytest.approx(2 * (P - Q) / (n**2 * (m - 1) / m))  # 0.12
    assert result["tau_c"] == pytest.approx(0.12)


def test_nan_dropped_pairwise_and_counted() -> None:
    scores = [0.1, np.nan, 0.3, 0.4, 0.9, 0.5]
    human = [1, 2, np.nan, 2, 4, 3]
    result = kendall(scores, human)
    assert (result["n"], result["n_missing"]) == (4, 2)
    expected = kendall([0.1, 0.4, 0.9, 0.5], [1, 2, 4, 3])
    assert result["tau_b"] == expected["tau_b"]
    assert result["tau_c"] == expected["tau_c"]


def test_degenerate_inputs_give_nan() -> None:
    assert math.isnan(kendall([0.5, 0.5, 0.5], [1, 2, 3])["tau_b"])
    assert math.isnan(kendall([0.1, np.nan], [1, 2])["tau_c"])
    with pytest.raises(ValueError, match="differ in length"):
        kendall([1, 2], [1, 2, 3])


def test_agreement_per_dataset_and_split() -> None:
    rng = np.random.default_rng(0)
    n = 60
    table = pd.DataFrame(
        {
            "dataset": np.repeat(["nebula", "flickr"], n // 2),
            "split": np.tile(np.repeat(["validation", "test"], n // 4), 2),
            "human_score": rng.integers(1, 5, n).astype(float),
            "judge_a": rng.random(n),
            "judge_b": rng.random(n),
        }
    )
    table.loc[3, "judge_a"] = np.nan
    out = agreement(table, ["judge_a", "judge_b"])
    assert list(out.columns) == [
        "dataset",
        "split",
        "metric",
        "tau_b",
        "tau_c",
        "n",
        "n_missing",
    ]
    assert len(out) == 2 * 2 * 2
    row = out[(out.dataset == "nebula") & (out.split == "validation") & (out.metric == "judge_a")]
    sub = table[(table.dataset == "nebula") & (table.split == "validation")]
    expected = kendall(sub["judge_a"], sub["human_score"])
    assert row["tau_b"].item() == pytest.approx(expected["tau_b"])
    assert row["tau_c"].item() == pytest.approx(expected["tau_c"])
    assert (row["n"].item(), row["n_missing"].item()) == (14, 1)
    # Without a split column: one row per dataset (and metric).
    single = agreement(table.drop(columns="split"), "judge_b")
    assert list(single["dataset"]) == ["flickr", "nebula"]
    assert list(single.columns[:2]) == ["dataset", "metric"]


def test_join_scores_repeats_item_score_on_each_rating() -> None:
    judgements = pd.DataFrame(
        {"item_id": [1, 1, 1, 2, 2, 2, 3, 3, 3], "human_score": [1, 2, 1, 3, 4, 4, 2, 2, 1]}
    )
    scores = pd.DataFrame({"item_id": ["1", "2", "4"], "score": [0.2, 0.9, 0.5]})
    out = join_scores(judgements, scores, score_column="score", name="judge")
    assert out["judge"].iloc[:6].tolist() == [0.2, 0.2, 0.2, 0.9, 0.9, 0.9]
    assert out["judge"].iloc[6:].isna().all()  # item 3 has no score: NaN, not imputed
    report = out.attrs["join_scores"]["judge"]
    assert report["n_unmatched_rows"] == 3
    assert report["n_unmatched_items"] == 1
    assert report["unmatched_items"] == ["3"]
    assert report["n_unused_items"] == 1  # item 4
    assert "judge" not in judgements.columns  # input untouched
    result = kendall(out["judge"], out["human_score"])
    assert (result["n"], result["n_missing"]) == (6, 3)


def test_join_scores_rejects_duplicates_and_clashes(tmp_path) -> None:
    judgements = pd.DataFrame({"item_id": ["a", "b"], "human_score": [1.0, 2.0]})
    dup = pd.DataFrame({"item_id": ["a", "b", "b", "c", "c"], "score": [0.1, 0.2, 0.3, 0.4, 0.5]})
    with pytest.raises(ValueError, match=r"duplicate item_id.*\['b', 'c'\]"):
        join_scores(judgements, dup)
    with pytest.raises(ValueError, match="already has a column"):
        join_scores(
            judgements,
            pd.DataFrame({"item_id": ["a"], "human_score": [0.1]}),
            score_column="human_score",
        )


def test_join_scores_reads_external_files(tmp_path) -> None:
    judgements = pd.DataFrame({"item_id": ["007", "007", "010"], "human_score": [1, 2, 3]})
    csv = tmp_path / "metric.csv"
    pd.DataFrame({"item_id": ["007", "010"], "clip_s": [0.7, np.nan]}).to_csv(csv, index=False)
    out = join_scores(judgements, csv, score_column="clip_s")
    assert out["clip_s"].iloc[:2].tolist() == [0.7, 0.7]  # "007" keeps its leading zeros
    assert np.isnan(out["clip_s"].iloc[2])
    assert out.attrs["join_scores"]["clip_s"]["n_nan_scores"] == 1
    assert out.attrs["join_scores"]["clip_s"]["n_unmatched_rows"] == 0
    pq = tmp_path / "metric.parquet"
    pd.DataFrame({"item_id": ["007", "010"], "s": [0.1, 0.2]}).to_parquet(pq)
    assert join_scores(judgements, pq, score_column="s")["s"].tolist() == [0.1, 0.1, 0.2]
    with pytest.raises(ValueError, match="unsupported"):
        join_scores(judgements, tmp_path / "metric.xlsx", score_column="s")


def test_flickr8k_expert_rating_rows() -> None:
    """Flickr8k-Expert: 5,664 captions x 3 expert ratings = 16,992 rating rows."""
    path = shared_data_dir() / "caption-judgments" / "flickr8k_expert.json"
    if not path.exists():
        pytest.skip(f"real data absent: {path}")
    data = json.loads(path.read_text())
    rows = [r for image in data.values() for r in image["human_judgement"]]
    judgements = pd.DataFrame(
        {
            "dataset": "flickr8k_expert",
            "item_id": [f"{r['image_id']}|{r['caption']}" for r in rows],
            "human_score": [r["rating"] for r in rows],
        }
    )
    items = judgements.drop_duplicates("item_id")
    assert len(judgements) == 16_992 and len(items) == 5_664
    # An item-level "metric" (caption length, squashed to [0, 1]) joined onto the ratings.
    length = items["item_id"].str.split("|").str[1].str.split().str.len()
    scores = pd.DataFrame({"item_id": items["item_id"], "score": length / length.max()})
    out = agreement(join_scores(judgements, scores), "score")
    assert out["n"].item() == 16_992 and out["n_missing"].item() == 0
    assert -1 <= out["tau_b"].item() <= 1 and -1 <= out["tau_c"].item() <= 1
