"""`judgebias answers import FILE ...`: answers written elsewhere, journaled under the keys
their requests were exported with (issue 44 item 1; the formats: judgebias.exchange.
formats). After an import the pipeline runs on with zero calls for what was answered.

Each row is treated as a provider batch's row is ingested (judgebias.models.batch), with
the rules an import needs on top, all checked for the whole file before anything is
written, so a bad file writes nothing:

=================================== ===================================================
a row ...                           is ...
=================================== ===================================================
not JSON, or an answer in neither   an error naming the file and line
format
for a key never exported from this  an error naming the file and line (an answer to a
project's journals                  request nobody asked would become a number)
for a key answered in the file      written once; with a different text, an error
again                               naming both lines
for a key the journal answered      skipped (a repeated import writes nothing twice);
already                             with a different text, an error naming the line
with an error                       a failure, with its reason: never an answer; the
                                    job sees it as it would a batch's failed row, and
                                    its ``max_failures`` decides (judgebias.models.
                                    external); the next export writes the request again
with empty text                     a failure ("empty"), as an online answer would be
=================================== ===================================================

An exported request with no row in the file stays unanswered: not a failure, since a file
may be one shard of the answers; the summary counts what still waits, and the next export
writes it again.

**Never lose, never duplicate.** Rows are journaled in transactions of
:data:`CHUNK` rows (all or none of a chunk survive a kill -9); an import killed midway
and run again skips what is journaled (answers by key, failures by key and reason) and
writes the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgebias.config import ConfigError
from judgebias.exchange.formats import AnswerRowError, answer_row
from judgebias.models.backends import registered_backends
from judgebias.models.base import ChatResponse
from judgebias.models.journal import Journal
from judgebias.models.runner import empty_as_failure

CHUNK = 1000  # rows per transaction


class AnswersFileError(ConfigError):
    """An answers file that cannot be imported: the message names the file and line."""


@dataclass
class Row:
    key: str
    response: ChatResponse
    where: str  # "FILE, line N"


@dataclass
class ImportSummary:
    """What an import did, per journal (model) and in all."""

    answers: int = 0  # new answers journaled
    failures: int = 0  # rows with an error (or empty), journaled as failures
    already: int = 0  # answers or failures journaled before (a repeated import)
    repeated: int = 0  # rows repeating another row of the files with the same text
    waiting: dict[str, int] = field(default_factory=dict)  # model id -> exported, unanswered


def journals(journal_dir: Path) -> list[Path]:
    """Every model journal under `journal_dir` (one folder per registered backend)."""
    return sorted(path for name in registered_backends()
                  for path in (journal_dir / name).glob("*.sqlite"))


def read_rows(files: Sequence[Path]) -> Iterator[Row]:
    """Every non-blank line of `files` as a Row; AnswersFileError names a bad line."""
    for path in files:
        try:
            handle = path.open(encoding="utf-8")
        except OSError as exc:
            raise AnswersFileError(f"{path}: {exc.strerror}") from None
        with handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    key, response = answer_row(line)
                except AnswerRowError as exc:
                    raise AnswersFileError(f"{path}, line {number}: {exc}") from None
                yield Row(key, empty_as_failure(response), f"{path}, line {number}")


def _one_per_key(rows: Iterable[Row], summary: ImportSummary) -> dict[str, list[Row]]:
    """The rows by key: one answer (a repeat with the same text dropped, another text an
    error), else its distinct failures (a repeated one dropped; none kept where the key
    has an answer in the files)."""
    by_key: dict[str, list[Row]] = {}
    for row in rows:
        kept = by_key.setdefault(row.key, [])
        answer = next((r for r in kept if r.response.ok), None)
        if answer is not None and row.response.ok:
            if answer.response.text != row.response.text:
                raise AnswersFileError(
                    f"{row.where}: key {row.key} is answered again with a different text "
                    f"(first at {answer.where}); which one counts is yours to say: remove "
                    "one of them")
            summary.repeated += 1
        elif answer is not None:
            continue  # a failed attempt where the files hold an answer
        elif row.response.ok:
            by_key[row.key] = [row]
        elif any((r.response.status, r.response.error)
                 == (row.response.status, row.response.error) for r in kept):
            summary.repeated += 1  # the same failure again: one failed attempt
        else:
            kept.append(row)
    return by_key


def import_answers(params: Mapping[str, Any], files: Sequence[Path]) -> ImportSummary:
    """Journal the answers of `files` (module docstring) and return what was done."""
    summary = ImportSummary()
    by_key = _one_per_key(read_rows(files), summary)
    opened = [Journal(path) for path in journals(Path(params["journal_dir"]))]
    try:
        owners: dict[str, tuple[Journal, str, str]] = {}
        for journal in opened:
            for key, (model, request) in journal.exported(by_key).items():
                owners[key] = (journal, model, request)
        for key, rows in by_key.items():
            if key not in owners:
                raise AnswersFileError(
                    f"{rows[0].where}: key {key} was never exported from this project "
                    f"(journal_dir {params['journal_dir']}): answers are imported only "
                    "for requests `judgebias requests export` wrote")
        plan = _new_rows(by_key, owners, summary)
        for journal in opened:
            new = plan.get(journal, [])
            for start in range(0, len(new), CHUNK):
                journal.record_many(new[start:start + CHUNK])
            summary.waiting.update(journal.unanswered_exports())
    finally:
        for journal in opened:
            journal.close()
    return summary


def _new_rows(by_key: Mapping[str, list[Row]], owners: Mapping[str, tuple[Journal, str, str]],
              summary: ImportSummary
              ) -> dict[Journal, list[tuple[str, str, str, ChatResponse]]]:
    """Per journal, the (key, model, request, response) rows not journaled yet; an answer
    that contradicts the journal's is an error."""
    plan: dict[Journal, list[tuple[str, str, str, ChatResponse]]] = {}
    by_journal: dict[Journal, list[str]] = {}
    for key in by_key:
        by_journal.setdefault(owners[key][0], []).append(key)
    for journal, keys in by_journal.items():
        answered = journal.lookup(keys)
        failed = journal.failures_of(keys)
        for key in keys:
            _, model, request = owners[key]
            for row in by_key[key]:
                response = row.response
                if key in answered:
                    if response.ok and answered[key].text != response.text:
                        raise AnswersFileError(
                            f"{row.where}: key {key} is already answered in the journal "
                            "with a different text; a journaled answer is never replaced")
                    summary.already += 1
                    continue
                if not response.ok and (response.status, response.error) in {
                        (f.status, f.error) for f in failed.get(key, ())}:
                    summary.already += 1  # the same failure, imported before
                    continue
                plan.setdefault(journal, []).append((key, model, request, response))
                summary.answers += response.ok
                summary.failures += not response.ok
    return plan


def import_text(summary: ImportSummary) -> str:
    """What `judgebias answers import` prints."""
    lines = [f"{summary.answers} answers and {summary.failures} failures journaled; "
             f"{summary.already} rows were journaled before, {summary.repeated} repeated "
             "rows written once"]
    lines += [f"  {model}: {n} exported requests still have no answer (export again to "
              "write them)" for model, n in summary.waiting.items()]
    return "\n".join(lines)
