"""inspect_ai's eval logs as a SCORES table, read through inspect_ai's own log API.

inspect_ai (https://inspect.aisi.org.uk) stores an evaluation in a ``.eval`` (zip) or
``.json`` log whose layout is inspect_ai's business: this adapter reads it only with
``inspect_ai.log.read_eval_log`` and the objects that returns (``EvalLog``,
``EvalSample``, ``Score``, the sample's events), so a new log format is inspect_ai's to
read, not ours. inspect_ai is imported inside :func:`read` (a test extra, not a
dependency of judgebias).

Mapping (one row per sample and epoch, in the log's order):

- ``item``: the sample's ``id`` (as text);
- ``output``: the sample's ``output.completion``; ``generator``: option, else the
  evaluated model (``log.eval.model``); ``output_id``: option, else the generator, with
  `` epoch <n>`` added when the log holds several epochs;
- ``score``: the chosen scorer's ``Score.value`` (option ``scorer``; needed when the
  log has several), the grades C, P, I and N as inspect_ai counts them (1, 0.5, 0, 0),
  a number as it is; a dict value needs ``key``; anything else is an error naming the
  row. A sample the scorer left unscored (``Score.unscored``: NaN, a grader whose answer
  held no grade) or that errored is left out and listed in ``attrs["skipped"]``;
- ``judge``: option, else the model the scorer called (the model events inside the
  scorer's span), else the scorer's ``model`` option;
- ``logprobs``: the grader's token log-probs from its last model event, where the
  provider gave them, in the journal's JSON; "" otherwise;
- ``source``: ``inspect_ai:<file name>``; ``row``: the sample's position in the log,
  from 1.

The tests write their logs by running inspect_ai itself (a model-graded scorer against
the offline mock model ``mockllm/model``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.data.rows import FIRST_ROW
from judgebias.recorded.adapters.common import ScoreRows, number, source_error
from judgebias.recorded.schema import RecordedTableError

TOOL = "inspect_ai"


def read(path: str | Path, *, scorer: str | None = None, key: str | None = None,
         judge: str | None = None, generator: str | None = None,
         output_id: str | None = None,
         scale: tuple[float, float] | None = None) -> pd.DataFrame:
    """The model-graded scores in an inspect_ai eval log, as a SCORES table.

    Parameters
    ----------
    path
        A ``.eval`` or ``.json`` log.
    scorer
        The scorer whose scores to read (its name in the log); needed when the log has
        several.
    key, judge, generator, output_id
        See the module docstring's mapping.
    scale
        The judge's score range, checked when given.
    """
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import CORRECT, INCORRECT, NOANSWER, PARTIAL

    grades = {CORRECT: 1.0, PARTIAL: 0.5, INCORRECT: 0.0, NOANSWER: 0.0}
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # inspect_ai's reader raises whatever its format gives
        raise RecordedTableError(f"{path}: not an inspect_ai eval log ({exc})") from exc
    if not log.samples:
        raise RecordedTableError(f"{path}: the log holds no samples (written header only, "
                                 "or the run never finished one)")
    scorer = scorer or _only_scorer(path, log.samples)
    generator = generator if generator is not None else str(log.eval.model)
    several_epochs = any(sample.epoch > 1 for sample in log.samples)
    own_id = output_id or generator or "output"
    rows = ScoreRows(TOOL, path)
    for row, sample in enumerate(log.samples, start=FIRST_ROW):
        if sample.error is not None:
            rows.skip(row, f"the sample errored ({str(sample.error.message)[:60]})")
            continue
        scores = sample.scores or {}
        if scorer not in scores:
            raise source_error(path, row, "scores", f"no score from {scorer!r} "
                               f"(sample {sample.id!r})")
        value = _value(scores[scorer].value, key, path, row, scorer)
        if isinstance(value, str) and value in grades:
            score = grades[value]
        else:
            score = number(value, path, row, f"scores.{scorer}")
        if math.isnan(score):
            reason = getattr(scores[scorer], "reason", None) or "no value"
            rows.skip(row, f"{scorer} left the sample unscored ({reason})")
            continue
        grader_events = _scorer_model_events(sample.events, scorer)
        rows.add(row=row, item=str(sample.id),
                 output_id=f"{own_id} epoch {sample.epoch}" if several_epochs else own_id,
                 generator=generator, output=sample.output.completion,
                 judge=judge or _grader(grader_events, log.eval.scorers, scorer, path, row),
                 score=score, logprobs=_logprobs(grader_events))
    return rows.table(scale)


def _only_scorer(path: str | Path, samples: Iterable[Any]) -> str:
    names = sorted({name for sample in samples for name in (sample.scores or {})})
    if len(names) != 1:
        raise RecordedTableError(f"{path}: name the scorer to read (scorer=): the log has "
                                 f"{', '.join(names) if names else 'no scores'}")
    return names[0]


def _value(value: Any, key: str | None, path: str | Path, row: int, scorer: str) -> Any:
    """The scalar to read: `value` itself, or its `key` when it is a dict."""
    if key is not None:
        if not isinstance(value, dict) or key not in value:
            raise source_error(path, row, f"scores.{scorer}", f"no {key!r} in {value!r}")
        return value[key]
    if isinstance(value, dict | list):
        raise source_error(path, row, f"scores.{scorer}", f"a {type(value).__name__} of "
                           "values: name the one to read with key=")
    return value


def _scorer_model_events(events: Iterable[Any], scorer: str) -> list[Any]:
    """The model events inside `scorer`'s span (its grader's calls), in order."""
    parents: dict[str, str | None] = {}
    scorer_spans: set[str] = set()
    found = []
    for event in events:
        if event.event == "span_begin":
            parents[event.id] = event.parent_id
            if event.type == "scorer" and event.name == scorer:
                scorer_spans.add(event.id)
        elif event.event == "model":
            span = event.span_id
            while span is not None and span not in scorer_spans:
                span = parents.get(span)
            if span is not None:
                found.append(event)
    return found


def _grader(events: list[Any], scorers: list[Any] | None, scorer: str,
            path: str | Path, row: int) -> str:
    """The one model `scorer` asked, from its events, else from its ``model`` option."""
    models = sorted({str(event.model) for event in events})
    if len(models) > 1:
        raise source_error(path, row, f"scores.{scorer}", f"the scorer asked several "
                           f"models ({', '.join(models)}): pass judge=")
    if models:
        return models[0]
    for entry in scorers or []:
        option = (entry.options or {}).get("model") if entry.name == scorer else None
        if isinstance(option, dict):
            option = option.get("model")
        if isinstance(option, str) and option:
            return option
    raise source_error(path, row, f"scores.{scorer}", "no grader model in the log (a "
                       "scorer that asks no model judges nothing here): pass judge=")


def _logprobs(events: list[Any]) -> str:
    """The last grader answer's token log-probs in the journal's JSON, "" if none."""
    for event in reversed(events):
        choices = event.output.choices if event.output is not None else []
        logprobs = choices[0].logprobs if choices else None
        if logprobs is not None and logprobs.content:
            return json.dumps([[token.token, token.logprob,
                                [[alt.token, alt.logprob] for alt in token.top_logprobs or []]]
                               for token in logprobs.content], separators=(",", ":"))
        if choices:
            return ""
    return ""
