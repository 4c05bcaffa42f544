"""Recorded judgements (issue 44 item 3): the two table kinds and their checks, each
tool's adapter on a file in that tool's own format, and convert -> read_recorded.

inspect_ai's logs are written by inspect_ai itself (a model-graded scorer against the
offline mock model, in a subprocess so its logging set-up stays out of this worker);
lmms-eval and VLMEvalKit need models and hub datasets to run, so their files under
tests/data/recorded/ were built from their documented layouts (each adapter's docstring
names the source code the layout was read from).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgebias.recorded.adapters import inspectlog, lmmseval, vlmevalkit
from judgebias.recorded.convert import TOOLS, convert, read_tool
from judgebias.recorded.schema import (
    PAIRWISE,
    SCORES,
    RecordedTableError,
    validate_pairwise,
    validate_scores,
)
from judgebias.recorded.tables import read_recorded, write_recorded

DATA = Path(__file__).resolve().parents[1] / "data" / "recorded"
LLAVA_V07 = DATA / "lmms_eval" / "v0.7" / "20250101_120000_samples_llava_in_the_wild.jsonl"
LLAVA_V03 = DATA / "lmms_eval" / "v0.3" / "20240615_093000_samples_llava_in_the_wild.jsonl"
MMVET_LMMS = DATA / "lmms_eval" / "v0.7" / "20250101_120000_samples_mmvet.jsonl"
MMVET_VLM = DATA / "vlmevalkit" / "llava_v1.5_7b_MMVet_gpt-4-turbo.tsv"
LLAVA_VLM = DATA / "vlmevalkit" / "llava_v1.5_7b_LLaVABench_openai_result.tsv"


# ---- hand-made tables: every check of the schema ----------------------------------------

def scores_table(n: int = 3, **columns: list) -> pd.DataFrame:
    table = pd.DataFrame({
        "item": [f"img{i}" for i in range(n)], "output_id": ["a"] * n,
        "generator": ["llava"] * n, "output": ["a caption"] * n, "judge": ["GPT-4o"] * n,
        "score": [float(i) for i in range(n)], "logprobs": [""] * n,
        "source": ["manual:scores.csv"] * n, "row": list(range(1, n + 1)),
    })
    for name, values in columns.items():
        table[name] = values
    return table


def pairwise_table(n: int = 3, **columns: list) -> pd.DataFrame:
    table = pd.DataFrame({
        "item": [f"img{i}" for i in range(n)], "judge": ["GPT-4o"] * n,
        "first": ["a"] * n, "second": ["b"] * n, "verdict": ["first", "second", "tie"][:n],
        "probability": [0.9, 0.2, math.nan][:n], "source": ["manual:pairs.csv"] * n,
        "row": list(range(1, n + 1)),
    })
    for name, values in columns.items():
        table[name] = values
    return table


def test_valid_tables_come_back_typed_in_schema_order() -> None:
    scores = validate_scores(scores_table().iloc[:, ::-1], "s.csv", scale=(0, 5))
    assert list(scores.columns) == list(SCORES.columns)
    assert scores["score"].dtype == np.float64 and scores["row"].dtype == np.int64
    assert pd.api.types.is_string_dtype(scores["item"])
    pairs = validate_pairwise(pairwise_table(), "p.csv")
    assert list(pairs.columns) == list(PAIRWISE.columns)
    assert math.isnan(pairs["probability"].iloc[2])


@pytest.mark.parametrize("drop", ["item", "score", "judge", "output_id"])
def test_a_missing_column_is_named(drop: str) -> None:
    with pytest.raises(RecordedTableError, match=rf"s\.csv: missing column\(s\) \['{drop}'\]"):
        validate_scores(scores_table().drop(columns=drop), "s.csv")


def test_a_table_written_by_hand_may_leave_out_the_optional_columns() -> None:
    """Who wrote an output, its text, log-probs and probability are unknown; the source is
    the file and each row its own data row."""
    scores = validate_scores(scores_table().drop(columns=["generator", "output", "logprobs",
                                                          "source", "row"]), "s.csv")
    assert (scores["generator"] == "").all() and (scores["source"] == "s.csv").all()
    assert scores["row"].tolist() == list(range(1, len(scores) + 1))
    pairs = validate_pairwise(pairwise_table().drop(columns=["probability", "source", "row"]),
                              "p.csv")
    assert pairs["probability"].isna().all() and pairs["row"].iloc[0] == 1


def test_an_unexpected_column_is_named() -> None:
    with pytest.raises(RecordedTableError, match=r"s\.csv: unexpected column\(s\) \['scroe'\]"):
        validate_scores(scores_table(scroe=[1, 2, 3]), "s.csv")


@pytest.mark.parametrize("column", ["item", "output_id", "judge"])
def test_an_empty_id_is_named_by_row_and_column(column: str) -> None:
    table = scores_table()
    table.loc[1, column] = " "
    with pytest.raises(RecordedTableError, match=rf"s\.csv: row 2 .*: {column}: empty id"):
        validate_scores(table, "s.csv")


@pytest.mark.parametrize("column", ["item", "judge", "first", "second"])
def test_an_empty_pairwise_id_is_named(column: str) -> None:
    table = pairwise_table()
    table.loc[2, column] = ""
    with pytest.raises(RecordedTableError, match=rf"p\.csv: row 3 .*: {column}: empty id"):
        validate_pairwise(table, "p.csv")


def test_an_error_names_the_source_row_too() -> None:
    table = scores_table(row=[4, 9, 12])
    table.loc[1, "item"] = ""
    with pytest.raises(RecordedTableError) as caught:
        validate_scores(table, "s.csv")
    assert str(caught.value) == ("s.csv: row 2 (source manual:scores.csv row 9): item: "
                                 "empty id")


def test_a_repeated_judgement_is_an_error() -> None:
    table = scores_table(item=["img0", "img1", "img0"])
    with pytest.raises(RecordedTableError, match=r"s\.csv: row 3: \(item, output_id, judge\) "
                                                 r"\('img0', 'a', 'GPT-4o'\) is given twice"):
        validate_scores(table, "s.csv")
    # another output of the same item, or another judge, is another judgement
    validate_scores(scores_table(item=["img0", "img1", "img0"], output_id=["a", "a", "b"]),
                    "s.csv")


def test_a_repeated_pair_is_an_error_but_the_reversed_order_is_not() -> None:
    with pytest.raises(RecordedTableError, match=r"row 2: \(item, first, second, judge\)"):
        validate_pairwise(pairwise_table(item=["x", "x", "y"]), "p.csv")
    validate_pairwise(pairwise_table(item=["x", "x", "y"], first=["a", "b", "a"],
                                     second=["b", "a", "b"]), "p.csv")


def test_a_score_outside_the_scale_is_named() -> None:
    table = scores_table(score=[1.0, 11.0, 5.0])
    with pytest.raises(RecordedTableError, match=r"row 2 .*: score: 11 is outside the scale "
                                                 r"\[1, 10\]"):
        validate_scores(table, "s.csv", scale=(1, 10))
    validate_scores(table, "s.csv")  # no scale given: no range to check


@pytest.mark.parametrize("value, message", [
    (math.nan, "missing or not a finite number"), ("seven", "'seven' is not a number"),
    (True, "True is not a number"), (math.inf, "missing or not a finite number")])
def test_a_score_that_is_not_a_number_is_named(value: object, message: str) -> None:
    table = scores_table().astype({"score": object})
    table.loc[2, "score"] = value
    with pytest.raises(RecordedTableError, match=rf"row 3 .*: score: {message}"):
        validate_scores(table, "s.csv")


@pytest.mark.parametrize("verdict", ["First", "A", ""])
def test_a_verdict_outside_the_set_is_named(verdict: str) -> None:
    table = pairwise_table(verdict=["first", verdict, "tie"])
    with pytest.raises(RecordedTableError, match=r"row 2 .*: verdict: .* is not one of "
                                                 "first, second, tie"):
        validate_pairwise(table, "p.csv")


@pytest.mark.parametrize("probability", [1.5, -0.1])
def test_a_probability_outside_0_1_is_named(probability: float) -> None:
    table = pairwise_table(probability=[0.5, 0.5, probability])
    with pytest.raises(RecordedTableError, match=r"row 3 .*: probability: .* is not a "
                                                 r"probability in \[0, 1\]"):
        validate_pairwise(table, "p.csv")


def test_a_pair_of_one_output_is_an_error() -> None:
    with pytest.raises(RecordedTableError, match=r"row 1 .*: second: the same output"):
        validate_pairwise(pairwise_table(second=["a", "b", "b"]), "p.csv")


@pytest.mark.parametrize("column", ["judge", "generator"])
def test_one_name_under_two_spellings_names_both_and_a_row_of_each(column: str) -> None:
    table = scores_table(n=4, **{column: ["GPT-4o", "GPT-4o", "gpt4o", "GPT-4o"]})
    with pytest.raises(RecordedTableError) as caught:
        validate_scores(table, "s.csv")
    message = str(caught.value)
    assert message.startswith(f"s.csv: {column}: one name under two spellings, 'GPT-4o' "
                              "(row 1 (source manual:scores.csv row 1)) and 'gpt4o' (row 3")
    validate_scores(scores_table(n=2, **{column: ["GPT-4o", "GPT-4o-mini"]}), "s.csv")


def test_a_pairwise_judge_under_two_spellings_is_an_error() -> None:
    with pytest.raises(RecordedTableError, match=r"judge: one name under two spellings, "
                                                 r"'GPT-4o' .* and 'gpt_4o'"):
        validate_pairwise(pairwise_table(judge=["GPT-4o", "gpt_4o", "GPT-4o"]), "p.csv")


def test_malformed_logprobs_and_row_numbers_are_named() -> None:
    good = json.dumps([["7", -0.1, [["7", -0.1], ["8", -2.5]]]])
    validate_scores(scores_table(logprobs=[good, "", good]), "s.csv")
    with pytest.raises(RecordedTableError, match=r"row 2 .*: logprobs: not a JSON list"):
        validate_scores(scores_table(logprobs=[good, '[["7", "x", []]]', ""]), "s.csv")
    with pytest.raises(RecordedTableError, match=r"row 1: row: 0 is not a row number"):
        validate_scores(scores_table(row=[0, 1, 2]), "s.csv")


# ---- reading and writing the three formats ----------------------------------------------

@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_write_then_read_gives_the_same_table(tmp_path: Path, suffix: str) -> None:
    scores = scores_table(score=[0.1 + 0.2, 1 / 3, 7.0],
                          logprobs=[json.dumps([["7", -0.25, [["7", -0.25]]]]), "", ""])
    path = tmp_path / f"scores{suffix}"
    assert write_recorded(scores, path, "scores") == 3
    pd.testing.assert_frame_equal(read_recorded(path, "scores"),
                                  validate_scores(scores, "x"))
    pairs = pairwise_table()
    write_recorded(pairs, tmp_path / f"pairs{suffix}", PAIRWISE)
    pd.testing.assert_frame_equal(read_recorded(tmp_path / f"pairs{suffix}", "pairwise"),
                                  validate_pairwise(pairs, "x"))


def test_read_recorded_names_the_file_and_row(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    scores_table(score=["1", "2", "lots"]).to_csv(path, index=False)
    with pytest.raises(RecordedTableError, match=r"mine\.csv: row 3 .*: score: 'lots' is not"):
        read_recorded(path, "scores")
    lines = tmp_path / "mine.jsonl"
    lines.write_text('{"item": "x"}\nnot json\n')
    with pytest.raises(ValueError, match=r"mine\.jsonl: row 2: \(row\): not JSON"):
        read_recorded(lines, "scores")
    with pytest.raises(RecordedTableError, match=r"mine\.txt: a recorded table is"):
        read_recorded(tmp_path / "mine.txt", "scores")
    empty = tmp_path / "empty.csv"
    empty.write_text(",".join(SCORES.columns) + "\n")
    assert read_recorded(empty, "scores").empty
    with pytest.raises(RecordedTableError, match=r"mine\.csv: row 2 .*: score: 12 is outside"):
        path.write_text(scores_table(score=[1, 12, 3]).to_csv(index=False))
        read_recorded(path, "scores", scale=(0, 10))


# ---- lmms-eval ----------------------------------------------------------------------------

def test_lmms_eval_llava_reviews() -> None:
    table = lmmseval.read(LLAVA_V07, metric="gpt_eval_llava_all", generator="llava-v1.5-7b",
                          scale=(1, 10))
    assert table[["item", "output_id", "generator", "judge", "score", "row"]].to_dict(
        "records") == [
        dict(item="0", output_id="llava-v1.5-7b", generator="llava-v1.5-7b",
             judge="gpt-4-0613", score=7.0, row=1),
        dict(item="1", output_id="llava-v1.5-7b", generator="llava-v1.5-7b",
             judge="gpt-4-0613", score=6.0, row=2)]
    assert table["output"].tolist() == ["It is Luigi's Trattoria.",
                                        "A dog jumps for a frisbee in a park."]
    assert set(table["source"]) == {f"lmms-eval:{LLAVA_V07.name}"}
    assert table.attrs["skipped"] == ["row 3: the judge's review failed (gpt_eval_llava_all)"]


def test_lmms_eval_reference_answer_and_category_metric() -> None:
    both = lmmseval.read(LLAVA_V07, metric="gpt_eval_llava_all", generator="llava",
                         reference="gpt-4")
    reference = both[both["output_id"] == "reference"]
    assert reference["score"].tolist() == [8.0, 9.0]
    assert reference["generator"].tolist() == ["gpt-4", "gpt-4"]
    assert reference["output"].iloc[0] == "The restaurant is called Luigi's Trattoria."
    detail = lmmseval.read(LLAVA_V07, metric="gpt_eval_llava_detail", judge="GPT-4")
    assert detail["item"].tolist() == ["1"] and detail["judge"].tolist() == ["GPT-4"]
    assert detail["output_id"].tolist() == ["output"]
    assert len(detail.attrs["skipped"]) == 2


def test_lmms_eval_0_3_and_0_2_files(tmp_path: Path) -> None:
    v03 = lmmseval.read(LLAVA_V03, metric="gpt_eval_llava_all", item_field="question_id")
    assert v03["item"].tolist() == ["11", "12"] and v03["score"].tolist() == [7.0, 6.0]
    newer = lmmseval.read(LLAVA_V07, metric="gpt_eval_llava_all")
    older = lmmseval.read(LLAVA_V03, metric="gpt_eval_llava_all")
    columns = ["item", "output", "judge", "score", "row"]
    pd.testing.assert_frame_equal(newer[columns], older[columns])
    records = [json.loads(line) for line in LLAVA_V03.read_text().splitlines()]
    v02 = tmp_path / "llava_in_the_wild.json"
    v02.write_text(json.dumps({"args": {}, "model_configs": {}, "logs": records,
                               "time": "0615_0930"}, indent=4))
    pd.testing.assert_frame_equal(lmmseval.read(v02, metric="gpt_eval_llava_all")[columns],
                                  older[columns])
    with pytest.raises(RecordedTableError, match=r"row 1: doc: missing \(lmms-eval 0\.4"):
        lmmseval.read(LLAVA_V07, metric="gpt_eval_llava_all", item_field="question_id")


def test_lmms_eval_single_scores() -> None:
    table = lmmseval.read(MMVET_LMMS, metric="gpt_eval_score", generator="qwen2-vl",
                          scale=(0, 1))
    assert table["score"].tolist() == [1.0, 0.0, 0.9]
    assert table["judge"].tolist() == ["gpt-4-0613"] * 3
    assert table["output"].tolist()[0] == "x = -1 or x = -5"


def edited(tmp_path: Path, source: Path, line: int, edit) -> Path:
    """`source` copied with its `line`-th (from 1) line changed by `edit`."""
    lines = source.read_text().splitlines()
    lines[line - 1] = edit(lines[line - 1])
    path = tmp_path / source.name
    path.write_text("\n".join(lines) + "\n")
    return path


def set_field(*keys: str, value: object):
    def edit(line: str) -> str:
        record = json.loads(line)
        target = record
        for key in keys[:-1]:
            target = target[key]
        if value is KeyError:
            del target[keys[-1]]
        else:
            target[keys[-1]] = value
        return json.dumps(record)
    return edit


@pytest.mark.parametrize("edit, message", [
    (lambda line: line[:-5], r"row 2: \(row\): not JSON"),
    (set_field("gpt_eval_llava_all", value=KeyError), r"row 2: gpt_eval_llava_all: missing"),
    (set_field("doc_id", value=KeyError), r"row 2: doc_id: missing"),
    (set_field("filtered_resps", value=KeyError), r"row 2: filtered_resps: missing"),
    (set_field("gpt_eval_llava_all", "scores", value=[9, "six"]),
     r"row 2: gpt_eval_llava_all\.scores: 'six' is not a number"),
    (set_field("gpt_eval_llava_all", "scores", value=[9, 6, 1]),
     r"row 2: gpt_eval_llava_all\.scores: .* is not a \[reference, model\] pair"),
    (set_field("gpt_eval_llava_all", "eval_model", value=KeyError),
     r"row 2: gpt_eval_llava_all: names no judge"),
])
def test_lmms_eval_malformed_row(tmp_path: Path, edit, message: str) -> None:
    path = edited(tmp_path, LLAVA_V07, 2, edit)
    with pytest.raises(RecordedTableError, match=rf"{path.name}: {message}"):
        lmmseval.read(path, metric="gpt_eval_llava_all")


def test_lmms_eval_score_that_is_not_a_number(tmp_path: Path) -> None:
    path = edited(tmp_path, MMVET_LMMS, 3, set_field("gpt_eval_score", "score",
                                                     value="The answer is right."))
    with pytest.raises(RecordedTableError, match=r"row 3: gpt_eval_score\.score: 'The answer"):
        lmmseval.read(path, metric="gpt_eval_score")


# ---- VLMEvalKit ---------------------------------------------------------------------------

def test_vlmevalkit_mmvet_names_from_the_file() -> None:
    table = vlmevalkit.read(MMVET_VLM, dataset="MMVet", scale=(0, 1))
    assert set(table["generator"]) == {"llava_v1.5_7b"}
    assert set(table["judge"]) == {"gpt-4-turbo"}
    assert table["item"].tolist() == ["0", "1", "2"]
    assert table["score"].tolist() == [1.0, 0.0, 0.9]
    assert table["row"].tolist() == [1, 2, 3]
    assert table.attrs["skipped"] == ["row 4: the judge's answer never parsed (log: every "
                                      "retry failed)"]


def test_vlmevalkit_llavabench_needs_the_judge_named() -> None:
    with pytest.raises(RecordedTableError, match="names no judge: pass judge="):
        vlmevalkit.read(LLAVA_VLM, dataset="LLaVABench")
    table = vlmevalkit.read(LLAVA_VLM, dataset="LLaVABench", judge="gpt-4-turbo",
                            reference="gpt-4", scale=(1, 10))
    assert table[["output_id", "score"]].values.tolist() == [
        ["llava_v1.5_7b", 7.0], ["reference", 8.0], ["llava_v1.5_7b", 6.0], ["reference", 9.0]]
    assert table.attrs["skipped"] == ["row 3: the judge's review did not parse (both scores -1)"]
    with pytest.raises(RecordedTableError, match="pass dataset="):
        vlmevalkit.read(LLAVA_VLM, judge="gpt-4-turbo")
    with pytest.raises(RecordedTableError, match=r"is not <model>_MMVet"):
        vlmevalkit.read(LLAVA_VLM, dataset="MMVet")


def test_vlmevalkit_xlsx(tmp_path: Path) -> None:
    pytest.importorskip("openpyxl")
    path = tmp_path / MMVET_VLM.with_suffix(".xlsx").name
    pd.read_csv(MMVET_VLM, sep="\t").to_excel(path, index=False)
    from_xlsx = vlmevalkit.read(path, dataset="MMVet")
    from_tsv = vlmevalkit.read(MMVET_VLM, dataset="MMVet")
    pd.testing.assert_frame_equal(from_xlsx.drop(columns="source"),
                                  from_tsv.drop(columns="source"))


def test_vlmevalkit_malformed_rows(tmp_path: Path) -> None:
    frame = pd.read_csv(MMVET_VLM, sep="\t", dtype=str, keep_default_na=False)
    frame.loc[1, "score"] = "Correct"
    path = tmp_path / MMVET_VLM.name
    frame.to_csv(path, sep="\t", index=False)
    with pytest.raises(RecordedTableError, match=rf"{path.name}: row 2: score: 'Correct' is "
                                                 "not a number"):
        vlmevalkit.read(path, dataset="MMVet")
    frame.drop(columns="prediction").to_csv(path, sep="\t", index=False)
    with pytest.raises(RecordedTableError, match=r"missing column\(s\) \['prediction'\]"):
        vlmevalkit.read(path, dataset="MMVet")
    path.write_text('"index"\t"prediction"\t"score"\n"0"\t"a"\t"1"\n"1"\t"b"\t"1"\t"x"\n')
    with pytest.raises(RecordedTableError, match=rf"{path.name}: row 2: not valid CSV"):
        vlmevalkit.read(path, dataset="MMVet")


# ---- inspect_ai ---------------------------------------------------------------------------

# Run by a subprocess: a real inspect_ai eval with model_graded_qa, the evaluated model and
# the grader both inspect_ai's offline mock (mockllm). Each mock answer carries its usage,
# as otherwise mockllm counts tokens with a tokenizer it would download.
INSPECT_RUN = textwrap.dedent("""
    import sys
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import (Logprob, Logprobs, ModelOutput, ModelUsage, TopLogprob,
                                  get_model)
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    def output(model, text, logprobs=None):
        out = ModelOutput.from_content(model=model, content=text)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        out.choices[0].logprobs = logprobs
        return out

    ANSWERS = {"What is in the picture?": "A cat on a mat.",
               "What colour is the sky?": "Green.", "How many dogs?": "Two."}

    def answer(input, tools, tool_choice, config):
        return output("mockllm/model", ANSWERS[input[-1].text])

    def grader(input, tools, tool_choice, config):
        prompt = input[-1].text
        if "A cat on a mat." in prompt:
            grade = Logprob(token="C", logprob=-0.1, top_logprobs=[
                TopLogprob(token="C", logprob=-0.1), TopLogprob(token="I", logprob=-2.4)])
            return output("mockllm/judge", "Matches the criterion.\\nGRADE: C",
                          Logprobs(content=[grade]))
        if "Green." in prompt:
            return output("mockllm/judge", "Half right.\\nGRADE: P")
        return output("mockllm/judge", "I cannot tell.")  # no grade: unscored

    def wordy(input, tools, tool_choice, config):
        return output("mockllm/wordy", "GRADE: excellent")

    samples = [Sample(id="img-1", input="What is in the picture?", target="a cat"),
               Sample(id=2, input="What colour is the sky?", target="blue"),
               Sample(id="img-3", input="How many dogs?", target="two dogs")]
    graded = Task(name="graded", dataset=samples, solver=generate(), scorer=model_graded_qa(
        partial_credit=True, model=get_model("mockllm/judge", custom_outputs=grader)))
    malformed = Task(name="malformed", dataset=samples[:2], solver=generate(),
                     scorer=model_graded_qa(grade_pattern=r"GRADE: (\\w+)", model=get_model(
                         "mockllm/wordy", custom_outputs=wordy)))
    logs = eval([graded, malformed], model=get_model("mockllm/model", custom_outputs=answer),
                log_dir=sys.argv[1], display="none")
    for log in logs:
        assert log.status == "success", log.error
        print(log.eval.task, log.location)
""")


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two logs inspect_ai wrote, by task name."""
    pytest.importorskip("inspect_ai")
    folder = tmp_path_factory.mktemp("inspect_logs")
    done = subprocess.run([sys.executable, "-c", INSPECT_RUN, str(folder)],
                          capture_output=True, text=True, timeout=300, cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    logs = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    return {task: Path(location) for task, location in logs.items()}


@pytest.mark.slow  # inspect_ai's eval in a subprocess: 10-16 s, once
def test_inspect_model_graded_scores(inspect_logs: dict[str, Path]) -> None:
    table = inspectlog.read(inspect_logs["graded"], scale=(0, 1))
    by_item = table.set_index("item")
    assert sorted(by_item.index) == ["2", "img-1"]
    assert by_item.loc["img-1", "score"] == 1.0 and by_item.loc["2", "score"] == 0.5
    assert set(table["judge"]) == {"mockllm/judge"}
    assert set(table["generator"]) == {"mockllm/model"} == set(table["output_id"])
    assert by_item.loc["img-1", "output"] == "A cat on a mat."
    assert json.loads(by_item.loc["img-1", "logprobs"]) == [
        ["C", -0.1, [["C", -0.1], ["I", -2.4]]]]
    assert by_item.loc["2", "logprobs"] == ""
    assert set(table["source"]) == {f"inspect_ai:{inspect_logs['graded'].name}"}
    [skipped] = table.attrs["skipped"]
    assert "model_graded_qa left the sample unscored (grader_failed)" in skipped
    assert inspectlog.read(inspect_logs["graded"], judge="mock-judge",
                           scorer="model_graded_qa")["judge"].unique().tolist() == ["mock-judge"]


@pytest.mark.slow  # inspect_ai's eval in a subprocess: 10-16 s, once
def test_inspect_a_grade_that_is_not_a_number(inspect_logs: dict[str, Path]) -> None:
    with pytest.raises(RecordedTableError, match=r"row 1: scores\.model_graded_qa: 'excellent' "
                                                 "is not a number"):
        inspectlog.read(inspect_logs["malformed"])
    with pytest.raises(RecordedTableError, match=r"row 1: scores: no score from 'other'"):
        inspectlog.read(inspect_logs["graded"], scorer="other")


def test_inspect_not_a_log(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    path = tmp_path / "broken.eval"
    path.write_bytes(b"not a zip")
    with pytest.raises(RecordedTableError, match=r"broken\.eval: not an inspect_ai eval log"):
        inspectlog.read(path)


# ---- convert -> read_recorded ---------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_convert_round_trip(tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"llava{suffix}"
    options = dict(metric="gpt_eval_llava_all", generator="llava", reference="gpt-4")
    assert convert("lmms-eval", LLAVA_V07, out, **options) == 4
    pd.testing.assert_frame_equal(read_recorded(out, "scores"),
                                  read_tool("lmms-eval", LLAVA_V07, **options))
    out = tmp_path / f"mmvet{suffix}"
    assert convert("vlmevalkit", MMVET_VLM, out, dataset="MMVet") == 3
    pd.testing.assert_frame_equal(read_recorded(out, "scores"),
                                  vlmevalkit.read(MMVET_VLM, dataset="MMVet"))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.slow  # inspect_ai's eval in a subprocess: 10-16 s, once
def test_convert_inspect_round_trip(tmp_path: Path, inspect_logs: dict[str, Path]) -> None:
    out = tmp_path / "graded.parquet"
    assert convert("inspect_ai", inspect_logs["graded"], out) == 2
    pd.testing.assert_frame_equal(read_recorded(out, "scores"),
                                  inspectlog.read(inspect_logs["graded"]))


def test_convert_names_unknown_tools_and_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown tool 'lmms' .*lmms-eval, vlmevalkit"):
        convert("lmms", LLAVA_V07, tmp_path / "x.csv")
    with pytest.raises(ValueError, match=r"lmms-eval: unknown option.*metrc"):
        convert("lmms-eval", LLAVA_V07, tmp_path / "x.csv", metrc="gpt_eval_llava_all")
    with pytest.raises(RecordedTableError, match=r"x\.xlsx: a recorded table is"):
        convert("lmms-eval", LLAVA_V07, tmp_path / "x.xlsx", metric="gpt_eval_llava_all")
    assert "scorer" in TOOLS["inspect_ai"].options()
