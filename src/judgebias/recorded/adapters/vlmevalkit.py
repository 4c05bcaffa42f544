"""VLMEvalKit's judge files as a SCORES table.

VLMEvalKit (https://github.com/open-compass/VLMEvalKit) writes a model's predictions on a
benchmark to ``<model>_<dataset>.xlsx`` (``.tsv`` or ``.json`` with ``PRED_FORMAT``;
``vlmeval/smp/file.py``, ``get_pred_file_path``): the benchmark's columns without the
base64 ``image`` (``index``, ``question``, ``answer``, ``category``, ...) plus
``prediction`` (``vlmeval/inference.py``). A judge-scored benchmark then writes the same
table with the judge's columns beside it, named after the judge:
``<model>_<dataset>_<judge>.xlsx`` (MMVet: ``score`` and ``log``, where the log of a
judgement that never parsed ends "All 5 retries failed." and the score is a 0.0 that
was never given; ``vlmeval/dataset/utils/mmvet.py``), or ``_openai_result`` for
LLaVABench, whose judge compares GPT-4's reference ``gpt4_ans`` (shown FIRST) with the
``prediction`` and scores both 1-10 (``gpt4_score``, ``score``; ``-1`` for both when the
review did not parse; ``vlmeval/dataset/utils/llavabench.py``).

Mapping (one row per table row):

- ``item``: the ``index`` column (option ``item``);
- ``output``: ``prediction`` (option ``output``); ``output_id``: option, else the
  generator;
- ``generator``: option, else ``<model>`` of the file name (given ``dataset``);
- ``judge``: option, else ``<judge>`` of the file name (``_openai_result`` names none);
- ``score``: the ``score`` column (option ``score``), a number or an error naming the row;
- ``logprobs``: "" (VLMEvalKit keeps the judge's text, not its log-probs);
- ``source``: ``vlmevalkit:<file name>``; ``row``: the data row (from 1, header not
  counted; a spreadsheet's row 2).

Left out, and listed in ``attrs["skipped"]``: a judgement whose ``log`` says every retry
failed, a LLaVABench review scored ``-1`` and ``-1``, and a prediction that is
VLMEvalKit's failure message ("Failed to obtain answer..."): the model never answered.
``reference="<author>"`` adds the reference answer (``gpt4_ans``) as output
``reference`` with its ``gpt4_score`` (options ``reference_output``,
``reference_score``). The test files (tests/data/recorded/vlmevalkit/) were built from
this documented layout: VLMEvalKit needs a model and its datasets to run, so it cannot
run offline; they are tsv (``PRED_FORMAT=tsv``), and the tests write the xlsx.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from judgebias.data.rows import FIRST_ROW, csv_records, require_columns
from judgebias.recorded.adapters.common import ScoreRows, number, source_error
from judgebias.recorded.schema import RecordedTableError

TOOL = "vlmevalkit"
NOT_JUDGES = ("openai_result",)  # file-name suffixes that name no judge
FAILED_JUDGE = "retries failed"  # VLMEvalKit's log of a judgement that never parsed
FAILED_ANSWER = "Failed to obtain answer"  # vlmeval.constant.FAIL_MSG and its variants


def read(path: str | Path, *, dataset: str | None = None, generator: str | None = None,
         judge: str | None = None, item: str = "index", output: str = "prediction",
         score: str = "score", output_id: str | None = None, reference: str | None = None,
         reference_output: str = "gpt4_ans", reference_score: str = "gpt4_score",
         scale: tuple[float, float] | None = None) -> pd.DataFrame:
    """The judge scores in a VLMEvalKit judge file, as a SCORES table.

    Parameters
    ----------
    path
        ``<model>_<dataset>_<judge>.xlsx`` (or ``.tsv``, ``.csv``).
    dataset
        The benchmark's name as in the file name (``MMVet``), so that the model and the
        judge can be read from it; not needed when both ``generator`` and ``judge`` are
        given (model names hold underscores, so the name alone is ambiguous).
    generator, judge, item, output, score, output_id
        See the module docstring's mapping.
    reference, reference_output, reference_score
        The reference answer's author, text column and score column (LLaVABench).
    scale
        The judge's score range, checked when given (MMVet ``(0, 1)``, LLaVABench
        ``(1, 10)``).
    """
    named_model, named_judge = _names(path, dataset)
    generator = generator if generator is not None else named_model
    judge = judge if judge is not None else named_judge
    if generator is None:
        raise RecordedTableError(f"{path}: pass dataset= to read the model from the file "
                                 "name <model>_<dataset>_<judge>, or generator=")
    if judge is None:
        raise RecordedTableError(f"{path}: the file name names no judge: pass judge=")
    records, columns = _records(path)
    needed = [item, output, score]
    if reference is not None:
        needed += [reference_output, reference_score]
    try:
        require_columns(columns, needed, path)
    except ValueError as exc:
        raise RecordedTableError(str(exc)) from exc
    rows = ScoreRows(TOOL, path)
    own_id = output_id or generator or "output"
    for row, record in records:
        key = record[item].strip()
        if not key:
            raise source_error(path, row, item, "empty")
        answer = record[output]
        if answer.startswith(FAILED_ANSWER):
            rows.skip(row, f"the model gave no answer ({answer[:60]!r})")
            continue
        if FAILED_JUDGE in record.get("log", ""):
            rows.skip(row, "the judge's answer never parsed (log: every retry failed)")
            continue
        value = number(record[score], path, row, score)
        if reference_score in record and value == -1 and _is_minus_one(record[reference_score]):
            rows.skip(row, "the judge's review did not parse (both scores -1)")
            continue
        rows.add(row=row, item=key, output_id=own_id, generator=generator, output=answer,
                 judge=judge, score=value)
        if reference is not None:
            rows.add(row=row, item=key, output_id="reference", generator=reference,
                     output=record[reference_output], judge=judge,
                     score=number(record[reference_score], path, row, reference_score))
    return rows.table(scale)


def _names(path: str | Path, dataset: str | None) -> tuple[str | None, str | None]:
    """(model, judge) from ``<model>_<dataset>[_<judge>]``; (None, None) without
    `dataset`, and an error when the name does not hold it."""
    if dataset is None:
        return None, None
    stem = Path(path).stem
    model, marker, rest = stem.partition(f"_{dataset}")
    if not marker or not model or (rest and not rest.startswith("_")):
        raise RecordedTableError(f"{path}: the file name is not <model>_{dataset}"
                                 "[_<judge>] (pass generator= and judge=)")
    suffix = rest[1:]
    return model, (suffix if suffix and suffix not in NOT_JUDGES else None)


def _records(path: str | Path) -> tuple[list[tuple[int, dict[str, str]]], list[str]]:
    """(row, cells as text) of the file, rows from FIRST_ROW, and its header."""
    suffix = Path(path).suffix.lower()
    if suffix in (".tsv", ".csv"):
        try:
            records = csv_records(path, sep="\t" if suffix == ".tsv" else ",")
            header = list(pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",",
                                      nrows=0).columns)
        except ValueError as exc:
            raise RecordedTableError(str(exc)) from exc
        return records, header
    if suffix != ".xlsx":
        raise RecordedTableError(f"{path}: a VLMEvalKit judge file is .xlsx, .tsv or .csv")
    try:
        frame = pd.read_excel(path, dtype=str, keep_default_na=False)
    except ImportError as exc:
        raise RecordedTableError(f"{path}: reading .xlsx needs openpyxl (pip install "
                                 "openpyxl), or save the sheet as .tsv") from exc
    cells = [{str(name): str(value) for name, value in record.items()}
             for record in frame.fillna("").to_dict("records")]
    return list(enumerate(cells, start=FIRST_ROW)), [str(c) for c in frame.columns]


def _is_minus_one(text: str) -> bool:
    try:
        return float(text) == -1
    except ValueError:
        return False
