"""The one small interface every model backend implements (docs/design.md principle 6).

A backend takes a batch of chat requests (prompt text plus images) and returns, for each,
the generated text, the top-k token log-probs where the provider gives them, and usage.
Batching, concurrency, rate limits and retries live in the backend layer; studies only
build requests and read responses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol


@dataclass(frozen=True)
class Sampling:
    """Decoding settings sent with a request; part of the request's journal key."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 512
    top_logprobs: int = 5
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        # Spelled out: dataclasses.asdict deep-copies and took a third of the time of
        # building a plan's journal keys (benchmarks/plan_scale.py).
        return {"temperature": self.temperature, "top_p": self.top_p,
                "max_tokens": self.max_tokens, "top_logprobs": self.top_logprobs,
                "seed": self.seed}


@dataclass(frozen=True)
class ChatRequest:
    """One single-turn chat request: a user prompt with images attached, and optionally a
    system prompt (FRAME's judges get one, seed 004).

    `images` are the encoded image files (PNG/JPEG bytes) exactly as a model receives
    them, in order (a pairwise judge gets two); a backend never sees dataset metadata,
    only what is in the request. `digests` may carry the images' sha256 (hex) when the
    caller already knows them (judgebias.judging.tasks.read_image computes each file's
    once), so journal keys do not hash the same bytes again for every request.

    The user message is one ordered sequence of text and image parts (:meth:`parts`), and
    every backend sends exactly that sequence (issue 19: an open judge on vLLM and an API
    judge must see a prompt in the same shape, or their comparison is confounded).
    `image_at` places image i right before character ``image_at[i]`` of `prompt` (a
    template's image markers, judgebias.prompts); empty, every image follows the whole
    text. That default is how G-VEval's own scorer sends its prompt (github.com/ztangaj/
    gveval, evaluation/gveval/scorer.py, commit fee3fd7: the text part, then the image)
    and what the openai and gemini backends always sent, so journaled API answers to
    unmarked prompts keep their keys. `prompt` is always the text parts joined, so a
    reader of the text (the sim) reads what the model reads, labels ("Image 1:") included.
    """

    model: str  # the provider's model id (e.g. "gpt-4o-2024-08-06", "sim/lumen-large")
    prompt: str
    images: tuple[bytes, ...] = ()
    sampling: Sampling = field(default_factory=Sampling)
    revision: str = ""
    system: str = ""
    digests: tuple[str, ...] = field(default=(), compare=False, repr=False)
    image_at: tuple[int, ...] = ()
    # a cache hint, not part of the question (so not of the journal key): how many leading
    # parts of the user message (:meth:`parts`) it shares with another request of the same
    # job that has the same system prompt (0: none; set by the runner through
    # judgebias.models.prefix.grouped); a provider with explicit cache markers (Anthropic)
    # marks the end of that prefix
    shared_parts: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.image_at:
            return
        if len(self.image_at) != len(self.images):
            raise ValueError(f"image_at places {len(self.image_at)} images, the request "
                             f"has {len(self.images)}")
        if (list(self.image_at) != sorted(self.image_at) or self.image_at[0] < 0
                or self.image_at[-1] > len(self.prompt)):
            raise ValueError(f"image_at {list(self.image_at)} must be non-decreasing offsets "
                             f"into the prompt (0..{len(self.prompt)})")
        if all(at == len(self.prompt) for at in self.image_at):  # the default, spelled out
            object.__setattr__(self, "image_at", ())

    @classmethod
    def from_parts(cls, model: str, parts: Sequence[str | bytes], **fields: Any
                   ) -> ChatRequest:
        """The request whose user message is `parts` (str: text, bytes: an image file),
        in order; the inverse of :meth:`parts` (serve-sim rebuilds requests with it)."""
        texts: list[str] = []
        images: list[bytes] = []
        offsets: list[int] = []
        length = 0
        for part in parts:
            if isinstance(part, bytes):
                images.append(part)
                offsets.append(length)
            else:
                texts.append(part)
                length += len(part)
        return cls(model=model, prompt="".join(texts), images=tuple(images),
                   image_at=tuple(offsets), **fields)

    def parts(self) -> list[str | bytes]:
        """The user message in order: text (str) and image (bytes) parts, no empty text.

        Every backend's payload is built from this, so all send the same sequence.
        """
        offsets = self.image_at or (len(self.prompt),) * len(self.images)
        parts: list[str | bytes] = []
        start = 0
        for image, at in zip(self.images, offsets, strict=True):
            if at > start:
                parts.append(self.prompt[start:at])
            parts.append(image)
            start = at
        if start < len(self.prompt) or not self.images:
            parts.append(self.prompt[start:])
        return parts

    def image_hashes(self) -> list[str]:
        if len(self.digests) == len(self.images):
            return list(self.digests)
        return [hashlib.sha256(image).hexdigest() for image in self.images]


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token, its log-probability and the top-k alternatives at its position.

    `top` lists (token, logprob) pairs best first and includes the chosen token when the
    provider reports it among the top-k.
    """

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


# The status of a call that produced no answer (network, server, quota: after the
# backend's retries): what a job's `max_failures` counts (judgebias.models.runner).
STATUS_FAILED = "failed"
# The finish reason of an answer cut off by its output limit (every backend maps its
# provider's to it): the answer is kept, and read as truncated (judgebias.judging.answers).
FINISH_LENGTH = "length"

# Usage keys every backend journals alike: `completion_tokens` is every output token
# billed, hidden ones included; REASONING_TOKENS the hidden part of it (OpenAI's
# reasoning tokens, Gemini's thoughts; Claude's backend journals `thinking_tokens`).
REASONING_TOKENS = "reasoning_tokens"
_HIDDEN = (REASONING_TOKENS, "thinking_tokens")


def hidden_tokens(usage: Mapping[str, Any]) -> int:
    """The hidden (reasoning, thinking) output tokens of an answer's usage; 0 if none."""
    for name in _HIDDEN:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


# Prompt caching (issue 45), journaled alike by every backend whose provider reports it,
# beside the provider's own fields: CACHED_TOKENS the input tokens read from the provider's
# cache (inside `prompt_tokens`; OpenAI's prompt_tokens_details.cached_tokens, Anthropic's
# cache_read_input_tokens, Gemini's cached_content_token_count, vLLM's num_cached_tokens),
# CACHE_WRITE_TOKENS those written to it at a write price (Anthropic's
# cache_creation_input_tokens; OpenAI's cache_write_tokens where its model reports them).
# Absent means the provider did not say (the sim, which models no cache; a vLLM server
# without --enable-prompt-tokens-details), 0 that it said none: readers count only answers
# that carry the key.
CACHED_TOKENS = "cached_tokens"
CACHE_WRITE_TOKENS = "cache_write_tokens"


def cached_tokens(usage: Mapping[str, Any]) -> int | None:
    """The input tokens an answer read from the provider's cache; None where not reported."""
    value = usage.get(CACHED_TOKENS)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class ChatResponse:
    """What a backend returns for one request.

    `status` is "ok" for a completed answer; anything else is kept with its `error` text
    and never turned into a number downstream. "failed" means no answer came back (the
    only status a job's `max_failures` counts); "empty" and "refused" are the model's or
    provider's answer. An answer cut off by its output limit is "ok" with `finish_reason`
    FINISH_LENGTH, its text possibly empty (hidden reasoning can spend the whole limit):
    journaled like any answer, so a rerun never pays for it again, and read as truncated.

    `raw` is the provider's answer as received (JSON), where it holds more than `text`
    and `tokens` say and a later reading may need it (Claude's thinking blocks with their
    signatures: judgebias.models.anthropic_backend). The journal keeps it beside the
    answer (principle 5: raw responses are kept); it never takes part in a comparison, as
    it carries the provider's own ids.
    """

    text: str
    tokens: tuple[TokenLogprob, ...] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str = "stop"
    status: str = "ok"
    error: str = ""
    raw: str = field(default="", compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def logprobs_json(self) -> str:
        """The token log-probs as compact JSON (an empty string when none were given).
        Encoded once per response: the journal and the job's table both write it, and
        for a simulated judge encoding was a tenth of a score job (issue 24)."""
        return self._logprobs_json

    @cached_property
    def _logprobs_json(self) -> str:
        if self.tokens is None:
            return ""
        return json.dumps(
            [[t.token, t.logprob, [list(alt) for alt in t.top]] for t in self.tokens],
            separators=(",", ":"),
        )

    @staticmethod
    def tokens_from_json(payload: str) -> tuple[TokenLogprob, ...] | None:
        if not payload:
            return None
        return tuple(
            TokenLogprob(token, logprob, tuple((alt, lp) for alt, lp in top))
            for token, logprob, top in json.loads(payload)
        )


OnResponse = Callable[[int, "ChatResponse"], None]


class Backend(Protocol):
    """A model provider.

    `complete` answers a batch of requests and returns the answers in request order. It
    calls `on_response(index, response)` the moment each answer is final (in completion
    order), so the caller can journal it before the rest of the batch returns: a job
    killed mid-batch loses nothing that had completed.
    """

    name: str

    def complete(self, requests: Sequence[ChatRequest],
                 on_response: OnResponse | None = None) -> list[ChatResponse]: ...

