"""The instruction writer of FRAME's benchmark construction (seed 004 §4.1: "We employ
GPT-4o to generate a natural language instruction conditioned on the selected elements").

A panel model is asked, as a journaled judge task, to write one instruction from the
concept values (prompt ``frame_instruction``). An answer is kept only when it is one line
that still names every concept value (read back with concepts.parse_instruction): a
writer that drops or changes a concept would make the planted alignment wrong, so such an
item keeps its status and is left out, never silently replaced by the template. The
simulated writer (:class:`InstructionWriterTask`) answers with the offline template.

Role: the model job of data.py's stage 2 (the instruction writer, run through
judgebias.judging.tasks.run_task) and its simulated answer (sim.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from judgebias.judging.answers import STATUS_OK
from judgebias.judging.tasks import FreeText, JudgeTask, run_task
from judgebias.models.base import ChatRequest, TokenLogprob
from judgebias.models.context import RunContext
from judgebias.models.sim import SimBackend, SimModel
from judgebias.studies.frame.concepts import VOCABULARY, compose_instruction, parse_instruction

WRITER_MARK = "Write one natural-language instruction for a text-to-image model"
STATUS_LOST_CONCEPT = "lost_concept"  # the answer does not name every concept value
STATUS_MULTI_LINE = "multi_line"  # the answer is not one line


def writer_task() -> JudgeTask:
    return JudgeTask(prompt="frame_instruction", answer=FreeText(),
                     fields={"Domain": "domain", "Concepts": "concept_lines"}, images=())


def concept_lines(concepts: Mapping[str, str]) -> list[str]:
    return [f"{slot}: {value}" for slot, value in concepts.items()]


def write(run: RunContext, writer: str | None, domains: pd.Series,
          concepts: pd.Series) -> tuple[list[str | None], list[str]]:
    """An instruction per concept set (JSON strings) and its status: the template's with
    no writer, else the writer model's (`run`: the journal, the panel model), checked
    (module docstring)."""
    sets = [json.loads(c) for c in concepts]
    if writer is None:
        return [compose_instruction(d, c) for d, c in zip(domains, sets, strict=True)], \
            [STATUS_OK] * len(sets)
    items = pd.DataFrame({"domain": list(domains),
                          "concept_lines": [concept_lines(c) for c in sets]})
    answers = run_task(run, writer, "writer", writer_task(), items)
    texts, statuses = [], []
    for domain, wanted, status, text in zip(domains, sets, answers["status"],
                                            answers["label"], strict=True):
        text = (text or "").strip()
        if status == STATUS_OK and "\n" in text:
            status = STATUS_MULTI_LINE
        elif status == STATUS_OK and parse_instruction(text, domain) != wanted:
            status = STATUS_LOST_CONCEPT
        texts.append(text if status == STATUS_OK else None)
        statuses.append(status)
    return texts, statuses


@dataclass(frozen=True)
class InstructionWriterTask:
    """The simulated writer: the offline template of the listed concepts."""

    name: str = "frame_instruction"

    def recognise(self, prompt: str) -> bool:
        return prompt.startswith(WRITER_MARK)

    def tokens(self, backend: SimBackend, model: SimModel, request: ChatRequest
               ) -> list[TokenLogprob]:
        domain, concepts = read_writer_prompt(request.prompt)
        text = compose_instruction(domain, concepts)
        return [TokenLogprob(text, -0.1, ((text, -0.1),))]


def read_writer_prompt(prompt: str) -> tuple[str, dict[str, str]]:
    """The domain and the concepts (slot -> value) a ``frame_instruction`` prompt lists."""
    lines = [line.strip() for line in prompt.split("\n")]
    domain = next((line.split(":", 1)[1].strip() for line in lines
                   if line.startswith("Domain:")), "")
    if domain not in VOCABULARY:
        raise ValueError(f"frame_instruction prompt without a known domain: {domain!r}")
    start = lines.index("Concepts:") + 1 if "Concepts:" in lines else len(lines)
    concepts = dict(line.split(": ", 1) for line in lines[start:] if ": " in line)
    return domain, {slot: value for slot, value in concepts.items()
                    if slot in VOCABULARY[domain]}
