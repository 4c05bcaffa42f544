"""What the ``sim`` backend answers for the template study: a judge that scores an answer
from its facts and, if planted, its length.

Recognised by the template prompt's opening ``[template study]``. The judge counts the
answer's facts ``f`` (0..5) and words ``w`` and answers::

    score = round(1 + f + length_bias * w / 10 + noise_sd * z),  clipped to 1..10

with z ~ N(0, 1) drawn per request (judgebias.models.sim.request_rng). Traits come from
the model's ``sim._template`` block: ``length_bias`` (points per ten words, default 0: no
bias at all) and ``noise_sd`` (default 1). The answer is ``The final score is $N$.``
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from judgebias.models.sim import between, request_rng, text_tokens
from judgebias.studies._template.data import FACT

if TYPE_CHECKING:
    from judgebias.models.base import ChatRequest, TokenLogprob
    from judgebias.models.sim import SimBackend, SimModel

MARK = "[template study]"
POINTS_PER_FACT = 1.0


@dataclass(frozen=True)
class ScoreTask:
    """Scoring one answer (the template study's only prompt)."""

    name: str = "_template_score"

    def recognise(self, prompt: str) -> bool:
        return prompt.startswith(MARK)

    def tokens(self, backend: SimBackend, model: SimModel, request: ChatRequest
               ) -> list[TokenLogprob]:
        traits = model.extra.get("_template", {})
        answer = (between(request.prompt, "Answer:", "\n") or "").split()
        z = request_rng(backend.seed, request).standard_normal()
        raw = (1 + POINTS_PER_FACT * answer.count(FACT)
               + traits.get("length_bias", 0.0) * len(answer) / 10
               + traits.get("noise_sd", 1.0) * z)
        score = int(np.clip(round(raw), 1, 10))
        return text_tokens(f"The final score is ${score}$.")


TASKS = [ScoreTask()]
