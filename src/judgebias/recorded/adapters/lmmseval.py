"""lmms-eval's ``--log_samples`` files as a SCORES table.

lmms-eval (https://github.com/EvolvingLMMs-Lab/lmms-eval) writes one JSON object per
document to ``<output_path>/<model>/<date>_samples_<task>.jsonl``
(``lmms_eval/loggers/evaluation_tracker.py``, ``save_results_samples``): ``doc_id``,
``target``, ``filtered_resps`` (the model's response after the task's filters), up to
0.3 also ``doc`` (the dataset row, images left out), ``arguments`` and ``resps``, and
one key per metric of the task holding what its ``process_results`` returned
(``lmms_eval/evaluator.py``). 0.2 wrote ``<task>.json``, one object whose ``logs`` are
those records; both are read. Since 0.7 a single response is written bare rather than
as a one-element list; either is read.

For an LLM-judged task the metric's value is the judge's record. Two shapes are known:

- a comparative review (llava_in_the_wild, llava_bench_coco, ...): ``{"question", "ans1"
  (the reference answer, shown FIRST), "ans2" (the model's, shown second), "review",
  "scores": [reference score, model score], "eval_model", ...}``, scored 1-10; a review
  that failed has ``scores`` ``[-1, -1]`` and ``eval_model`` "Failed Request", and the
  per-category metrics (``gpt_eval_llava_conv``, ...) hold ``[-999, -999]`` for
  documents of another category;
- a single score (mmvet: ``{"question_id", "pred_answer", "score", "eval_model", ...}``).
  lmms-eval's mmvet writes 0.0 when the judge never answered and logs it only, so such
  a failure cannot be told from a real 0.0 here.

Mapping (one row per document; a second with ``reference``):

- ``item``: ``doc_id`` (as text), or the ``doc`` field named by ``item_field`` (0.3 and
  earlier only: later versions leave ``doc`` out of the file);
- ``output``: ``filtered_resps`` (the one response); ``output_id``: option, else the
  ``generator``, else "output";
- ``generator``: option (the samples file does not name the model; its folder does, as
  lmms-eval sanitised it), "" if not given;
- ``judge``: option, else the record's ``eval_model`` (or ``judge_model``);
- ``score``: the metric's value when it is a number, else its ``score_key`` (default
  ``score``, then ``scores``); a ``[reference, model]`` pair gives the model's score;
- ``logprobs``: "" (lmms-eval keeps the judge's text, not its log-probs);
- ``source``: ``lmms-eval:<file name>``; ``row``: the line (the position in ``logs``
  for 0.2's file).

``reference="<author>"`` adds the reference answer (``ans1``) as output ``reference``
with that generator and the pair's first score: the judge scored both in one review.
The test files (tests/data/recorded/lmms_eval/) were built from this documented schema:
lmms-eval needs a model and its datasets from the Hugging Face hub, so it cannot run
offline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.data.rows import json_records, read_text
from judgebias.recorded.adapters.common import ScoreRows, number, source_error
from judgebias.recorded.schema import RecordedTableError

TOOL = "lmms-eval"
FAILED_MODEL = "Failed Request"  # llava_process_results' judge name when the call failed
OTHER_CATEGORY = -999  # llava-in-the-wild's score in a category metric of another category
JUDGE_FIELDS = ("eval_model", "judge_model")


def read(path: str | Path, *, metric: str, generator: str = "", judge: str | None = None,
         item_field: str | None = None, score_key: str | None = None,
         output_id: str | None = None, reference: str | None = None,
         scale: tuple[float, float] | None = None) -> pd.DataFrame:
    """The judge scores in an lmms-eval samples file, as a SCORES table.

    Parameters
    ----------
    path
        ``<date>_samples_<task>.jsonl`` (or 0.2's ``<task>.json``).
    metric
        The metric key holding the judge's score (``gpt_eval_llava_all``,
        ``gpt_eval_score``, ...).
    generator, judge, item_field, score_key, output_id, reference
        See the module docstring's mapping.
    scale
        The judge's score range, checked when given (llava_in_the_wild: ``(1, 10)``).
    """
    rows = ScoreRows(TOOL, path)
    own_id = output_id or generator or "output"
    for row, record in _records(path):
        if metric not in record:
            raise source_error(path, row, metric, "missing (this record's keys: "
                               f"{', '.join(sorted(record))})")
        judged = record[metric]
        item = _item(record, path, row, item_field)
        output = _response(record, path, row)
        raw, key = _raw_score(judged, path, row, metric, score_key)
        pair = raw if isinstance(raw, list) else None
        if pair is not None and (len(pair) != 2 or isinstance(pair[0], list)):
            raise source_error(path, row, key, f"{raw!r} is not a [reference, model] pair "
                               "of scores")
        if pair is not None and all(_equals(x, OTHER_CATEGORY) for x in pair):
            rows.skip(row, f"not judged under {metric} (another category's document)")
            continue
        failed = isinstance(judged, dict) and judged.get("eval_model") == FAILED_MODEL
        if failed or (pair is not None and all(_equals(x, -1) for x in pair)):
            rows.skip(row, f"the judge's review failed ({metric})")
            continue
        named = _judge(judged, judge, path, row, metric)
        score = number(pair[1] if pair is not None else raw, path, row, key)
        rows.add(row=row, item=item, output_id=own_id, generator=generator, output=output,
                 judge=named, score=score)
        if reference is not None:
            if pair is None:
                raise source_error(path, row, key, "reference= needs a [reference, model] "
                                   "pair of scores")
            answer = judged.get("ans1") if isinstance(judged, dict) else None
            rows.add(row=row, item=item, output_id="reference", generator=reference,
                     output=str(answer if answer is not None else record.get("target", "")),
                     judge=named,
                     score=number(pair[0], path, row, key))
    return rows.table(scale)


def _records(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(row, record) of a samples file: JSON lines, or 0.2's object with ``logs``."""
    text = read_text(path)
    if Path(path).suffix.lower() == ".json":
        try:
            logs = json.loads(text).get("logs")
        except (json.JSONDecodeError, AttributeError) as exc:
            raise RecordedTableError(f"{path}: not an lmms-eval samples file (a JSON "
                                     "object with 'logs')") from exc
        if not isinstance(logs, list):
            raise RecordedTableError(f"{path}: 'logs' is not a list of records")
        for row, record in enumerate(logs, start=1):
            if not isinstance(record, dict):
                raise source_error(path, row, "(row)", "not a JSON object")
        return list(enumerate(logs, start=1))
    try:
        return json_records(path, text, array=False)
    except ValueError as exc:
        raise RecordedTableError(str(exc)) from exc


def _item(record: dict[str, Any], path: str | Path, row: int, field: str | None) -> str:
    if field is None:
        if _blank(record.get("doc_id")):
            raise source_error(path, row, "doc_id", "missing")
        return str(record["doc_id"])
    doc = record.get("doc")
    if not isinstance(doc, dict):
        raise source_error(path, row, "doc", "missing (lmms-eval 0.4 and later leave the "
                           "doc out of the samples file: use doc_id, the default)")
    if _blank(doc.get(field)):
        raise source_error(path, row, f"doc.{field}", "missing")
    return str(doc[field])


def _response(record: dict[str, Any], path: str | Path, row: int) -> str:
    """The one filtered response: 0.7 writes it bare, earlier versions as ``[text]``
    (0.3: ``[[text]]`` in ``resps``, ``[text]`` in ``filtered_resps``)."""
    if "filtered_resps" not in record:
        raise source_error(path, row, "filtered_resps", "missing")
    response = record["filtered_resps"]
    while isinstance(response, list) and len(response) == 1:
        response = response[0]
    if not isinstance(response, str):
        raise source_error(path, row, "filtered_resps", "not one text response (a "
                           f"log-likelihood task's {str(response)[:40]} is no judged output)")
    return response


def _raw_score(judged: Any, path: str | Path, row: int, metric: str,
               score_key: str | None) -> tuple[Any, str]:
    """The metric's score as recorded (a number, text, or a pair) and the key it is at."""
    if not isinstance(judged, dict):
        if score_key is not None:
            raise source_error(path, row, metric, f"a {type(judged).__name__}, not a "
                               f"record with {score_key!r}")
        return judged, metric
    key = score_key or next((k for k in ("score", "scores") if k in judged), None)
    if key is None or key not in judged:
        raise source_error(path, row, metric, f"no {key or 'score'} among its keys "
                           f"({', '.join(sorted(judged))}): name it with score_key")
    return judged[key], f"{metric}.{key}"


def _judge(judged: Any, judge: str | None, path: str | Path, row: int, metric: str) -> str:
    if judge is not None:
        return judge
    if isinstance(judged, dict):
        for field in JUDGE_FIELDS:
            if isinstance(judged.get(field), str) and judged[field].strip():
                return str(judged[field])
    raise source_error(path, row, metric, "names no judge (no eval_model): pass judge=")


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _equals(value: Any, target: float) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == target
