"""Tests for judgebias.stats.agreement (seed 000 §6.3: Kendall tau-b and tau-c vs humans)."""

from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from helpers.project import shared_data_dir
from scipy import stats

from judgebias.stats.agreement import agreement, join_scores, kendall, resampled_kendall


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


def _flickr8k_expert_ratings() -> list[dict]:
    """Every rating of the real Flickr8k-Expert file (skips where it is absent)."""
    path = shared_data_dir() / "caption-judgments" / "flickr8k_expert.json"
    if not path.exists():
        pytest.skip(f"real data absent: {path}")
    data = json.loads(path.read_text())
    return [r for image in data.values() for r in image["human_judgement"]]


def test_flickr8k_expert_rating_rows() -> None:
    """Flickr8k-Expert: 5,664 captions x 3 expert ratings = 16,992 rating rows."""
    rows = _flickr8k_expert_ratings()
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


# ----------------------------------------------------------------- intervals and the test


def expanded_tau(x, y, clusters, counts) -> dict[str, float]:
    """scipy on the resampled table itself: every row of cluster k ``counts[k]`` times."""
    w = np.asarray(counts)[clusters].astype(int)
    xe, ye = np.repeat(x, w), np.repeat(y, w)
    if xe.size < 2 or np.ptp(xe) == 0 or np.ptp(ye) == 0:
        return {"tau_b": np.nan, "tau_c": np.nan}
    return {v: stats.kendalltau(xe, ye, variant=v[-1]).statistic for v in ("tau_b", "tau_c")}


@pytest.mark.parametrize("kind", ["ties", "continuous", "mixed", "tiny clusters"])
def test_resampled_kendall_equals_scipy_on_the_resampled_table(kind) -> None:
    """The fast path (atoms, blocks, grid) against scipy on each expanded resample, 1e-12,
    and against `kendall` with every cluster drawn once."""
    rng = np.random.default_rng(7)
    n_clusters = 40 if kind != "tiny clusters" else 6
    clusters = np.repeat(np.arange(n_clusters), rng.integers(1, 8, n_clusters))
    n = clusters.size
    if kind == "ties":  # a 0-100 judge against a 1-4 scale
        x = rng.integers(0, 101, n).astype(float)
        y = rng.integers(1, 5, n).astype(float)
    elif kind == "continuous":
        x = rng.normal(size=n)
        y = x + rng.normal(size=n)
    else:  # tie groups larger than a block beside distinct values
        x = np.where(rng.random(n) < 0.4, 0.0, rng.normal(size=n))
        y = np.where(rng.random(n) < 0.3, 1.0, rng.normal(size=n).round(1))
    counts = rng.multinomial(n_clusters, np.full(n_clusters, 1 / n_clusters), size=30)
    counts = np.vstack([np.ones(n_clusters), counts])
    got = resampled_kendall(x, y, clusters, counts, chunk=97)  # many small pieces
    for r, row in enumerate(counts):
        want = expanded_tau(x, y, clusters, row)
        for v in ("tau_b", "tau_c"):
            if np.isnan(want[v]):
                assert np.isnan(got[v][r])
            else:
                assert got[v][r] == pytest.approx(want[v], abs=1e-12)
    point = kendall(x, y)
    assert got["tau_b"][0] == pytest.approx(point["tau_b"], abs=1e-12)
    assert got["tau_c"][0] == pytest.approx(point["tau_c"], abs=1e-12)


def two_clusters() -> pd.DataFrame:
    # cluster A: (1, 1), (2, 2); cluster B: (3, 3), (4, 2)
    return pd.DataFrame(
        {
            "dataset": "d",
            "image_id": ["A", "A", "B", "B"],
            "judge": [1.0, 2.0, 3.0, 4.0],
            "human_score": [1.0, 2.0, 3.0, 2.0],
        }
    )


def test_bootstrap_of_two_clusters_by_hand() -> None:
    """Two clusters: a resample is AA (prob 1/4), AB (1/2) or BB (1/4), all by hand.

    AB = the data: pairs (0,1) C, (0,2) C, (0,3) C, (1,2) C, (1,3) tie in y, (2,3) D:
    P = 4, Q = 1, n0 = 6, n1 = 0, n2 = 1: tau_b = 3 / sqrt(6 * 5); m = min(4, 3) = 3:
    tau_c = 2 * 3 / (16 * 2 / 3) = 0.5625.
    AA = (1,1), (1,1), (2,2), (2,2): 4 concordant cross pairs, the 2 copy pairs tied in
    both: tau_b = 4 / sqrt((6 - 2)(6 - 2)) = 1; m = 2: tau_c = 2 * 4 / (16 / 2) = 1.
    BB = (3,3), (3,3), (4,2), (4,2): 4 discordant: tau_b = tau_c = -1.
    """
    assert pair_counts([1, 2, 3, 4], [1, 2, 3, 2]) == {
        "P": 4, "Q": 1, "tie_x_only": 0, "tie_y_only": 1, "tie_both": 0
    }  # fmt: skip
    out = agreement(two_clusters(), "judge", cluster="image_id", n_resamples=2000, seed=3)
    row = out.iloc[0]
    assert row["tau_b"] == pytest.approx(3 / math.sqrt(30))
    assert row["tau_c"] == pytest.approx(0.5625)
    assert row["n_clusters"] == 2
    for v in ("tau_b", "tau_c"):
        # 2.5% and 97.5% quantiles of {-1: 1/4, AB: 1/2, 1: 1/4}: BB and AA
        assert (row[f"{v}_low"], row[f"{v}_high"]) == (-1.0, 1.0)
        assert row[f"{v}_low"] <= row[v] <= row[f"{v}_high"]
        # p = 2 (#{tau* <= 0} + 1) / (B + 1), #{tau* <= 0} = #BB ~ Binomial(2000, 1/4)
        assert row[f"{v}_p"] == pytest.approx(0.5, abs=0.06)
    assert row["tau_b_p"] == row["tau_c_p"]  # the same resamples fall below 0


def test_interval_contains_the_estimate_and_p_matches_it() -> None:
    rng = np.random.default_rng(1)
    n = 120
    q = rng.normal(size=n)
    table = pd.DataFrame(
        {
            "dataset": np.repeat(["strong", "none"], n // 2),
            "item_id": np.arange(n) // 3,
            "human_score": np.clip(np.round(2.5 + q), 1, 4),
        }
    )
    table["judge"] = np.where(table["dataset"] == "strong", q, rng.normal(size=n)) * 10 // 1
    out = agreement(table, "judge", cluster="item_id", n_resamples=500).set_index("dataset")
    for v in ("tau_b", "tau_c"):
        assert (out[f"{v}_low"] <= out[v]).all() and (out[v] <= out[f"{v}_high"]).all()
        strong = out.loc["strong"]
        assert strong[f"{v}_low"] > 0
        assert strong[f"{v}_p"] == pytest.approx(2 / 501)  # every resample above 0
    assert out.loc["none", "tau_b_low"] < 0 < out.loc["none", "tau_b_high"]
    assert out.loc["none", "tau_b_p"] > 0.05
    assert list(out["n_clusters"]) == [20, 20]


def test_no_resamples_leaves_the_output_unchanged() -> None:
    rng = np.random.default_rng(0)
    table = pd.DataFrame(
        {
            "dataset": np.repeat(["a", "b"], 20),
            "image_id": np.arange(40) // 4,
            "human_score": rng.integers(1, 5, 40).astype(float),
            "judge": rng.random(40),
        }
    )
    before = agreement(table, "judge")
    assert list(before.columns) == ["dataset", "metric", "tau_b", "tau_c", "n", "n_missing"]
    after = agreement(table, "judge", cluster="image_id", n_resamples=0, seed=9)
    pd.testing.assert_frame_equal(before, after)
    with_interval = agreement(table, "judge", cluster="image_id", n_resamples=50)
    assert list(with_interval.columns) == [
        *before.columns,
        "tau_b_low", "tau_b_high", "tau_b_p", "tau_c_low", "tau_c_high", "tau_c_p",
        "n_clusters",
    ]  # fmt: skip
    pd.testing.assert_frame_equal(with_interval[before.columns], before)


def test_a_cluster_is_resampled_whole() -> None:
    """Every caption's 3 rating rows are identical copies: resampling captions whole gives
    the interval of the de-duplicated table resampled by rows (tripling every row of a
    resample changes neither tau-b nor tau-c: S, the untied pairs, N^2 all scale by 9),
    while resampling the copies one by one would treat them as 3 independent ratings and
    give a narrower interval."""
    rng = np.random.default_rng(2)
    captions = 60
    items = pd.DataFrame(
        {
            "dataset": "d",
            "item_id": np.arange(captions),
            "human_score": rng.integers(1, 5, captions).astype(float),
        }
    )
    items["judge"] = items["human_score"] + rng.normal(0, 1.5, captions)
    ratings = items.loc[items.index.repeat(3)].reset_index(drop=True)
    kwargs = {"n_resamples": 400, "seed": 11}
    whole = agreement(ratings, "judge", cluster="item_id", **kwargs)
    dedup = agreement(items, "judge", cluster=None, **kwargs)
    loose = agreement(ratings, "judge", cluster=None, **kwargs)
    for v in ("tau_b", "tau_c"):
        for stat in (v, f"{v}_low", f"{v}_high", f"{v}_p"):
            assert whole[stat].item() == pytest.approx(dedup[stat].item(), abs=1e-12)
        width = (whole[f"{v}_high"] - whole[f"{v}_low"]).item()
        assert (loose[f"{v}_high"] - loose[f"{v}_low"]).item() < 0.75 * width
    assert (whole["n_clusters"].item(), loose["n_clusters"].item()) == (captions, 3 * captions)


def test_seeded_reproducible_and_paired_across_metrics() -> None:
    rng = np.random.default_rng(4)
    n = 90
    table = pd.DataFrame(
        {
            "dataset": np.repeat(["x", "y"], n // 2),
            "image_id": np.arange(n) // 5,
            "human_score": rng.integers(1, 5, n).astype(float),
            "a": rng.normal(size=n),
            "b": rng.integers(0, 101, n).astype(float),
        }
    )
    first = agreement(table, ["a", "b"], cluster="image_id", n_resamples=300, seed=5)
    again = agreement(table, ["a", "b"], cluster="image_id", n_resamples=300, seed=5)
    pd.testing.assert_frame_equal(first, again)
    other = agreement(table, ["a", "b"], cluster="image_id", n_resamples=300, seed=6)
    assert not np.allclose(first["tau_b_low"], other["tau_b_low"])
    # a metric's numbers do not depend on which other metrics are asked for
    alone = agreement(table, "b", cluster="image_id", n_resamples=300, seed=5)
    pd.testing.assert_frame_equal(
        alone.reset_index(drop=True), first[first.metric == "b"].reset_index(drop=True)
    )


def test_nan_rows_dropped_with_intervals_too() -> None:
    rng = np.random.default_rng(5)
    n = 80
    table = pd.DataFrame(
        {
            "dataset": "d",
            "image_id": np.arange(n) // 4,
            "human_score": rng.integers(1, 5, n).astype(float),
            "judge": rng.normal(size=n),
        }
    )
    table["judge"] += table["human_score"]
    holed = table.copy()
    holed.loc[[1, 6, 30], "judge"] = np.nan  # images keep other rows
    holed.loc[[13, 50], "human_score"] = np.nan
    kwargs = {"cluster": "image_id", "n_resamples": 300, "seed": 2}
    out = agreement(holed, "judge", **kwargs)
    assert (out["n"].item(), out["n_missing"].item()) == (75, 5)
    pd.testing.assert_frame_equal(out[agreement(holed, "judge").columns], agreement(holed, "judge"))
    # the same clusters, the same draws: as if the NaN rows had never been there
    clean = agreement(holed.dropna(), "judge", **kwargs)
    cols = [c for c in out.columns if c != "n_missing"]
    pd.testing.assert_frame_equal(out[cols], clean[cols])
    assert out["n_clusters"].item() == 20


def test_interval_arguments_are_checked() -> None:
    table = two_clusters()
    with pytest.raises(ValueError, match="lacks columns"):
        agreement(table, "judge", cluster="caption_id", n_resamples=10)
    with pytest.raises(ValueError, match="n_resamples"):
        agreement(table, "judge", n_resamples=-1)
    with pytest.raises(ValueError, match="confidence_level"):
        agreement(table, "judge", n_resamples=10, confidence_level=95)
    table.loc[2, "image_id"] = None
    with pytest.raises(ValueError, match="missing values"):
        agreement(table, "judge", cluster="image_id", n_resamples=10)
    table.loc[2, "judge"] = np.nan  # the row without a cluster is not used: fine
    out = agreement(table, "judge", cluster="image_id", n_resamples=10)
    assert out["n"].item() == 3


def test_degenerate_group_gives_nan_interval() -> None:
    table = pd.DataFrame({"dataset": "d", "judge": [0.5, 0.5, 0.5], "human_score": [1.0, 2.0, 3.0]})
    out = agreement(table, "judge", n_resamples=20).iloc[0]
    assert all(math.isnan(out[c]) for c in ("tau_b", "tau_b_low", "tau_b_high", "tau_c_p"))
    # beside a defined metric, the difference is undefined too (and no shape error)
    table["good"] = [1.0, 2.0, 3.0]
    out = agreement(table, ["judge", "good"], n_resamples=20, versus="good").iloc[0]
    assert all(math.isnan(out[c]) for c in ("tau_b_diff", "tau_b_diff_low", "tau_c_diff_p"))


def test_flickr8k_expert_interval_by_image() -> None:
    """The real table: 1,000 images, resampled whole; rows as units give a narrower
    interval (they treat the 3 ratings of a caption as independent)."""
    rows = _flickr8k_expert_ratings()
    table = pd.DataFrame(
        {
            "dataset": "flickr8k_expert",
            "image_id": [r["image_id"] for r in rows],
            "item_id": [f"{r['image_id']}|{r['caption']}" for r in rows],
            "human_score": [r["rating"] for r in rows],
        }
    )
    mean = table.groupby("item_id")["human_score"].transform("mean")
    table["judge"] = (mean * 20 + table["item_id"].str.len() % 7).round()  # ties, 0-100
    kwargs = {"n_resamples": 200, "seed": 1}
    by_image = agreement(table, "judge", cluster="image_id", **kwargs).iloc[0]
    by_row = agreement(table, "judge", **kwargs).iloc[0]
    assert by_image["n_clusters"] == 1000 and by_row["n_clusters"] == 16_992
    for v in ("tau_b", "tau_c"):
        assert by_image[f"{v}_low"] < by_image[v] < by_image[f"{v}_high"]
        assert by_image[f"{v}_low"] > 0 and by_image[f"{v}_p"] == pytest.approx(2 / 201)
        width = by_image[f"{v}_high"] - by_image[f"{v}_low"]
        assert by_row[f"{v}_high"] - by_row[f"{v}_low"] < width


def test_paired_difference_is_the_difference_on_the_same_resamples() -> None:
    """`versus`: tau(versus) - tau(metric) on each resample, checked against scipy on the
    expanded table of every resample (the draws rebuilt from the documented stream), with
    a NaN hole in one metric only (each keeps its own rows)."""
    from judgebias.stats.agreement import _draw

    rng = np.random.default_rng(8)
    n = 48
    table = pd.DataFrame({"image_id": np.arange(n) // 4,
                          "human_score": rng.integers(1, 5, n).astype(float)})
    table["pomms"] = table["human_score"] + rng.normal(0, 1.0, n)
    table["judge"] = table["human_score"] + rng.normal(0, 2.0, n)
    table.loc[[3, 17], "judge"] = np.nan
    out = agreement(table, ["judge", "pomms"], by=None, cluster="image_id", n_resamples=40,
                    seed=11, versus="pomms").set_index("metric")
    stream = np.random.SeedSequence(11).spawn(1)[0]
    counts = np.hstack(_draw(np.random.default_rng(stream), 12, 40, n)).T  # (B, clusters)
    diffs: dict[str, list[float]] = {"tau_b": [], "tau_c": []}
    for weights in counts:
        expanded = table.loc[table.index.repeat(weights[table["image_id"]].astype(int))]
        for v in diffs:
            taus = {m: kendall(expanded[m], expanded["human_score"])[v]
                    for m in ("judge", "pomms")}
            diffs[v].append(taus["pomms"] - taus["judge"])
    judge = out.loc["judge"]
    for v, values in diffs.items():
        assert judge[f"{v}_diff"] == pytest.approx(out.loc["pomms", v] - judge[v])
        low, high = np.quantile(values, [0.025, 0.975])
        assert (judge[f"{v}_diff_low"], judge[f"{v}_diff_high"]) == (
            pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
        tail = min(sum(d <= 0 for d in values), sum(d >= 0 for d in values)) + 1
        assert judge[f"{v}_diff_p"] == pytest.approx(min(1.0, 2 * tail / 41))
        assert np.isnan(out.loc["pomms", f"{v}_diff"])
    # the other numbers are those without `versus`
    plain = agreement(table, ["judge", "pomms"], by=None, cluster="image_id",
                      n_resamples=40, seed=11).set_index("metric")
    pd.testing.assert_frame_equal(out[plain.columns], plain)


def test_paired_difference_finds_a_better_judge_and_not_an_equal_one() -> None:
    """A copy of the judge differs by exactly 0 ([0, 0], p = 1); a much less noisy judge
    on 60 images is found better, its interval above 0 and narrower than the two
    unpaired intervals would allow."""
    rng = np.random.default_rng(2)
    n = 300
    table = pd.DataFrame({"image_id": np.arange(n) // 5})
    q = rng.normal(size=n) + rng.normal(0, 0.7, n // 5)[table["image_id"]]
    table["human_score"] = np.clip(np.round(2.5 + 0.8 * (q + rng.normal(0, 0.6, n))), 1, 4)
    table["judge"] = q + rng.normal(0, 2.0, n)
    table["copy"] = table["judge"]
    table["better"] = q + rng.normal(0, 0.3, n)
    kwargs = {"by": None, "cluster": "image_id", "n_resamples": 999, "seed": 1}
    same = agreement(table, ["judge", "copy"], versus="copy", **kwargs).set_index("metric")
    row = same.loc["judge"]
    assert (row["tau_b_diff"], row["tau_b_diff_low"], row["tau_b_diff_high"],
            row["tau_b_diff_p"]) == (0.0, 0.0, 0.0, 1.0)
    out = agreement(table, ["judge", "better"], versus="better", **kwargs).set_index("metric")
    judge, better = out.loc["judge"], out.loc["better"]
    assert judge["tau_b_diff_low"] > 0 and judge["tau_b_diff_p"] < 0.01
    paired = judge["tau_b_diff_high"] - judge["tau_b_diff_low"]
    unpaired = (better["tau_b_high"] - better["tau_b_low"]) + (judge["tau_b_high"]
                                                              - judge["tau_b_low"])
    assert paired < 0.8 * unpaired


def test_versus_must_be_a_scored_column_with_resamples() -> None:
    table = two_clusters()
    with pytest.raises(ValueError, match="versus='other'"):
        agreement(table, "judge", cluster="image_id", n_resamples=10, versus="other")
    with pytest.raises(ValueError, match="n_resamples > 0"):
        agreement(table, "judge", versus="judge")
