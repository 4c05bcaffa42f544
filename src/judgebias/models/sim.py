"""The ``sim`` backend: simulated multimodal models with planted, documented traits.

Why: the embedded default must run every study offline, and each study needs a *known*
right answer so that tests can check that the method recovers it. ``SimBackend`` is a real
backend (same interface as the API backends): it receives only what a real model receives,
the prompt text and the encoded image bytes, and answers in the same format (text plus
token log-probs). It never reads dataset metadata; it looks at the image with
:func:`judgebias.data.scenes.perceive` (``SimBackend.perceive``).

This module holds what every study's simulated judge needs: the models' traits, the
backend, the tasks' protocol and order, the request-seeded draws and a numeric score's
tokens. The kinds of prompt it answers are the studies' own (``SimTask``, declared through
``Study.sim``; :func:`sim_tasks` gives the order they are tried in), e.g. philautia's
G-VEval judging and captioning in judgebias.studies.philautia.sim. A prompt no task
recognises, a missing/undecodable image or an unknown model id gives a
``ChatResponse(status="failed", error=...)``.

Traits (the ``sim:`` block of a model in ``params.yaml``; ``SimModel.from_params``)
-----------------------------------------------------------------------------------

``caption_quality`` (float in [0, 1], required)
    Generator accuracy. Each object in the image is omitted with probability
    ``(1 - q) / 2`` (at least one object is always described). For each described object
    the colour and the shape are each correct with probability ``q``, otherwise replaced by
    a uniformly drawn wrong one (hallucination); the background colour likewise. Size and
    position of a described object are always stated correctly. ``q = 1`` gives fully
    correct captions.
``style`` (``{opener: str, signature: str}``, required)
    ``opener`` is a family-shared phrase that starts every caption of the model (e.g.
    ``"In this picture,"``); ``signature`` a model-specific word the model always uses:
    an adverb ending in -ly goes ``"<Opener> a large red circle on the left and a small
    blue square on the right, neatly arranged on a white background."``, any other word is
    used as an adjective: ``"<Opener> a large red circle on the left, set on a vivid white
    background."`` Neither may contain a scene word (colour, shape, size, position), which
    would change what a caption claims. Evaluators recognise a signature anywhere in a
    caption (whole words, any case) and an opener at its start.
``leniency`` (float in [0, 1], default 0.6)
    The mean score (0-1 units) the evaluator gives a caption of accuracy 0.5 carrying no
    style it is biased about.
``spread`` (float >= 0, default 0.5)
    How strongly the score moves with caption accuracy: the slope of the mean score in
    accuracy (0-1 score units per unit of accuracy).
``self_preference`` (float in [-1, 1], default 0)
    Score bonus (0-1 units) for captions carrying the evaluator's own signature.
``preferences`` (``{models: {model_key: bonus}, families: {family: bonus}}``, default none)
    Bonus (0-1 units, negative = disfavour) for captions carrying that model's signature,
    or starting with that family's opener. Neither applies to a caption carrying the
    evaluator's own signature (``self_preference`` covers those); a family bonus does
    apply to siblings' captions, so ``families: {own_family: b}`` plants family preference.
    Keys naming models/families outside the panel are ignored.
``noise`` (float >= 0, default 0.08)
    The judge's per-answer inconsistency (0-1 units). It enters twice, as in a real
    model: the judge's opinion of a caption varies from answer to answer around its
    systematic judgement (``m' = m + noise * z``, z ~ N(0, 1) drawn per request), and the
    score token is drawn from a distribution of sd ``noise`` around that opinion (floored
    at 0.005 so the distribution is always proper). Only the first part survives the
    log-prob weighted expected score, so without it every judge's expected score would be
    a deterministic function of caption accuracy, which no real judge is.
``tokenizer`` (``"whole"`` | ``"digits"``, default ``"whole"``)
    Whether the score ``85`` is emitted as one token ``"85"`` or as ``"8"``, ``"5"``
    (``100`` as ``"1"``, ``"0"``, ``"0"``).

Other keys in the block are kept in ``SimModel.extra`` for traits other studies plant.

Score distribution and tokens
-----------------------------

A judge that answers a number on 0..100 with opinion ``m'`` in [0, 1] draws it from
``p(n) ∝ exp(-(n - 100 m')^2 / (2 (100 sigma)^2))``, ``sigma = max(noise, 0.005)``
(:func:`score_logprobs`).

The emitted integer score is sampled from ``p`` tempered by ``sampling.temperature``
(``p^(1/T)``, i.e. sd ``sigma * sqrt(T)``; ``T = 0`` takes the mode) and cut to the
``sampling.top_p`` nucleus. The reported log-probs are those of the untempered ``p``
(the model's distribution, as providers report it), so ``sum_n n p(n) ≈ 100 m'``.

At a score position ``top`` holds the top-k (``sampling.top_logprobs``) alternatives with
their true log-probs (:func:`score_tokens`):

* ``whole``: the k most likely integers of ``p``.
* ``digits``: the score's decimal string is spelled one digit per token. At the first
  position the alternatives are the digits with their marginal probability
  ``P(first digit = d) = sum of p(n) over n whose string starts with d`` (so ``"1"``
  collects 1, 10-19 and 100); at later positions the conditional probability of each
  next digit given the chosen prefix, plus ``"$"`` for "the number ends here". The closing
  ``"$"`` carries that end-of-number probability (1 for a whole-number token).

Every draw comes from a numpy Generator seeded with a hash of (backend seed, model id,
prompt text, image hashes, sampling settings) (:func:`request_rng`), so answers are
deterministic.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

import numpy as np

from judgebias.data import scenes
from judgebias.data.scenes import Scene
from judgebias.models.base import ChatRequest, ChatResponse, OnResponse, Sampling, TokenLogprob
from judgebias.models.perception_store import PerceptionStore

T = TypeVar("T")

# Bump when the simulated world answers differently, so journaled answers are not reused.
SIM_VERSION = "sim-2"  # sim-2: MMB judges draw their own landscape (issue 20)

MIN_NOISE = 0.005
TOKENIZERS = ("whole", "digits")
_PERCEPTION_CACHE_SIZE = 2048

_DEFAULTS: dict[str, Any] = {
    "leniency": 0.6,
    "spread": 0.5,
    "self_preference": 0.0,
    "noise": 0.08,
    "tokenizer": "whole",
}
_KNOWN = {"caption_quality", "style", "preferences", *_DEFAULTS}

# The question of `judgebias probe` (judgebias.probe), which no study asks: every
# simulated model answers it as a real one would, "4" (with its top-k log-probs where asked),
# whatever the request attaches, so a probe of a sim model, or of serve-sim through an
# SDK, measures what the backend passes on, not what a study's task makes of it.
PROBE_PROMPT = "Reply with the single digit 4."
_PROBE_TOP = (("4", math.log(0.98)), ("3", math.log(0.01)), ("5", math.log(0.01)))


# ------------------------------------------------------------------------------ models


@dataclass(frozen=True)
class SimModel:
    """A simulated model's planted traits (see the module docstring for their meaning)."""

    key: str
    family: str
    caption_quality: float
    opener: str
    signature: str
    leniency: float = 0.6
    spread: float = 0.5
    self_preference: float = 0.0
    model_preferences: Mapping[str, float] = field(default_factory=dict, hash=False)
    family_preferences: Mapping[str, float] = field(default_factory=dict, hash=False)
    noise: float = 0.08
    tokenizer: str = "whole"
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @classmethod
    def from_params(cls, model_key: str, family: str, traits: Mapping[str, Any]) -> SimModel:
        """Build from a params ``sim:`` block; a bad value raises ``ValueError`` naming it."""
        where = f"sim traits of model {model_key!r}"
        if "caption_quality" not in traits or "style" not in traits:
            raise ValueError(f"{where}: 'caption_quality' and 'style' are required")
        style = traits["style"]
        if not isinstance(style, Mapping) or set(style) != {"opener", "signature"}:
            raise ValueError(f"{where}: 'style' must have exactly 'opener' and 'signature'")
        values = {**_DEFAULTS, **{k: v for k, v in traits.items() if k in _DEFAULTS}}
        preferences = traits.get("preferences") or {}
        if not isinstance(preferences, Mapping) or set(preferences) - {"models", "families"}:
            raise ValueError(f"{where}: 'preferences' may only have 'models' and 'families'")
        model = cls(
            key=model_key,
            family=family,
            caption_quality=_number(where, "caption_quality", traits["caption_quality"], 0, 1),
            opener=_style_text(where, "style.opener", style["opener"]),
            signature=_style_text(where, "style.signature", style["signature"]),
            leniency=_number(where, "leniency", values["leniency"], 0, 1),
            spread=_number(where, "spread", values["spread"], 0, math.inf),
            self_preference=_number(where, "self_preference", values["self_preference"], -1, 1),
            model_preferences=_bonuses(where, "preferences.models", preferences.get("models")),
            family_preferences=_bonuses(where, "preferences.families", preferences.get("families")),
            noise=_number(where, "noise", values["noise"], 0, math.inf),
            tokenizer=str(values["tokenizer"]),
            extra=MappingProxyType({k: v for k, v in traits.items() if k not in _KNOWN}),
        )
        if model.tokenizer not in TOKENIZERS:
            raise ValueError(f"{where}: 'tokenizer' must be one of {list(TOKENIZERS)}")
        return model


def _number(where: str, name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: {name!r} must be a number, got {value!r}")
    if not low <= float(value) <= high:
        raise ValueError(f"{where}: {name!r} must be in [{low}, {high}], got {value!r}")
    return float(value)


def _style_text(where: str, name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: {name!r} must be a non-empty string")
    clash = scenes.scene_words(value)
    if clash:
        raise ValueError(f"{where}: {name!r} must not use scene words {clash}")
    return value.strip()


def _bonuses(where: str, name: str, value: Any) -> Mapping[str, float]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: {name!r} must map names to bonuses")
    return MappingProxyType(
        {str(k): _number(where, f"{name}.{k}", v, -1, 1) for k, v in value.items()}
    )


# ----------------------------------------------------------------------------- backend


class SimBackend:
    """Backend answering as the simulated models in ``models`` (model id -> SimModel)."""

    name = "sim"

    def __init__(self, models: Mapping[str, SimModel], seed: int = 0,
                 family_openers: Mapping[str, str] | None = None,
                 tasks: Sequence[SimTask] | None = None,
                 perception_dir: Path | None = None) -> None:
        """`models` maps model ids to traits; `family_openers` adds family styles
        (family -> opener) the judges can recognise without a member model present;
        `tasks` are the kinds of prompt it answers, tried in order (default:
        :func:`sim_tasks`); `perception_dir` keeps what the judges saw in each image for
        the run's other jobs (judgebias.models.perception_store; None: kept per process
        only)."""
        self.tasks = list(sim_tasks() if tasks is None else tasks)
        self.perception_dir = perception_dir
        self.models = dict(models)
        self.seed = int(seed)
        self.openers = {(m.family, m.opener) for m in self.models.values()}
        self.openers |= set((family_openers or {}).items())

    def complete(self, requests: Sequence[ChatRequest],
                 on_response: OnResponse | None = None) -> list[ChatResponse]:
        """Answer each request independently and in order."""
        answers = []
        for index, request in enumerate(requests):
            answers.append(self.answer(request))
            if on_response is not None:
                on_response(index, answers[-1])
        return answers

    def answer(self, request: ChatRequest) -> ChatResponse:
        """One answer, or a failed response saying why the sim cannot answer."""
        model = self.models.get(request.model)
        if model is None:
            return _failed(f"sim: unknown model id {request.model!r}")
        if request.prompt == PROBE_PROMPT:
            top = _PROBE_TOP[:request.sampling.top_logprobs]
            return _response([TokenLogprob("4", _PROBE_TOP[0][1], top)], request)
        task = next((t for t in self.tasks if t.recognise(request.prompt)), None)
        if task is None:
            known = ", ".join(t.name for t in self.tasks)
            return _failed(f"sim: the prompt is none of the tasks it answers ({known})")
        try:
            tokens = task.tokens(self, model, request)
        except ValueError as exc:
            return _failed(f"sim: {exc}")
        return _response(tokens, request)

    def perceive(self, request: ChatRequest, index: int = 0) -> Scene:
        """The scene in the request's `index`-th image (ValueError if there is none)."""
        if len(request.images) <= index:
            raise ValueError("no image attached" if index == 0
                             else f"image {index + 1} is not attached")
        return self._perceive(request.images[index])

    def _perceive(self, image: bytes) -> Scene:
        digest = hashlib.sha256(image).hexdigest()
        if digest in _PERCEIVED:
            _PERCEIVED.move_to_end(digest)
            return _PERCEIVED[digest]
        scene = self.remember(image, "", lambda: scenes.perceive(image), kind="scene",
                              module=scenes.__name__, encode=scenes.scene_to_json,
                              decode=scenes.scene_from_json)
        _PERCEIVED[digest] = scene
        if len(_PERCEIVED) > _PERCEPTION_CACHE_SIZE:
            _PERCEIVED.popitem(last=False)
        return scene

    def remember(self, image: bytes, question: str, compute: Callable[[], T], *, kind: str,
                 module: str, encode: Callable[[T], str], decode: Callable[[str], T]) -> T:
        """What `compute` perceives in `image` asked `question`, computed once per run:
        kept in ``perception_dir`` (judgebias.models.perception_store) under `kind`, for
        the code of `module`."""
        store = PerceptionStore(self.perception_dir, kind, module)
        return store.fetch(image, question, compute, encode, decode)


# What the sim saw in each image (by the image's digest), most recently used last. One
# cache per process, not per Sim: perception is a pure function of the bytes, and every
# judging task of a study shows the same images, so a process that builds a Sim per task
# (the in-process tests, a worker running many tasks) perceives each image once.
_PERCEIVED: OrderedDict[str, Scene] = OrderedDict()


def _failed(error: str) -> ChatResponse:
    return ChatResponse(text="", tokens=None, finish_reason="error", status="failed", error=error)


def _response(tokens: list[TokenLogprob], request: ChatRequest) -> ChatResponse:
    """Assemble the answer, truncating at ``max_tokens`` as a real model would."""
    finish = "stop"
    if request.sampling.top_logprobs <= 0:  # no alternatives asked for: report none
        tokens = [replace(t, top=()) for t in tokens]
    if len(tokens) > request.sampling.max_tokens:
        tokens, finish = tokens[: request.sampling.max_tokens], "length"
    prompt_tokens = len(request.prompt.split()) + 256 * len(request.images)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": len(tokens),
        "total_tokens": prompt_tokens + len(tokens),
    }
    text = "".join(t.token for t in tokens)
    return ChatResponse(text=text, tokens=tuple(tokens), usage=usage, finish_reason=finish)


def request_rng(seed: int, request: ChatRequest, *, with_sampling: bool = True
                ) -> np.random.Generator:
    """A Generator seeded by the request's identity: the same request draws the same.

    The identity is (backend seed, model id, prompt, image hashes, system prompt) and, with
    `with_sampling`, the sampling settings. Without them it draws what the model "thinks"
    of the content, which a real model does not change with its sampling seed.
    """
    parts = [seed, request.model, request.prompt, request.image_hashes()]
    if request.system:  # only when set, so the draws of system-less requests never change
        parts.append(request.system)
    if with_sampling:
        parts.append(request.sampling.as_dict())
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "big"))


# ------------------------------------------------------------------------------- tasks


class SimTask(Protocol):
    """A kind of prompt the sim answers, recognised from the prompt text alone.

    Every study declares the tasks its prompts need (``Study.sim``, ``"module:TASKS"``).
    A task may set ``broad = True`` when its recogniser would also accept other tasks'
    prompts (philautia's captioning: any prompt asking for a caption); :func:`sim_tasks`
    tries those last.
    """

    name: str

    def recognise(self, prompt: str) -> bool: ...

    def tokens(self, backend: SimBackend, model: SimModel, request: ChatRequest
               ) -> list[TokenLogprob]: ...


def sim_tasks() -> list[SimTask]:
    """Every registered study's tasks (judgebias.study), in the order tried: registry
    order, the broad ones (``SimTask``) after all the others."""
    from judgebias.study import registered

    tasks = [task for study in registered().values() if study.sim
             for task in study.load("sim")]
    return sorted(tasks, key=lambda task: getattr(task, "broad", False))


def text_tokens(text: str, logprob: float = -0.05) -> list[TokenLogprob]:
    """A free-text answer as tokens (each word, and each run of whitespace, one token with
    a fixed log-prob): for study tasks whose answers are read as text, not as numbers."""
    return [TokenLogprob(p, logprob, ((p, logprob),)) for p in re.findall(r"\S+|\s+", text)]


def between(text: str, start: str, end: str) -> str | None:
    """The text between the first `start` and the next `end` (to the end if no `end`)."""
    begin = text.find(start)
    if begin < 0:
        return None
    begin += len(start)
    stop = text.find(end, begin)
    return text[begin:] if stop < 0 else text[begin:stop]


# ------------------------------------------------------------------------------ scores


_SCORES = np.arange(101)


def logsumexp(values: np.ndarray) -> float:
    """log(sum(exp(values))) without underflow (plain numpy: this runs per token)."""
    top = float(np.max(values))
    return top + math.log(float(np.sum(np.exp(values - top))))


def score_logprobs(mean: float, noise: float) -> np.ndarray:
    """Log-probabilities of the scores 0..100: a discretised normal around 100 * mean."""
    sd = 100.0 * max(noise, MIN_NOISE)
    logits = -((_SCORES - 100.0 * mean) ** 2) / (2.0 * sd * sd)
    return logits - logsumexp(logits)


def sample_score(logp: np.ndarray, sampling: Sampling, rng: np.random.Generator) -> int:
    """Draw a score from ``logp`` tempered by the temperature and cut to the top-p nucleus."""
    if sampling.temperature <= 0:
        return int(np.argmax(logp))
    tempered = logp / sampling.temperature
    probs = np.exp(tempered - logsumexp(tempered))
    if sampling.top_p < 1.0:
        order = np.argsort(-probs, kind="stable")
        keep = np.searchsorted(np.cumsum(probs[order]), sampling.top_p) + 1
        mask = np.zeros_like(probs, dtype=bool)
        mask[order[:keep]] = True
        probs = np.where(mask, probs, 0.0)
        probs /= probs.sum()
    drawn = np.searchsorted(np.cumsum(probs), rng.random() * probs.sum(), side="right")
    return int(min(drawn, len(probs) - 1))


def score_tokens(score: int, logp: np.ndarray, tokenizer: str, k: int) -> list[TokenLogprob]:
    """The score's token(s) and the closing ``"$"`` with true log-probs and top-k lists."""
    if tokenizer == "whole":
        order = np.argsort(-logp, kind="stable")[: max(k, 0)]
        top = tuple((str(int(n)), float(logp[n])) for n in order)
        return [
            TokenLogprob(str(score), float(logp[score]), top),
            TokenLogprob("$", 0.0, (("$", 0.0),)[:k]),
        ]
    text = str(score)
    tokens = []
    for position in range(len(text) + 1):
        prefix = text[:position]
        options = _next_token_logprobs(prefix, logp)
        chosen = text[position] if position < len(text) else "$"
        ranked = sorted(options.items(), key=lambda item: -item[1])[: max(k, 0)]
        tokens.append(TokenLogprob(chosen, options[chosen], tuple(ranked)))
    return tokens


_STRINGS = [str(n) for n in range(101)]


def _next_token_logprobs(prefix: str, logp: np.ndarray) -> dict[str, float]:
    """log P(next token | score string starts with prefix): digits, and "$" once non-empty."""
    within, by_digit = _continuations(prefix)
    total = logsumexp(logp[within])
    options = {digit: float(logsumexp(logp[members]) - total) for digit, members in by_digit}
    if prefix:
        options["$"] = float(logp[int(prefix)] - total)
    return options


@cache
def _continuations(prefix: str) -> tuple[np.ndarray, tuple[tuple[str, np.ndarray], ...]]:
    """The scores whose string starts with `prefix`, and those of them continuing with each
    digit (digits with none left out): they depend on the prefix alone, and finding them
    was most of the work of a score's tokens."""
    within = [n for n, s in enumerate(_STRINGS) if s.startswith(prefix)]
    by_digit = tuple((digit, np.array(members))
                     for digit in "0123456789"
                     if (members := [n for n in within
                                     if _STRINGS[n].startswith(prefix + digit)]))
    return np.array(within), by_digit
