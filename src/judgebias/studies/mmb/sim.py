"""What the ``sim`` backend answers for MMB: a pairwise image judge with planted, per-style
instruction reliability (spec mmb.md, "What the simulated judge must plant"), and an
instruction writer that grows the pool.

Pairwise judging (:class:`PairwiseTask`)
----------------------------------------
Recognised by the mmb_pairwise template's line ``Both images were generated for the
prompt:`` in either layout (``mmb.layout``, params.py): ``paper``, the instruction before
that line and the images after the text; ``shared_first``
(mmb_pairwise_shared_first), the images first, then that line and the answer format,
then the instruction. The judge looks at both images with
:func:`judgebias.studies.mmb.data.synthetic.perceive` (style, quality and brightness, from the
pixels alone) and, with traits from the model's ``sim.mmb`` block, answers::

    logit = beta(a, s) * (q_first - q_second) + b(a)
            + brightness_bias * (brightness_first - brightness_second)
            + layout_shift * [the images come first] + noise * z
    p(first preferred) = sigmoid(logit)

with z ~ N(0, 1) drawn per request (the judge's opinion of this pair under this wording,
and in this layout: z is drawn from the request, whose text differs between layouts).
``layout_shift`` (default 0) is what the layout itself does to the judge: its pull
towards the image shown first moves by it when the images come before the text, as they
do in the ``shared_first`` layout (read from the request's parts, as a model sees them).
The layout check (steps.layout_check) measures it; a judge with 0 answers both layouts
alike up to z.
``beta(a, s)`` is the instruction's slope on the style ``s`` (the mean over the two
images' styles when they differ):

* the instruction that contains the style's expert phrase (``experts: {style: phrase}``)
  is calibrated on it: ``beta = gamma``, the simulated humans' own slope (they prefer the
  better image with probability sigmoid(gamma * dq), judgebias.studies.mmb.data.synthetic);
* any other (instruction, style) is miscalibrated with probability ``miscalibrated``
  (default 1) and then draws a kind: over-confident (45 %: ``beta = gamma * U(2.5, 4.5)``),
  flat (30 %: ``gamma * U(0.05, 0.3)``) or reversed (25 %: ``-gamma * U(0.3, 1.0)``);
  otherwise it is calibrated too (``beta = gamma``).

``b(a)``, the instruction's position bias, is ``position_bias * U(-1, 1)`` (experts
included).

Every draw of the landscape (kind, size, position bias) comes from a hash of
(the backend's seed, the judge's panel key, the instruction text, the style): each judge
and each world seed has its own landscape, deterministic from recorded values. Before
issue 20 the hash held only the text and the style, so every simulated judge in every
world shared one landscape (the slopes MMB is fitted to were a property of the pool, not
of the judge). A judge with ``miscalibrated: 0``, ``position_bias: 0`` and
``brightness_bias: 0`` has no bias at all: every instruction is the humans' own law, and
every ensemble predicts the same. ``brightness_bias`` is the attribute the judge wrongly
favours, which shows on no-preference pairs (MJBench protocol). The answer is
``Judgement: [[A]]`` or ``[[B]]``; at the label's position ``top`` holds both labels with
their log-probs, so the judging core reads ``p`` back exactly (LabelProbabilities). The
label is drawn from ``p`` tempered by the sampling temperature (T = 0 takes the likelier).

Instruction writing (:class:`RephraseTask`)
-------------------------------------------
Recognised by the mmb_rephrase template's opening; answers the instruction reworded by
seeded synonym swaps (at least one), so a grown pool has new, deterministic texts.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebias.models.base import ChatRequest, TokenLogprob
from judgebias.models.sim import SimBackend, SimModel, request_rng

PAIR_MARK = "\n\nBoth images were generated for the prompt:"
# the shared_first layout: the images, then this line first, the instruction last (after
# the answer format's line)
SHARED_FIRST_MARK = "Both images were generated for the prompt:"
ANSWER_MARK = "as Judgement: [[A]] or Judgement: [[B]]."
REPHRASE_MARK = "Rewrite the following instruction for judging"
INSTRUCTION_MARK = "Instruction:"
LABELS = ("A", "B")

if TYPE_CHECKING:
    from judgebias.studies.mmb.data.synthetic import Percept


@dataclass(frozen=True)
class JudgeTraits:
    """A simulated judge's MMB traits (the ``sim.mmb`` block of a panel model)."""

    experts: Mapping[str, str]
    gamma: float = 6.0
    position_bias: float = 0.5
    brightness_bias: float = 0.0
    noise: float = 0.3
    miscalibrated: float = 1.0
    layout_shift: float = 0.0
    world: str = ""  # "<backend seed>|<panel key>": whose landscape (module docstring)

    @classmethod
    def of(cls, model: SimModel, seed: int = 0) -> JudgeTraits:
        """`model`'s traits in the world of backend seed `seed`."""
        block = model.extra.get("mmb")
        if not isinstance(block, Mapping) or not isinstance(block.get("experts"), Mapping):
            raise ValueError(f"model {model.key!r} has no sim.mmb traits with 'experts'")
        return cls(experts=dict(block["experts"]), world=landscape_key(seed, model.key),
                   **{k: float(block[k]) for k in cls.numeric_traits() if k in block})

    @classmethod
    def numeric_traits(cls) -> tuple[str, ...]:
        """The traits a params block gives as numbers (params.SIM_TRAITS checks them)."""
        return tuple(f.name for f in fields(cls) if f.name not in ("experts", "world"))


def landscape_key(seed: int, judge: str) -> str:
    """Whose landscape: the world seed and the judge's panel key."""
    return f"{int(seed)}|{judge}"


def _uniforms(*parts: str) -> np.ndarray:
    digest = hashlib.sha256("|".join(parts).encode("utf-8")).digest()
    return np.frombuffer(digest[:24], dtype=np.uint64) / float(2**64)


def slope(traits: JudgeTraits, instruction: str, style: str | None) -> float:
    """beta(a, s) of the module docstring."""
    phrase = traits.experts.get(style or "")
    if phrase and phrase.casefold() in instruction.casefold():
        return traits.gamma
    calibrated, kind, size = _uniforms("slope", traits.world, instruction, style or "")
    if calibrated >= traits.miscalibrated:
        return traits.gamma
    if kind < 0.45:
        return traits.gamma * (2.5 + 2.0 * size)
    if kind < 0.75:
        return traits.gamma * (0.05 + 0.25 * size)
    return -traits.gamma * (0.3 + 0.7 * size)


def position_bias(traits: JudgeTraits, instruction: str) -> float:
    """b(a) of the module docstring: the instruction's pull towards the first image."""
    draw = float(_uniforms("position", traits.world, instruction)[0])
    return traits.position_bias * (2.0 * draw - 1.0)


def expert_instruction(traits: JudgeTraits, style: str, pool: Mapping[str, str]) -> str | None:
    """The id of the pool instruction planted as best for `style` (None if none is)."""
    phrase = traits.experts.get(style, "").casefold()
    found = [i for i, text in pool.items() if phrase and phrase in text.casefold()]
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class PairwiseTask:
    """The MMB pairwise judge (module docstring)."""

    name: str = "mmb_pairwise"

    def recognise(self, prompt: str) -> bool:
        return PAIR_MARK in prompt or prompt.startswith(SHARED_FIRST_MARK)

    def tokens(self, backend: SimBackend, model: SimModel, request: ChatRequest
               ) -> list[TokenLogprob]:
        from judgebias.studies.mmb.data.synthetic import perceive

        traits = JudgeTraits.of(model, backend.seed)
        if len(request.images) != 2:
            raise ValueError(f"a pairwise judgement needs 2 images, got {len(request.images)}")
        first, second = (perceive(image) for image in request.images)
        opinion = request_rng(backend.seed, request, with_sampling=False).standard_normal()
        logit = judge_logit(traits, instruction_of(request.prompt), first, second, opinion,
                            images_first=isinstance(request.parts()[0], bytes))
        return verdict_tokens(logit, request, request_rng(backend.seed, request))


def instruction_of(prompt: str) -> str:
    """The instruction of a pairwise prompt in either layout (module docstring)."""
    if PAIR_MARK in prompt:
        return prompt.split(PAIR_MARK, 1)[0].strip()
    if ANSWER_MARK not in prompt:
        raise ValueError("no instruction after the answer format's line")
    return prompt.split(ANSWER_MARK, 1)[1].strip()


def judge_logit(traits: JudgeTraits, instruction: str, first: Percept, second: Percept,
                opinion: float, *, images_first: bool = False) -> float:
    """The module docstring's logit of "the first image is better"; `opinion` is z,
    `images_first` whether the images came before the text."""
    beta = (slope(traits, instruction, first.style)
            + slope(traits, instruction, second.style)) / 2
    return (beta * (first.quality - second.quality) + position_bias(traits, instruction)
            + traits.brightness_bias * (first.brightness - second.brightness)
            + traits.layout_shift * images_first + traits.noise * opinion)


def verdict_tokens(logit: float, request: ChatRequest, rng: np.random.Generator
                   ) -> list[TokenLogprob]:
    """``Judgement: [[A]]`` with both labels' log-probs at the label position."""
    log_first = -math.log1p(math.exp(-logit)) if logit > -30 else logit
    log_second = -math.log1p(math.exp(logit)) if logit < 30 else -logit
    temperature = request.sampling.temperature
    if temperature <= 0:
        label = LABELS[0] if log_first >= log_second else LABELS[1]
    else:
        tempered = np.array([log_first, log_second]) / temperature
        p_first = 1.0 / (1.0 + math.exp(float(np.clip(tempered[1] - tempered[0], -700, 700))))
        label = LABELS[0] if rng.random() < p_first else LABELS[1]
    top = tuple(sorted(zip(LABELS, (log_first, log_second), strict=True),
                       key=lambda item: -item[1]))
    chosen = dict(top)[label]
    return [TokenLogprob("Judgement", -0.01, (("Judgement", -0.01),)),
            TokenLogprob(":", -0.001, ((":", -0.001),)),
            TokenLogprob(" [[", -0.001, ((" [[", -0.001),)),
            TokenLogprob(label, chosen, top),
            TokenLogprob("]]", -0.0005, (("]]", -0.0005),))]


_SWAPS = {
    "image": "picture", "images": "pictures", "better": "superior", "judge": "assess",
    "decide": "determine", "choose": "select", "pick": "select", "prompt": "description",
    "prefer": "favour", "generated": "synthesised", "quality": "standard",
}


@dataclass(frozen=True)
class RephraseTask:
    """The instruction writer (module docstring)."""

    name: str = "mmb_rephrase"

    def recognise(self, prompt: str) -> bool:
        return prompt.startswith(REPHRASE_MARK)

    def tokens(self, backend: SimBackend, model: SimModel, request: ChatRequest
               ) -> list[TokenLogprob]:
        text = request.prompt.rsplit(INSTRUCTION_MARK, 1)[-1].strip()
        if not text:
            raise ValueError("no instruction to rewrite")
        rng = request_rng(backend.seed, request)
        words = re.findall(r"\w+|\W+", text)
        swappable = [i for i, w in enumerate(words) if w.lower() in _SWAPS]
        chosen = set(rng.permutation(swappable)[: max(1, len(swappable) // 2)].tolist())
        out = [_swap(w) if i in chosen else w for i, w in enumerate(words)]
        if not chosen:
            out = ["In your view, ", text[:1].lower(), text[1:]]
        return [TokenLogprob(piece, -0.2, ((piece, -0.2),)) for piece in out if piece]


def _swap(word: str) -> str:
    new = _SWAPS[word.lower()]
    return new[:1].upper() + new[1:] if word[:1].isupper() else new


TASKS: list[Any] = [PairwiseTask(), RephraseTask()]
