"""The ``external`` backend: a model judgebias never calls; its answers come in from files
(issue 44: "bring your own inference").

A researcher whose model sits behind a gateway judgebias cannot reach (an air-gapped
cluster's own serving stack, Bedrock, Azure, a lab's in-house API) declares it with
``backend: external``. Its jobs build their requests exactly as for any backend and look
them up in the model's journal; `judgebias requests export` writes the requests still
unanswered (judgebias.exchange), the researcher answers them wherever the model runs,
and `judgebias answers import` journals the answers under the same keys. The pipeline
then runs on with zero calls.

A job of an external model therefore never sends anything. When some of its requests
have no journaled answer it stops with :class:`AwaitingAnswers` (nothing is written, as
for any failed job; Snakemake's ``--keep-going`` lets the rest of the DAG run), naming
how many wait and the two commands. A request whose imported row was an error (the
provider refused it, the gateway timed out) is answered with that failure, status and
reason kept, exactly as a provider batch's failed row: it never becomes a number, the
job's ``max_failures`` decides whether the job may stand without it, and it is written
out again by the next export, so a later answer replaces it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judgebias.models.base import ChatRequest, ChatResponse, OnResponse
from judgebias.models.journal import Journal, request_key

PROTOCOL_VERSION = "external-1"  # part of every key: bump if what an answer means changes


class AwaitingAnswers(RuntimeError):
    """Requests of an external model have no answer in its journal yet: export them
    (`judgebias requests export`), answer them elsewhere, import the answers
    (`judgebias answers import`), and run again."""


class ExternalBackend:
    """Answers from the model's journal only (module docstring). `label` names the
    model in messages; `journal` is its journal's path."""

    name = "external"

    def __init__(self, label: str, journal: Path, version: str = PROTOCOL_VERSION) -> None:
        self.label = label
        self.journal = journal
        self.version = version

    def complete(self, requests: Sequence[ChatRequest],
                 on_response: OnResponse | None = None) -> list[ChatResponse]:
        """The imported failure of each request; :class:`AwaitingAnswers` if any has
        neither answer nor failure (the runner asks only for requests with no answer)."""
        keys = [request_key(request, self.name, self.version) for request in requests]
        with Journal(self.journal) as journal:
            failures = {key: tried[-1] for key, tried in journal.failures_of(keys).items()}
        waiting = len(set(keys) - set(failures))
        if waiting:
            raise AwaitingAnswers(
                f"{self.label}: {waiting} of this job's requests have no answer yet (an "
                "external model: judgebias never calls it). Write them out with `judgebias "
                "requests export DIR`, answer them where the model runs, bring the answers "
                "in with `judgebias answers import FILE`, then run again (`snakemake "
                "--keep-going` runs the rest of the pipeline meanwhile).")
        responses = [failures[key] for key in keys]
        for index, response in enumerate(responses):
            if on_response is not None:
                on_response(index, response)
        return responses
