"""serve-sim's request counters (``SimServer.stats``; printed when ``serve-sim`` stops)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

OUTCOMES = ("ok", "rate_limited", "429", "500", "stall", "drop", "garbled", "down", "401", "400",
            "404", "batch", "files")
"""``batch``: a request answered inside an OpenAI batch, a Gemini batch job or an Anthropic
Message Batch (one per line, for its model); ``files``: a files or batches bookkeeping
call (upload or one of its chunks, create, retrieve, list, cancel, download)."""


class ServerStats:
    """Thread-safe request counters: total, per model id, per outcome, and per model id
    and outcome."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = 0
        self._models: Counter[str] = Counter()
        self._outcomes: Counter[str] = Counter()
        self._model_outcomes: Counter[tuple[str, str]] = Counter()

    def record(self, model: str | None, outcome: str) -> None:
        with self._lock:
            self._total += 1
            if model is not None:
                self._models[model] += 1
                self._model_outcomes[model, outcome] += 1
            self._outcomes[outcome] += 1

    def reset(self) -> None:
        with self._lock:
            self._total = 0
            self._models.clear()
            self._outcomes.clear()
            self._model_outcomes.clear()

    def snapshot(self) -> dict[str, Any]:
        """``{"requests": N, "models": {id: n}, "outcomes": {outcome: n},
        "model_outcomes": {id: {outcome: n}}}``; every outcome in :data:`OUTCOMES` is
        present in ``outcomes`` (0 when none), so callers can index it directly."""
        with self._lock:
            outcomes = {name: 0 for name in OUTCOMES}
            outcomes.update(self._outcomes)
            by_model: dict[str, dict[str, int]] = {}
            for (model, outcome), n in self._model_outcomes.items():
                by_model.setdefault(model, {})[outcome] = n
            return {"requests": self._total, "models": dict(self._models),
                    "outcomes": outcomes, "model_outcomes": by_model}
