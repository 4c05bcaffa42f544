"""Philautia's simulated judge: the sim backend's answers to G-VEval judging and captioning
(judgebias.models.sim holds the backend and the traits; Pomms judges with the same prompt).

The tasks, recognised from the prompt text (``TASKS``, declared as ``Study.sim``):

* **evaluator** (G-VEval prompts): the prompt contains ``"Generated captions:\\n"``; the
  caption is the text from there to ``"\\n\\nResponse Format:"``. It is *reference-based*
  when the prompt contains ``"Reference captions:\\n"``; the references are the lines from
  there to ``"\\n\\nImage is attached"``.
* **generator**: any other prompt that asks to provide / write / generate / give /
  produce a caption (e.g. ``"Provide a one-sentence caption for the provided image."``).

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

Evaluator answer format: one or two sentences of reasoning naming what matched and what
did not, then ``The final score is $NN$.`` Tokens: words with their leading space, then
``" $"``, the score token(s), ``"$"``, ``"."``. The score is drawn from ``p`` and spelled
as the model's ``tokenizer`` says (judgebias.models.sim: "Score distribution and tokens").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from judgebias.data import scenes
from judgebias.data.scenes import CaptionClaims, ClaimMatch, Scene, SceneObject
from judgebias.models.base import ChatRequest, TokenLogprob
from judgebias.models.sim import (
    SimBackend,
    SimModel,
    between,
    request_rng,
    sample_score,
    score_logprobs,
    score_tokens,
)

REFERENCE_WEIGHT = 0.3  # share of reference agreement in the reference-based accuracy
GENERATED_MARK = "Generated captions:\n"
FORMAT_MARK = "\n\nResponse Format:"
REFERENCE_MARK = "Reference captions:\n"
IMAGE_MARK = "\n\nImage is attached"
SCORE_LEAD = "The final score is"


# ------------------------------------------------------------------------------- tasks


_CAPTION_REQUEST = re.compile(r"\b(provide|write|generate|give|produce)\b[^.?!]*\bcaption\b", re.I)


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
        return evaluation_tokens(backend, model, scene, caption, references, request,
                                 request_rng(backend.seed, request))


@dataclass(frozen=True)
class CaptionTask:
    """Captioning: a prompt that asks to provide/write/generate/give/produce a caption,
    so prompts of other tasks that merely mention captions are not answered with one."""

    name: str = "caption"
    broad: bool = True  # any prompt asking for a caption: tried after every other task

    def recognise(self, prompt: str) -> bool:
        return _CAPTION_REQUEST.search(prompt) is not None

    def tokens(self, backend: SimBackend, model: SimModel, request: ChatRequest
               ) -> list[TokenLogprob]:
        return caption_tokens(model, backend.perceive(request),
                              request_rng(backend.seed, request))


TASKS = [GVEvalTask(), CaptionTask()]


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
    words = re.findall(r" ?[^ ,.:;]+|[,.:;]| ", text)
    # one draw per token, as many scalar draws in a row would give, in one call
    drawn = rng.uniform(low, high, size=len(words)).tolist()
    return [TokenLogprob(token, logprob, ((token, logprob),))
            for token, logprob in zip(words, (round(x, 4) for x in drawn), strict=True)]


# ---------------------------------------------------------------------------- evaluator


def reference_agreement(claims: CaptionClaims, references: Sequence[str]) -> float:
    """Mean accuracy of the claims measured against each reference's claims."""
    scores = [scenes.match_claims(claims, scenes.read_caption(r)).accuracy for r in references]
    return float(np.mean(scores)) if scores else 0.0


def latent_mean(evaluator: SimModel, accuracy: float, bonus: float) -> float:
    """m = clip(leniency + spread * (accuracy - 0.5) + bonus, 0, 1)."""
    value = evaluator.leniency + evaluator.spread * (accuracy - 0.5) + bonus
    return float(min(max(value, 0.0), 1.0))


def style_bonus(backend: SimBackend, evaluator: SimModel, caption: str) -> float:
    """Score bonus (0-1 units) the evaluator gives for the caption's style."""
    if has_signature(caption, evaluator.signature):
        return evaluator.self_preference
    bonus = 0.0
    for other in {m.key: m for m in backend.models.values()}.values():
        if other.key != evaluator.key and has_signature(caption, other.signature):
            bonus += evaluator.model_preferences.get(other.key, 0.0)
    families = {family for family, opener in backend.openers if has_opener(caption, opener)}
    return bonus + sum(evaluator.family_preferences.get(f, 0.0) for f in families)


def evaluation(
    backend: SimBackend, evaluator: SimModel, scene: Scene, caption: str,
    references: list[str] | None
) -> Evaluation:
    """Accuracy, latent mean score and the matching behind them (no sampling)."""
    claims = scenes.read_caption(caption)
    match = scenes.match_claims(claims, scenes.scene_claims(scene))
    accuracy = match.accuracy
    agreement = None
    if references:
        agreement = reference_agreement(claims, references)
        accuracy = (1 - REFERENCE_WEIGHT) * accuracy + REFERENCE_WEIGHT * agreement
    bonus = style_bonus(backend, evaluator, caption)
    mean = latent_mean(evaluator, accuracy, bonus)
    return Evaluation(accuracy, agreement, bonus, mean, match)


def evaluation_tokens(
    backend: SimBackend,
    evaluator: SimModel,
    scene: Scene,
    caption: str,
    references: list[str] | None,
    request: ChatRequest,
    rng: np.random.Generator,
) -> list[TokenLogprob]:
    """The evaluator's answer (module docstring: "Evaluator answer format")."""
    result = evaluation(backend, evaluator, scene, caption, references)
    shift = request_rng(backend.seed, request, with_sampling=False).standard_normal()
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
