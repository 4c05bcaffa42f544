"""Caption and score jobs: provenance in every row; a bad answer keeps its status."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from judgebias.artifacts import read_table, write_table
from judgebias.config import validate_params
from judgebias.data.synthetic import build_synthetic_dataset
from judgebias.judging import analysis_scores, caption_images, score_captions
from judgebias.studies.philautia import phi_matrix, score_tensor


@pytest.fixture
def small(tmp_path, params):
    config = validate_params(params)
    config["journal_dir"] = str(tmp_path / "journal")
    images = build_synthetic_dataset(tmp_path / "dataset", 8, 1)
    return config, images, tmp_path


def test_rows_carry_their_provenance(small):
    config, images, tmp_path = small
    captions = caption_images(config, "lumen-large", images)
    write_table(captions, tmp_path / "c.parquet", "captions")
    assert (read_table(tmp_path / "c.parquet", "captions")["status"] == "ok").all()
    scores = score_captions(config, "corvid-pro", "ref_based", images, captions)
    row = scores.iloc[0]
    assert row["model_id"] == "sim/corvid-pro" and row["prompt_id"] == "gveval_ref"
    assert row["revision"] == "1" and json.loads(row["sampling"])["temperature"] == 1.0
    assert row["raw_text"].endswith(f"${row['score_raw']}$.")
    assert row["logprobs_available"] and json.loads(row["logprobs"])
    assert 0 <= row["score_expected"] <= 100


def test_unparseable_answers_are_excluded_and_counted(small):
    config, images, tmp_path = small
    captions = caption_images(config, "lumen-large", images)
    config["models"]["corvid-pro"]["sampling"]["max_tokens"] = 4  # the answer is cut off
    scores = score_captions(config, "corvid-pro", "ref_free", images, captions)
    assert (scores["status"] == "unparseable").all()
    assert scores["score_raw"].isna().all() and scores["raw_text"].str.len().gt(0).all()
    write_table(scores, tmp_path / "s.parquet", "scores")
    long = analysis_scores([str(tmp_path / "s.parquet")], "expected")
    assert long["score"].isna().all()
    _, tensor = score_tensor(long, ["lumen-large", "corvid-pro"])
    result = phi_matrix(tensor)
    assert np.isnan(result.phi[0, 1]) and result.n_excluded[0, 1] == len(images)


def test_failed_captions_are_not_scored(small):
    config, images, _ = small
    captions = caption_images(config, "lumen-large", images)
    captions.loc[0, ["caption", "status"]] = [None, "failed"]
    scores = score_captions(config, "corvid-pro", "ref_free", images, captions)
    assert scores.loc[0, "status"] == "no_caption" and pd.isna(scores.loc[0, "request_key"])
    assert (scores["status"].iloc[1:] == "ok").all()


def test_agreement_command_on_an_external_score_file(tmp_path, capsys):
    """Scores produced by another tool (a CSV keyed by item_id) against the judgements."""
    from judgebias.cli import main
    from judgebias.data.judgements import build_synthetic_judgements, items

    ratings = build_synthetic_judgements(tmp_path / "judge", 30, 2)
    write_table(ratings, tmp_path / "judgements.parquet", "judgements")
    item_table = items(ratings)
    external = pd.DataFrame({"item_id": item_table["item_id"],
                             "my_metric": item_table["human_score_mean"]})
    external.loc[0, "my_metric"] = np.nan  # a metric that failed on one item
    external.to_csv(tmp_path / "metric.csv", index=False)
    assert main(["agreement", "--judgements", str(tmp_path / "judgements.parquet"),
                 "--scores", str(tmp_path / "metric.csv"), "--column", "my_metric"]) == 0
    out = capsys.readouterr().out
    assert "tau_b" in out and "tau_c" in out
    lines = [line.split() for line in out.splitlines() if line.startswith("synthetic")]
    assert {line[1] for line in lines} == {"train", "val", "test"}
    n_raters = int(ratings.groupby("item_id").size().iloc[0])
    assert f"0 of {len(ratings)} ratings had no score; {n_raters} scores were missing" in out
