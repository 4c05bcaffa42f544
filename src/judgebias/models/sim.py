"""The ``sim`` backend: simulated multimodal models with planted, documented traits.

Why: the embedded default must run every study offline, and each study needs a *known*
right answer so that tests can check that the method recovers it. ``SimBackend`` is a real
backend (same interface as the API backends): it receives only what a real model receives,
the prompt text and the encoded image bytes, and answers in the same format (text plus
token log-probs). It never reads dataset metadata; it looks at the image with
:func:`judgebias.data.scenes.perceive` and reads captions with
:func:`judgebias.data.scenes.read_caption`.

Tasks are recognised from the prompt text (``SimTask``; the core's are below, a study adds
its own through ``Study.sim``, and :func:`sim_tasks` gives the order they are tried in):

* **evaluator** (G-VEval prompts): the prompt contains ``"Generated captions:\\n"``; the
  caption is the text from there to ``"\\n\\nResponse Format:"``. It is *reference-based*
  when the prompt contains ``"Reference captions:\\n"``; the references are the lines from
  there to ``"\\n\\nImage is attached"``.
* **generator**: any other prompt that asks to provide / write / generate / give /
  produce a caption (e.g. ``"Provide a one-sentence caption for the provided image."``).
* anything else, a missing/undecodable image or an unknown model id gives a
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

Evaluator score (exact formula)
-------------------------------

With the scene ``S = perceive(image)``, the caption's claims ``C = read_caption(caption)``
and ``match = match_claims`` (points per correct colour/shape/size/position, missing and
hallucinated objects cost 2 possible points each, background 1 point; see its docstring)::

    a_img = match(C, claims of S).accuracy                                   in [0, 1]
    a     = a_img                                               (reference-free)
    a     = (1 - 0.3) * a_img + 0.3 * mean_r match(C, read_caption(r)).accuracy
                                                                (reference-based)
    bonus = self_preference                      if the caption has the own signature
          = sum(preferences.models[k] for each other model k whose signature it has)
            + sum(preferences.families[f] for each family f whose opener starts it)
    m     = clip(leniency + spread * (a - 0.5) + bonus, 0, 1)      systematic judgement
    m'    = clip(m + noise * z, 0, 1),  z ~ N(0, 1) per request       this answer's opinion
    p(n)  ∝ exp(-(n - 100 m')^2 / (2 (100 sigma)^2)), n = 0..100, sigma = max(noise, 0.005)

The scale is bounded: when ``leniency + spread * (a - 0.5) + bonus`` exceeds 1 the bonus
is clipped, and a mean near 1 (or 0) is further compressed because ``p`` is truncated to
0..100. Planted bonuses are recovered at face value only while ``leniency + spread / 2 +
bonus`` stays below about ``1 - 2 * noise``.

The emitted integer score is sampled from ``p`` tempered by ``sampling.temperature``
(``p^(1/T)``, i.e. sd ``sigma * sqrt(T)``; ``T = 0`` takes the mode) and cut to the
``sampling.top_p`` nucleus. The reported log-probs are those of the untempered ``p``
(the model's distribution, as providers report it), so ``sum_n n p(n) ≈ 100 m'``.

Evaluator answer format: one or two sentences of reasoning naming what matched and what
did not, then ``The final score is $NN$.`` Tokens: words with their leading space, then
``" $"``, the score token(s), ``"$"``, ``"."``. At a score position ``top`` holds the top-k
(``sampling.top_logprobs``) alternatives with their true log-probs:

* ``whole``: the k most likely integers of ``p``.
* ``digits``: the score's decimal string is spelled one digit per token. At the first
  position the alternatives are the digits with their marginal probability
  ``P(first digit = d) = sum of p(n) over n whose string starts with d`` (so ``"1"``
  collects 1, 10-19 and 100); at later positions the conditional probability of each
  next digit given the chosen prefix, plus ``"$"`` for "the number ends here". The closing
  ``"$"`` carries that end-of-number probability (1 for a whole-number token).

Every draw comes from a numpy Generator seeded with a hash of (backend seed, model id,
prompt text, image hashes, sampling settings), so answers are deterministic.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

from judgebias.data import scenes
from judgebias.data.scenes import CaptionClaims, ClaimMatch, Scene, SceneObject
from judgebias.models.base import ChatRequest, ChatResponse, OnResponse, Sampling, TokenLogprob

# Bump when the simulated world answers differently, so journaled answers are not reused.
SIM_VERSION = "sim-2"  # sim-2: MMB judges draw their own landscape (issue 20)

REFERENCE_WEIGHT = 0.3  # share of reference agreement in the reference-based accuracy
MIN_NOISE = 0.005
TOKENIZERS = ("whole", "digits")
GENERATED_MARK = "Generated captions:\n"
FORMAT_MARK = "\n\nResponse Format:"
REFERENCE_MARK = "Reference captions:\n"
IMAGE_MARK = "\n\nImage is attached"
SCORE_LEAD = "The final score is"
_PERCEPTION_CACHE_SIZE = 2048

_DEFAULTS: dict[str, Any] = {
    "leniency": 0.6,
    "spread": 0.5,
    "self_preference": 0.0,
    "noise": 0.08,
    "tokenizer": "whole",
}
_KNOWN = {"caption_quality", "style", "preferences", *_DEFAULTS}


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
                 tasks: Sequence[SimTask] | None = None) -> None:
        """`models` maps model ids to traits; `family_openers` adds family styles
        (family -> opener) the judges can recognise without a member model present;
        `tasks` are the kinds of prompt it answers, tried in order (default:
        :func:`sim_tasks`)."""
        self.tasks = list(sim_tasks() if tasks is None else tasks)
        self.models = dict(models)
        self.seed = int(seed)
        self.openers = {(m.family, m.opener) for m in self.models.values()}
        self.openers |= set((family_openers or {}).items())
        self._perceived: OrderedDict[str, Scene] = OrderedDict()

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
        if digest in self._perceived:
            self._perceived.move_to_end(digest)
            return self._perceived[digest]
        scene = scenes.perceive(image)
        self._perceived[digest] = scene
        if len(self._perceived) > _PERCEPTION_CACHE_SIZE:
            self._perceived.popitem(last=False)
        return scene

    def style_bonus(self, evaluator: SimModel, caption: str) -> float:
        """Score bonus (0-1 units) the evaluator gives for the caption's style."""
        if has_signature(caption, evaluator.signature):
            return evaluator.self_preference
        bonus = 0.0
        for other in {m.key: m for m in self.models.values()}.values():
            if other.key != evaluator.key and has_signature(caption, other.signature):
                bonus += evaluator.model_preferences.get(other.key, 0.0)
        families = {family for family, opener in self.openers if has_opener(caption, opener)}
        return bonus + sum(evaluator.family_preferences.get(f, 0.0) for f in families)

    def evaluation(
        self, evaluator: SimModel, scene: Scene, caption: str, references: list[str] | None
    ) -> Evaluation:
        """Accuracy, latent mean score and the matching behind them (no sampling)."""
        claims = scenes.read_caption(caption)
        match = scenes.match_claims(claims, scenes.scene_claims(scene))
        accuracy = match.accuracy
        agreement = None
        if references:
            agreement = reference_agreement(claims, references)
            accuracy = (1 - REFERENCE_WEIGHT) * accuracy + REFERENCE_WEIGHT * agreement
        bonus = self.style_bonus(evaluator, caption)
        mean = latent_mean(evaluator, accuracy, bonus)
        return Evaluation(accuracy, agreement, bonus, mean, match)

    def _evaluation_tokens(
        self,
        evaluator: SimModel,
        scene: Scene,
        caption: str,
        references: list[str] | None,
        request: ChatRequest,
        rng: np.random.Generator,
    ) -> list[TokenLogprob]:
        result = self.evaluation(evaluator, scene, caption, references)
        shift = request_rng(self.seed, request, with_sampling=False).standard_normal()
        opinion = min(max(result.mean + evaluator.noise * shift, 0.0), 1.0)
        logp = score_logprobs(opinion, evaluator.noise)
        score = sample_score(logp, request.sampling, rng)
        reasoning = reasoning_text(result.match, result.agreement)
        tokens = _plain_tokens(reasoning, rng, (-0.8, -0.01))
        tokens += _plain_tokens(" " + SCORE_LEAD, rng, (-0.01, -0.0005))
        tokens.append(TokenLogprob(" $", -0.0005, ((" $", -0.0005),)))
        tokens += score_tokens(score, logp, evaluator.tokenizer, request.sampling.top_logprobs)
        tokens.append(TokenLogprob(".", -0.0002, ((".", -0.0002),)))
        return tokens


@dataclass(frozen=True)
class Evaluation:
    """What an evaluator makes of one caption before it samples a score."""

    accuracy: float
    agreement: float | None  # mean agreement with the references (reference-based only)
    bonus: float
    mean: float  # latent mean score m in [0, 1]
    match: ClaimMatch


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


# ---------------------------------------------------------------------- prompt reading


_CAPTION_REQUEST = re.compile(r"\b(provide|write|generate|give|produce)\b[^.?!]*\bcaption\b", re.I)


class SimTask(Protocol):
    """A kind of prompt the sim answers, recognised from the prompt text alone.

    A study whose prompts the core tasks do not cover declares its own (``Study.sim``,
    ``"module:TASKS"``); :func:`sim_tasks` puts them between the judging and the caption
    task, since the caption recogniser is the broadest.
    """

    name: str

    def recognise(self, prompt: str) -> bool: ...

    def tokens(self, backend: SimBackend, model: SimModel, request: ChatRequest
               ) -> list[TokenLogprob]: ...


@dataclass(frozen=True)
class GVEvalTask:
    """G-VEval judging (seed 000 Appendix C): the prompt contains "Generated captions:"."""

    name: str = "gveval"

    def recognise(self, prompt: str) -> bool:
        return GENERATED_MARK in prompt

    def tokens(self, backend: SimBackend, model: SimModel, request: ChatRequest
               ) -> list[TokenLogprob]:
        scene = backend.perceive(request)
        caption, references = parse_evaluation_prompt(request.prompt)
        return backend._evaluation_tokens(model, scene, caption, references, request,
                                          request_rng(backend.seed, request))


@dataclass(frozen=True)
class CaptionTask:
    """Captioning: a prompt that asks to provide/write/generate/give/produce a caption,
    so prompts of other tasks that merely mention captions are not answered with one."""

    name: str = "caption"

    def recognise(self, prompt: str) -> bool:
        return _CAPTION_REQUEST.search(prompt) is not None

    def tokens(self, backend: SimBackend, model: SimModel, request: ChatRequest
               ) -> list[TokenLogprob]:
        return caption_tokens(model, backend.perceive(request),
                              request_rng(backend.seed, request))


def sim_tasks() -> list[SimTask]:
    """The core tasks and every registered study's (judgebias.study), in the order tried."""
    from judgebias.study import registered

    studies = [task for study in registered().values() if study.sim
               for task in study.load("sim")]
    return [GVEvalTask(), *studies, CaptionTask()]


def parse_evaluation_prompt(prompt: str) -> tuple[str, list[str] | None]:
    """(caption, references or None) from a G-VEval prompt."""
    caption = between(prompt, GENERATED_MARK, FORMAT_MARK)
    if caption is None or not caption.strip():
        raise ValueError("no caption found after 'Generated captions:'")
    if REFERENCE_MARK not in prompt:
        return caption.strip(), None
    block = between(prompt, REFERENCE_MARK, IMAGE_MARK) or ""
    references = [line.strip() for line in block.split("\n") if line.strip()]
    return caption.strip(), references


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


def has_signature(caption: str, signature: str) -> bool:
    """Whether the signature occurs in the caption as whole words (case-insensitive)."""
    pattern = r"(?<!\w)" + re.escape(signature.lower()) + r"(?!\w)"
    return re.search(pattern, caption.lower()) is not None


def has_opener(caption: str, opener: str) -> bool:
    """Whether the caption starts with the opener (case-insensitive)."""
    return caption.strip().lower().startswith(opener.strip().lower())


# ---------------------------------------------------------------------------- generator


def described_scene(model: SimModel, scene: Scene, rng: np.random.Generator) -> Scene:
    """The scene as the model describes it: omissions and hallucinations per its quality."""
    q = model.caption_quality
    kept = [o for o in scene.objects if rng.random() >= (1 - q) / 2]
    if not kept and scene.objects:
        kept = [scene.objects[int(rng.integers(len(scene.objects)))]]
    objects = tuple(
        SceneObject(
            shape=_maybe_wrong(o.shape, scenes.SHAPES, q, rng),
            color=_maybe_wrong(o.color, tuple(scenes.OBJECT_COLORS), q, rng),
            size=o.size,
            position=o.position,
        )
        for o in kept
    )
    background = _maybe_wrong(scene.background, tuple(scenes.BACKGROUND_COLORS), q, rng)
    return Scene(background=background, objects=objects)


def _maybe_wrong(value: str, options: Sequence[str], q: float, rng: np.random.Generator) -> str:
    if rng.random() < q:
        return value
    wrong = [o for o in options if o != value]
    return wrong[int(rng.integers(len(wrong)))]


_MODEL_POSITION = {"left": "on the left", "center": "in the center", "right": "on the right"}


def caption_pieces(model: SimModel, described: Scene) -> list[tuple[str, str]]:
    """The caption as (text, kind) pieces; kind is "style", "content" or "plain"."""
    pieces: list[tuple[str, str]] = [(model.opener, "style")]
    for i, obj in enumerate(described.objects):
        if i > 0:
            last = i == len(described.objects) - 1
            pieces.append((" and" if last else ",", "plain"))
        pieces.append((" a", "plain"))
        pieces.append((f" {obj.size} {obj.color} {obj.shape}", "content"))
        pieces.append((" " + _MODEL_POSITION[obj.position], "plain"))
    if is_adverb(model.signature):
        pieces += [(",", "plain"), (" " + model.signature, "style"), (" arranged on a", "plain")]
    else:
        pieces += [(", set on a", "plain"), (" " + model.signature, "style")]
    pieces.append((f" {described.background}", "content"))
    pieces.append((" background.", "plain"))
    return pieces


def is_adverb(signature: str) -> bool:
    """Signatures ending in -ly are placed as adverbs, others as adjectives."""
    return signature.lower().endswith("ly")


def write_caption(
    model: SimModel, scene: Scene, rng: np.random.Generator, quality: float | None = None
) -> str:
    """A one-sentence caption of ``scene`` in the model's style.

    ``quality`` overrides the model's ``caption_quality`` (tests use 1.0 to write
    equally accurate captions in different styles).
    """
    if quality is not None:
        model = _with_quality(model, quality)
    text = "".join(piece for piece, _ in caption_pieces(model, described_scene(model, scene, rng)))
    return _capitalise(text)


def _with_quality(model: SimModel, quality: float) -> SimModel:
    return replace(model, caption_quality=float(quality))


def caption_tokens(model: SimModel, scene: Scene, rng: np.random.Generator) -> list[TokenLogprob]:
    """Generator answer tokens; style words are near-certain, like a model's own habits."""
    described = described_scene(model, scene, rng)
    ranges = {"style": (-0.12, -0.005), "content": (-1.5, -0.05), "plain": (-0.6, -0.01)}
    tokens: list[TokenLogprob] = []
    for piece, kind in caption_pieces(model, described):
        if not tokens:
            piece = _capitalise(piece)
        tokens += _plain_tokens(piece, rng, ranges[kind])
    return tokens


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _plain_tokens(
    text: str, rng: np.random.Generator, logprob_range: tuple[float, float]
) -> list[TokenLogprob]:
    """Coarse tokens (a word with its leading space, or punctuation) with drawn log-probs.

    The split covers every character, so concatenating the tokens reproduces ``text``.
    """
    low, high = logprob_range
    out: list[TokenLogprob] = []
    for token in re.findall(r" ?[^ ,.:;]+|[,.:;]| ", text):
        logprob = round(float(rng.uniform(low, high)), 4)
        out.append(TokenLogprob(token, logprob, ((token, logprob),)))
    return out


# ---------------------------------------------------------------------------- evaluator


def reference_agreement(claims: CaptionClaims, references: Sequence[str]) -> float:
    """Mean accuracy of the claims measured against each reference's claims."""
    scores = [scenes.match_claims(claims, scenes.read_caption(r)).accuracy for r in references]
    return float(np.mean(scores)) if scores else 0.0


def latent_mean(evaluator: SimModel, accuracy: float, bonus: float) -> float:
    """m = clip(leniency + spread * (accuracy - 0.5) + bonus, 0, 1)."""
    value = evaluator.leniency + evaluator.spread * (accuracy - 0.5) + bonus
    return float(min(max(value, 0.0), 1.0))


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
    within = [n for n, s in enumerate(_STRINGS) if s.startswith(prefix)]
    total = logsumexp(logp[within])
    options: dict[str, float] = {}
    for digit in "0123456789":
        members = [n for n in within if _STRINGS[n].startswith(prefix + digit)]
        if members:
            options[digit] = float(logsumexp(logp[members]) - total)
    if prefix:
        options["$"] = float(logp[int(prefix)] - total)
    return options


# ---------------------------------------------------------------------------- reasoning


def reasoning_text(match: ClaimMatch, agreement: float | None) -> str:
    """One or two sentences naming what the caption got right and wrong."""
    right = [f"the {scenes.name_object(o)}" for o in match.correct]
    if match.background_true and match.background_claimed == match.background_true:
        right.append(f"the {match.background_true} background")
    problems = [
        f"it calls the {scenes.name_object(t)} a {scenes.name_object(c)}" for c, t in match.wrong
    ]
    problems += [f"it misses the {scenes.name_object(o)}" for o in match.missing]
    problems += [
        f"it mentions a {scenes.name_object(o)} that is not in the image"
        for o in match.hallucinated
    ]
    if match.background_claimed and match.background_claimed != match.background_true:
        problems.append(
            f"the background is {match.background_true}, not {match.background_claimed}"
        )
    elif match.background_claimed is None and match.background_true:
        problems.append(f"it does not mention the {match.background_true} background")
    first = (
        f"The caption correctly describes {scenes.join_phrases(right)}."
        if right
        else "The caption does not describe the main content of the image correctly."
    )
    references = "" if agreement is None else f"{_agreement_word(agreement)} the reference captions"
    if problems:
        second = "However, " + scenes.join_phrases(problems)
        second += f", and it {references}." if references else "."
    else:
        second = "It contains no errors" + (f" and {references}." if references else ".")
    return f"{first} {second}"


def _agreement_word(agreement: float) -> str:
    if agreement >= 0.9:
        return "agrees closely with"
    if agreement >= 0.6:
        return "partly agrees with"
    return "disagrees with"
