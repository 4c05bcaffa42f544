"""Caption and score jobs: provenance in every row; a bad answer keeps its status."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from judgebias import prompts
from judgebias.config import validate_params
from judgebias.io.artifacts import ArtifactError, read_table, write_table
from judgebias.judging.answers import STATUS_OK, IntegerScore, parse_score
from judgebias.judging.tasks import FreeText, JudgeTask, answer_rows, build_requests
from judgebias.judging.values import numeric_values
from judgebias.models.base import ChatResponse
from judgebias.models.context import RunContext
from judgebias.models.panel import PanelModel
from judgebias.studies.philautia.data import build_synthetic_dataset
from judgebias.studies.philautia.jobs import caption_images, judge_task, score_captions
from judgebias.studies.philautia.measures import phi_matrix, score_tensor
from judgebias.studies.philautia.params import PhilautiaParams, Setting
from judgebias.studies.philautia.steps import analysis_scores
from judgebias.studies.philautia.tables import CAPTIONS, IMAGES, SCORES
from judgebias.studies.pomms.tables import JUDGEMENTS


@pytest.fixture
def small(tmp_path, params):
    """A validated config with its own journal, and 8 images written as an images table
    (the philautia jobs read artifact paths, as their rules give them)."""
    config = validate_params(params)
    config["journal_dir"] = str(tmp_path / "journal")
    images = build_synthetic_dataset(tmp_path / "dataset", 8, 1)
    images_path = tmp_path / "images.parquet"
    write_table(images, images_path, IMAGES)
    return config, images, str(images_path), tmp_path


def _setting(params, name: str) -> Setting:
    """Philautia setting `name` of `params` (what the score steps pass their job)."""
    return PhilautiaParams.from_params(params).settings[name]


def _caption(params, generator: str, images_path: str) -> pd.DataFrame:
    """The caption job as the caption step runs it (the run context, the prompt id)."""
    return caption_images(RunContext(params), generator, images_path,
                          prompt=PhilautiaParams.from_params(params).caption_prompt)


def _score(params, evaluator: str, setting: str, images_path: str,
           captions_path: str) -> pd.DataFrame:
    """The score job as the score step runs it."""
    return score_captions(RunContext(params), evaluator, setting, images_path, captions_path,
                          spec=_setting(params, setting))


def _captions(config, generator, images_path, tmp_path) -> str:
    path = tmp_path / f"captions-{generator}.parquet"
    write_table(_caption(config, generator, images_path), path, CAPTIONS)
    return str(path)


def test_rows_carry_their_provenance(small):
    config, images, images_path, tmp_path = small
    captions_path = _captions(config, "lumen-large", images_path, tmp_path)
    captions = read_table(captions_path, CAPTIONS)
    assert (captions["status"] == "ok").all() and captions["label"].str.len().gt(0).all()
    assert (captions["finish_reason"] == "stop").all() and captions["value"].isna().all()
    assert list(captions["image_id"]) == list(images["image_id"])
    scores = _score(config, "corvid-pro", "ref_based", images_path, captions_path)
    write_table(scores, tmp_path / "s.parquet", SCORES)  # a valid scores artifact
    assert (scores["evaluator"] == "corvid-pro").all() and (scores["setting"] == "ref_based").all()
    assert (scores["generator"] == "lumen-large").all()
    row = scores.iloc[0]
    assert row["model_id"] == "sim/corvid-pro" and row["prompt_id"] == "gveval_ref"
    assert row["revision"] == "1" and json.loads(row["sampling"])["temperature"] == 1.0
    assert row["raw_text"].endswith(f"${int(row['value'])}$.")
    assert row["logprobs_available"] and json.loads(row["logprobs"])
    assert 0 <= row["expected"] <= 100 and 0 < row["mass"] <= 1
    assert row["finish_reason"] == "stop" and row["probs"] == ""


def test_table_values_are_what_the_answer_kind_reads(small):
    """Every stored value, expected score and mass is parse_score of the stored raw answer
    and log-probs: the table can be re-derived from what it keeps."""
    config, _, images_path, tmp_path = small
    captions_path = _captions(config, "lumen-base", images_path, tmp_path)
    scores = _score(config, "lumen-base", "ref_free", images_path, captions_path)
    for row in scores.itertuples():
        answer = parse_score(row.raw_text, ChatResponse.tokens_from_json(row.logprobs),
                             row.finish_reason)
        assert (row.status, row.value) == (answer.status, answer.value)
        assert row.expected == pytest.approx(answer.expected)
        assert row.mass == pytest.approx(answer.mass)


def test_truncated_answers_are_excluded_and_counted(small):
    """An answer cut off by max_tokens is "truncated" (not a number), whatever it holds."""
    config, images, images_path, tmp_path = small
    captions_path = _captions(config, "lumen-large", images_path, tmp_path)
    config["panel"]["corvid-pro"]["sampling"]["max_tokens"] = 4  # the answer is cut off
    scores = _score(config, "corvid-pro", "ref_free", images_path, captions_path)
    assert (scores["status"] == "truncated").all() and (scores["finish_reason"] == "length").all()
    assert scores["value"].isna().all() and scores["raw_text"].str.len().gt(0).all()
    write_table(scores, tmp_path / "s.parquet", SCORES)
    long = analysis_scores([str(tmp_path / "s.parquet")], "expected")
    assert long["score"].isna().all()
    _, tensor = score_tensor(long, ["lumen-large", "corvid-pro"])
    result = phi_matrix(tensor)
    assert np.isnan(result.phi[0, 1]) and result.n_excluded[0, 1] == len(images)


def test_unparseable_answers_keep_their_status_and_text(small):
    """A completed answer without a score, a failed call, a score out of range and an
    answer cut off by max_tokens keep their status and never become numbers."""
    config, images, _, _ = small
    rows = images.assign(caption="A red circle.")
    task = judge_task(_setting(config, "ref_free"))
    requests, statuses = build_requests(RunContext(config), "corvid-pro", task, rows.iloc[:5])
    responses = [ChatResponse("A fine caption, I would say."),
                 ChatResponse("", status="failed", error="HTTP 500"),
                 ChatResponse("The final score is $85$."),
                 ChatResponse("The final score is $150$."),
                 ChatResponse("The final score is $85$.", finish_reason="length")]
    model = PanelModel.from_params(config, "corvid-pro")
    cols = pd.DataFrame(answer_rows(model, task, requests, statuses, responses, "v1"))
    assert list(cols["status"]) == ["unparseable", "failed", "ok", "out_of_range", "truncated"]
    assert cols["raw_text"][0] == "A fine caption, I would say."
    assert cols["error"][1] == "HTTP 500"
    assert cols["request_key"].notna().all()
    # `value` keeps what was read, for audit (out of range, cut off); only "ok" counts
    assert cols["value"].isna().tolist() == [True, True, False, False, False]
    assert cols["value"].tolist()[2:] == [85, 150, 85]
    assert cols["finish_reason"].tolist() == ["stop", "stop", "stop", "stop", "length"]
    usable = numeric_values(cols, "expected", 100.0)
    assert usable.isna().tolist() == [True, True, False, True, True] and usable[2] == 0.85


def test_failed_captions_are_not_scored(small):
    config, _, images_path, tmp_path = small
    captions = _caption(config, "lumen-large", images_path)
    captions.loc[0, ["label", "status"]] = [None, "failed"]
    write_table(captions, tmp_path / "c.parquet", CAPTIONS)
    scores = _score(config, "corvid-pro", "ref_free", images_path, str(tmp_path / "c.parquet"))
    assert scores.loc[0, "status"] == "no_caption" and pd.isna(scores.loc[0, "request_key"])
    assert scores.loc[0, "raw_text"] == "" and scores.loc[0, "finish_reason"] == ""
    assert (scores["status"].iloc[1:] == "ok").all()


def test_judge_requests_fill_the_prompt_from_the_items(small):
    """Reference-based requests carry the caption, the references (one per line) and the
    image; reference-free ones no references; items without an image are not asked."""
    config, images, _, _ = small
    rows = images.assign(caption="A red circle.")
    rows.loc[1, "image_path"] = None
    requests, statuses = build_requests(RunContext(config), "lumen-mini",
                                        judge_task(_setting(config, "ref_based")), rows)
    assert statuses[1] == "no_image" and requests[1] is None
    first = requests[0]
    assert first.prompt == prompts.render("gveval_ref", {"Caption": "A red circle.",
                                                          "Reference": images["references"][0]})
    assert all(ref.strip() in first.prompt for ref in images["references"][0])
    assert len(first.images) == 1 and first.system == ""
    free, _ = build_requests(RunContext(config), "lumen-mini",
                             judge_task(_setting(config, "ref_free")), rows)
    assert images["references"][0][0].strip() not in free[0].prompt


def test_caption_task_answers_are_free_text():
    assert FreeText().parse("  A red circle. \n").value == "A red circle."
    assert FreeText().parse("A red", finish_reason="length").status == "truncated"
    task = JudgeTask(prompt="caption_llava_ov", answer=FreeText())
    assert task.images == ("image_path",) and task.system is None


def test_expected_score_never_leaves_the_scale():
    """A digit-tokenised 100 whose first digit also had a "9" alternative: the old
    per-position estimator gave 180 and clipped it; the exact expectation is 100."""
    from judgebias.models.base import TokenLogprob as Tok

    prefix = "Accurate and concise. The final score is "
    tokens = [Tok(prefix, 0.0), Tok("$", 0.0), Tok("1", np.log(.9), (("1", np.log(.9)),
                                                                    ("9", np.log(.1)))),
              Tok("0", 0.0, (("0", 0.0),)), Tok("0", 0.0, (("0", 0.0),)),
              Tok("$", 0.0, (("$", 0.0),)), Tok(".", 0.0)]
    answer = parse_score(prefix + "$100$.", tokens)
    assert (answer.status, answer.value) == (STATUS_OK, 100)
    assert answer.expected == pytest.approx(100.0)
    assert IntegerScore().parse(prefix + "$100$.", tokens) == answer


def test_prompts_render_named_fields():
    assert prompts.fields("gveval_ref") == {"Caption", "Reference"}
    assert prompts.fields("gveval_ref_free") == {"Caption"}
    assert prompts.fields("caption_llava_ov") == frozenset()
    text = prompts.render("gveval_ref", {"Caption": " A dog. ", "Reference": [" one ", "two"]})
    # references one per line: our stated format, not G-VEval's scorer's "'one'; 'two"
    assert "A dog." in text and "Reference captions:\none\ntwo\n" in text
    assert "'one'; 'two" not in text
    assert "${{score}}$" in text  # the instruction to the judge stays literal
    assert "{{Caption}}" not in text and "{{Reference}}" not in text
    assert "${{score}}$" in prompts.render("gveval_ref_free", {"Caption": "A dog."})


@pytest.mark.parametrize(("prompt_id", "values", "message"), [
    ("gveval_ref_free", {"Caption": "x", "Reference": ["y"]}, "has no placeholder"),
    ("gveval_ref_free", {"caption": "x"}, "has no placeholder"),
    ("gveval_ref", {"Caption": "x"}, r"needs \['Reference'\]"),
    ("gveval_ref_free", {}, r"needs \['Caption'\]"),
    ("gveval_ref", {"Caption": "x", "Reference": []}, "empty list"),
    ("caption_llava_ov", {"score": "1"}, "has no placeholder"),
])
def test_prompts_render_rejects_unknown_and_missing_fields(prompt_id, values, message):
    with pytest.raises(ValueError, match=message):
        prompts.render(prompt_id, values)


def test_prompts_render_rejects_unknown_prompt_ids():
    with pytest.raises(KeyError, match="unknown prompt id"):
        prompts.render("gveval_typo", {})


def test_artifacts_are_checked_against_the_study_schema(small):
    config, _, images_path, tmp_path = small
    captions = _caption(config, "lumen-large", images_path)
    with pytest.raises(ArtifactError, match="scores table columns differ"):
        write_table(captions, tmp_path / "x.parquet", SCORES)
    with pytest.raises(ArtifactError, match="does not match the captions schema"):
        from judgebias.io.artifacts import read_columns

        read_columns(images_path, CAPTIONS, ["image_id"])


def test_agreement_command_on_an_external_score_file(tmp_path, capsys):
    """Scores produced by another tool (a CSV keyed by item_id) against the judgements."""
    from judgebias.cli import main
    from judgebias.studies.pomms.data import build_synthetic_judgements, items

    ratings = build_synthetic_judgements(tmp_path / "judge", 30, 2)
    write_table(ratings, tmp_path / "judgements.parquet", JUDGEMENTS)
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


def test_agreement_command_on_a_judge_items_output(small, capsys):
    """A judge-items table passed to `agreement`: only answers with status "ok" score."""
    from judgebias.cli import main
    from judgebias.studies.pomms.data import build_synthetic_judgements
    from judgebias.studies.pomms.jobs import score_items
    from judgebias.studies.pomms.tables import ITEM_SCORES

    config, _, _, tmp_path = small
    ratings = build_synthetic_judgements(tmp_path / "judge", 20, 2, n_raters=1)
    write_table(ratings, tmp_path / "judgements.parquet", JUDGEMENTS)
    scores = score_items(RunContext(config), "corvid-pro", "ref_free",
                         str(tmp_path / "judgements.parquet"), spec=_setting(config, "ref_free"))
    # what answer_rows writes for "The final score is $150$." (see the test above)
    scores.loc[0, ["status", "value", "expected", "mass"]] = ["out_of_range", 150.0, None, None]
    write_table(scores, tmp_path / "items.parquet", ITEM_SCORES)
    assert main(["agreement", "--judgements", str(tmp_path / "judgements.parquet"),
                 "--scores", str(tmp_path / "items.parquet"), "--column", "value"]) == 0
    assert f"0 of {len(ratings)} ratings had no score; 1 scores were missing" in \
        capsys.readouterr().out
