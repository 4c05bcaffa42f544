"""Reading a judge's answer: answer kinds, each parsing one answer format into an `Answer`.

Why one module of kinds: every study asks its judge for a different format -- an integer
score (G-VEval, seed 000 Appendix C), a decimal score (FRAME, seed 004 Figs. 4-7), a
pairwise verdict (MLLM-as-a-Judge / BIRCH ``[[A]]``, seed 003 Figs. 18-21; FRAME's
``first`` / ``second`` / ``tie``, seed 004 Fig. 8) or label probabilities (MMB, seed 002).
Each kind reads its format strictly and says *why* an answer is unusable instead of
guessing: an answer without a clean verdict keeps its status and is counted, never turned
into a number.

Statuses (`Answer.status`)
--------------------------
``ok``            a usable value.
``unparseable``   no value in the kind's format.
``out_of_range``  a number outside the kind's scale (the number is kept in ``value``).
``truncated``     the answer was cut off by ``max_tokens`` (``finish_reason == "length"``):
                  whatever was parsed is kept in ``value`` (and ``expected``/``probs``) for
                  audit only. Every kind applies this rule; any other finish reason is
                  treated as a completed answer.
``ambiguous``     two different values where one verdict is expected (a rubric echo
                  ``from $0$ to $100$`` without the lead phrase, ``[[A]] or [[B]]``).
``tie``           a choice naming a tie label; ``value`` is that label.
``no_logprobs``   label probabilities were asked for but the answer carries no usable
                  log-probs at the verdict position; ``value`` keeps the parsed label so the
                  caller can apply its documented smoothing.

`Answer.value` is what was read from the text whatever the status; use it only where
`Answer.ok` (or where the caller handles ``tie`` itself).

Kinds (``ANSWER_KINDS``; build one from params with `answer_kind`)
-----------------------------------------------------------------
``score_0_100`` (`IntegerScore`)     G-VEval ``The final score is $NN$.``, with the exact
                                     log-prob expected score (`judgebias.judging.expected`).
``score_0_5`` (`DecimalScore`)       FRAME ``Score: X.X`` or a bare number.
``choice`` (`Choice`)                a pairwise verdict: ``[[A]]`` or ``first``.
``label_probs`` (`LabelProbabilities`)  MMB's p(y | x, a) from the verdict token's log-probs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from itertools import pairwise
from typing import Any, ClassVar, Protocol

from judgebias.judging.expected import conditional_expectation
from judgebias.models.base import TokenLogprob

STATUS_OK = "ok"
STATUS_UNPARSEABLE = "unparseable"
STATUS_OUT_OF_RANGE = "out_of_range"
STATUS_TRUNCATED = "truncated"
STATUS_AMBIGUOUS = "ambiguous"
STATUS_TIE = "tie"
STATUS_NO_LOGPROBS = "no_logprobs"

FINISH_TRUNCATED = "length"  # the finish_reason of an answer cut off by max_tokens

CHOICE_STYLES = ("brackets", "words")

_INTEGER_IN_DOLLARS = r"\$\s*(-?[0-9]+)\s*\$"
_DECIMAL = r"[-+]?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
_MARKUP = "*_`\"'‘’“”"  # markdown emphasis and quotes around a verdict or a lead


@dataclass(frozen=True)
class Answer:
    """What one answer yields.

    Attributes
    ----------
    status
        One of the ``STATUS_*`` constants (see the module docstring).
    value
        The score on the kind's own scale (``IntegerScore``: int 0..100; ``DecimalScore``:
        float), or the verdict label; None when nothing was read.
    expected
        The log-prob expected score (score kinds with tokens), on the kind's scale; None
        when it cannot be computed: the caller falls back to ``value`` and counts it.
    mass
        The probability mass the expectation or the label probabilities used (a
        diagnostic: little mass means the top-k log-probs said little).
    probs
        Label -> probability (``label_probs`` kind); treat as read-only.
    """

    status: str
    value: float | str | None = None
    expected: float | None = None
    mass: float | None = None
    probs: Mapping[str, float] | None = None

    @property
    def ok(self) -> bool:
        """True only for a usable value (a ``tie`` is a valid verdict but not ``ok``)."""
        return self.status == STATUS_OK


class AnswerKind(Protocol):
    """An answer format: a name for params and a parser."""

    name: ClassVar[str]

    def parse(
        self, text: str, tokens: Sequence[TokenLogprob] | None = None,
        finish_reason: str = "stop",
    ) -> Answer: ...


# ------------------------------------------------------------------------------ helpers


def _finish(answer: Answer, finish_reason: str) -> Answer:
    """Mark an answer cut off by max_tokens as truncated, keeping what was parsed."""
    if finish_reason == FINISH_TRUNCATED:
        return replace(answer, status=STATUS_TRUNCATED)
    return answer


def _phrase(phrase: str) -> str:
    """A regex for a lead phrase: any case (the caller sets re.I), any run of whitespace
    between words, markdown emphasis (``**``) allowed around and inside it, and not
    glued to a preceding letter or digit ("Subscore:" is not "Score:")."""
    parts = re.findall(r"\w+|[^\w\s]", phrase)
    if not parts:
        raise ValueError(f"lead phrase {phrase!r} has no words")
    pattern = re.escape(parts[0])
    for before, part in pairwise(parts):
        gap = r"[*_]*\s+[*_]*" if before[-1].isalnum() and part[0].isalnum() else r"[\s*_]*"
        pattern += gap + re.escape(part)
    return r"(?<![A-Za-z0-9])" + pattern


def _spells(tokens: Sequence[TokenLogprob], text: str, end: int) -> bool:
    """Whether the tokens spell the answer text up to `end` and the character after it
    (so the token that closes the value is the text's too)."""
    joined = "".join(t.token for t in tokens)
    return joined[: end + 1] == text[: end + 1]


def _check_scale(kind: Any, *, integer: bool) -> None:
    """Validate (and normalise the type of) a score kind's `low`, `high` and `lead`."""
    for field_name in ("low", "high"):
        value = getattr(kind, field_name)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (integer and not float(value).is_integer()):
            what = "an integer" if integer else "a number"
            raise ValueError(f"{kind.name}: {field_name!r} must be {what}, got {value!r}")
        object.__setattr__(kind, field_name, int(value) if integer else float(value))
    if kind.low > kind.high:
        raise ValueError(f"{kind.name}: low {kind.low} > high {kind.high}")
    if kind.lead:
        _phrase(kind.lead)


def _labels(values: Sequence[str], what: str) -> tuple[str, ...]:
    """Labels as a tuple of non-empty strings (params give lists)."""
    if isinstance(values, str):
        raise ValueError(f"{what} must be a list of labels, got the string {values!r}")
    labels = tuple(values)
    if any(not isinstance(v, str) or not v.strip() for v in labels):
        raise ValueError(f"{what} must be non-empty strings, got {labels!r}")
    return labels


# ------------------------------------------------------------------------- integer score


@dataclass(frozen=True)
class IntegerScore:
    """An integer score written ``$NN$`` after a lead phrase (G-VEval, seed 000 App. C).

    Reading, in order:

    1. The last ``<lead> $NN$`` (lead in any case, any whitespace, optional ``**`` or
       ``:`` between lead and score, spaces inside the dollars). If the lead phrase occurs
       but is never followed by a ``$NN$``, the answer is unparseable: with a lead
       present a number elsewhere (a rubric echo ``from $0$ to $100$``) is never taken.
    2. Without the lead phrase: a ``$NN$`` is taken only if the text holds exactly one
       distinct ``$NN$`` value; several -> ambiguous; none -> unparseable.
    3. A value outside ``[low, high]`` -> out_of_range (value kept). A bare number without
       dollars (``The final score is 85.``) is not read: the prompt asks for ``$NN$``.

    ``expected`` is `conditional_expectation` over the score's characters when tokens are
    given and spell the text up to the character after the score; otherwise None.
    An empty ``lead`` skips step 1.
    """

    low: int = 0
    high: int = 100
    lead: str = "The final score is"
    name: ClassVar[str] = "score_0_100"

    def __post_init__(self) -> None:
        _check_scale(self, integer=True)

    def parse(
        self, text: str, tokens: Sequence[TokenLogprob] | None = None,
        finish_reason: str = "stop",
    ) -> Answer:
        """Parse one answer (see the class docstring)."""
        return _finish(self._parse(text or "", tokens), finish_reason)

    def _parse(self, text: str, tokens: Sequence[TokenLogprob] | None) -> Answer:
        match = None
        if self.lead:
            lead = _phrase(self.lead)
            scored = list(re.finditer(lead + r"[\s*_:]*" + _INTEGER_IN_DOLLARS, text, re.I))
            if scored:
                match = scored[-1]
            elif re.search(lead, text, re.I):
                return Answer(STATUS_UNPARSEABLE)
        if match is None:
            found = list(re.finditer(_INTEGER_IN_DOLLARS, text))
            if not found:
                return Answer(STATUS_UNPARSEABLE)
            if len({int(m.group(1)) for m in found}) > 1:
                return Answer(STATUS_AMBIGUOUS)
            match = found[-1]
        value = int(match.group(1))
        if not self.low <= value <= self.high:
            return Answer(STATUS_OUT_OF_RANGE, value)
        start, end = match.span(1)
        if not tokens or not _spells(tokens, text, end):
            return Answer(STATUS_OK, value)
        result = conditional_expectation(tokens, start, end, low=self.low, high=self.high)
        if result is None:
            return Answer(STATUS_OK, value)
        return Answer(STATUS_OK, value, expected=result[0], mass=result[1])


def parse_score(
    text: str, tokens: Sequence[TokenLogprob] | None = None, finish_reason: str = "stop"
) -> Answer:
    """The G-VEval score of an answer: ``IntegerScore().parse(text, tokens, finish_reason)``."""
    return IntegerScore().parse(text, tokens, finish_reason)


# ------------------------------------------------------------------------- decimal score


@dataclass(frozen=True)
class DecimalScore:
    """A decimal score such as FRAME's ``Score: 3.5`` on 0.0-5.0 (seed 004 Figs. 4-7).

    Reading: the number right after the *last* occurrence of the lead (any case, markdown
    ``**`` allowed; "Subscore:" does not count); if that last lead is not followed by a
    number (``Score: X.X`` echoed from the prompt), the answer is unparseable. Without the
    lead, the whole answer must be one number (whitespace, markdown, quotes and a final
    period aside: ``"3.5"``, ``"**4**"``); anything else is unparseable. Outside
    ``[low, high]`` -> out_of_range (value kept).

    No expected value (``expected`` is None): a decimal is spelled over several tokens
    ("3", ".", "5") and the standard prompts forbid other text, so an expectation over the
    decimal digits is not defined by the formats these studies use.
    """

    low: float = 0.0
    high: float = 5.0
    lead: str = "Score:"
    name: ClassVar[str] = "score_0_5"

    def __post_init__(self) -> None:
        _check_scale(self, integer=False)

    def parse(
        self, text: str, tokens: Sequence[TokenLogprob] | None = None,
        finish_reason: str = "stop",
    ) -> Answer:
        """Parse one answer (see the class docstring); `tokens` are not used."""
        return _finish(self._parse(text or ""), finish_reason)

    def _parse(self, text: str) -> Answer:
        number: str | None = None
        leads = list(re.finditer(_phrase(self.lead), text, re.I)) if self.lead else []
        if leads:
            after = re.match(r"[\s*_]*(" + _DECIMAL + r")(?![0-9])", text[leads[-1].end():])
            if after is None:
                return Answer(STATUS_UNPARSEABLE)
            number = after.group(1)
        else:
            marks = re.escape(_MARKUP)
            whole = re.fullmatch(rf"[\s{marks}]*({_DECIMAL})[\s{marks}]*\.?[\s{marks}]*", text)
            if whole is None:
                return Answer(STATUS_UNPARSEABLE)
            number = whole.group(1)
        value = float(number)
        if not self.low <= value <= self.high:
            return Answer(STATUS_OUT_OF_RANGE, value)
        return Answer(STATUS_OK, value)


# -------------------------------------------------------------------------------- choice


@dataclass(frozen=True)
class _Verdict:
    """A choice read from the text: status, canonical label and its character span."""

    status: str
    label: str | None = None
    start: int = -1
    end: int = -1


@dataclass(frozen=True)
class Choice:
    """A pairwise verdict: ``[[A]]``-style brackets or ``first``/``second``/``tie`` words.

    Labels match in any case and are returned as given in ``labels``/``tie_labels``.

    ``style="brackets"`` (MLLM-as-a-Judge / BIRCH, seed 003 Figs. 18-21:
    ``Judgement: [[A]]``): the verdict is the *last* ``[[label]]`` in the text (spaces
    inside the brackets allowed). If the line holding it holds another, different
    bracketed label (``Judgement: [[A]] or [[B]]``, the prompt's format line echoed) the
    answer is ambiguous. Earlier lines do not count: reasoning may cite ``[[A]]`` before
    the final ``[[B]]``.

    ``style="words"`` (FRAME Fig. 8, seed 004: labels ``("first", "second")``, tie label
    ``("tie",)``): if the last non-empty line is just a label, optionally after a short
    ``Something:`` prefix and wrapped in markdown, quotes or a final period
    (``"first"``, ``"Answer: **second**."``), that label is the verdict. Otherwise the
    label words (whole words) in the whole text decide: exactly one distinct label -> it;
    several -> ambiguous.

    A tie label -> status ``tie`` with the label as value; no label -> unparseable.
    """

    labels: tuple[str, ...] = ("A", "B")
    tie_labels: tuple[str, ...] = ("C",)
    style: str = "brackets"
    name: ClassVar[str] = "choice"

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", _labels(self.labels, f"{self.name}: labels"))
        object.__setattr__(self, "tie_labels", _labels(self.tie_labels,
                                                       f"{self.name}: tie_labels"))
        if not self.labels:
            raise ValueError(f"{self.name}: at least one label is needed")
        every = [label.strip().casefold() for label in (*self.labels, *self.tie_labels)]
        if len(set(every)) != len(every):
            raise ValueError(f"{self.name}: labels and tie labels must differ (in any case), "
                             f"got {self.labels!r} and {self.tie_labels!r}")
        if self.style not in CHOICE_STYLES:
            raise ValueError(f"{self.name}: style must be one of {list(CHOICE_STYLES)}, "
                             f"got {self.style!r}")

    def parse(
        self, text: str, tokens: Sequence[TokenLogprob] | None = None,
        finish_reason: str = "stop",
    ) -> Answer:
        """Parse one answer (see the class docstring); `tokens` are not used."""
        verdict = self._verdict(text or "")
        status = verdict.status
        if status == STATUS_OK and verdict.label in self.tie_labels:
            status = STATUS_TIE
        return _finish(Answer(status, verdict.label), finish_reason)

    def _canonical(self, found: str) -> str:
        key = " ".join(found.split()).casefold()
        return next(label for label in (*self.labels, *self.tie_labels)
                    if " ".join(label.split()).casefold() == key)

    def _alternation(self) -> str:
        every = sorted((*self.labels, *self.tie_labels), key=len, reverse=True)
        return "|".join(r"\s+".join(re.escape(w) for w in label.split()) for label in every)

    def _verdict(self, text: str) -> _Verdict:
        if self.style == "brackets":
            return self._brackets(text)
        return self._words(text)

    def _brackets(self, text: str) -> _Verdict:
        found = list(re.finditer(r"\[\[\s*(" + self._alternation() + r")\s*\]\]", text, re.I))
        if not found:
            return _Verdict(STATUS_UNPARSEABLE)
        last = found[-1]
        line_start = text.rfind("\n", 0, last.start()) + 1
        on_line = {self._canonical(m.group(1)) for m in found if m.start() >= line_start}
        if len(on_line) > 1:
            return _Verdict(STATUS_AMBIGUOUS)
        return _Verdict(STATUS_OK, self._canonical(last.group(1)), *last.span(1))

    def _words(self, text: str) -> _Verdict:
        words = r"(?<![A-Za-z0-9])(" + self._alternation() + r")(?![A-Za-z0-9])"
        lines = [(m.start(), m.group()) for m in re.finditer(r"[^\n]+", text) if m.group().strip()]
        if lines:
            offset, line = lines[-1]
            marks = re.escape(_MARKUP)
            final = re.fullmatch(
                rf"[\s{marks}]*(?:[A-Za-z][A-Za-z ]{{0,40}}:[\s{marks}]*)?"
                rf"{words}[\s{marks}]*[.!]?[\s{marks}]*",
                line, re.I,
            )
            if final is not None:
                start, end = final.span(1)
                return _Verdict(STATUS_OK, self._canonical(final.group(1)),
                                offset + start, offset + end)
        found = list(re.finditer(words, text, re.I))
        if not found:
            return _Verdict(STATUS_UNPARSEABLE)
        if len({self._canonical(m.group(1)) for m in found}) > 1:
            return _Verdict(STATUS_AMBIGUOUS)
        last = found[-1]
        return _Verdict(STATUS_OK, self._canonical(last.group(1)), *last.span(1))


# -------------------------------------------------------------------- label probabilities


@dataclass(frozen=True)
class LabelProbabilities:
    """MMB's p(y | x, a): a softmax over the log-probs of the labels at the answer
    position (seed 002 §3; spec mmb.md).

    The verdict is read as `Choice` with the same labels and style (no tie labels: put a
    tie label in ``labels`` to get its probability). The token holding the verdict's
    label (for brackets the token right after ``[[``; ``"[[A"`` or ``" A"`` work too) is
    the answer position. Its alternatives (``top`` plus the chosen token, first log-prob
    kept) are matched to labels: an alternative means label L when, after removing the
    chosen token's own text around its label (``"[["``, a leading space, ``"]]"``) and
    surrounding whitespace, it equals L in any case; several alternatives meaning the same
    label (``"A"``, ``" A"``) are disjoint events and their probabilities add.
    ``probs[L] = p(L) / sum of p over the labels found``; a label absent from the top-k has
    log-prob -inf, i.e. probability 0; ``mass`` is the total probability of the labels
    found.

    Statuses: as `Choice` when no single label is found (unparseable, ambiguous); with
    no tokens, tokens that do not spell the text up to the label, a label split over
    several tokens, or no top-k alternatives at the label (top_logprobs = 0: only the
    chosen token's log-prob, so the other labels' are unknown, not zero): ``no_logprobs``
    with the parsed label in ``value`` (the caller applies
    its documented smoothing).
    """

    labels: tuple[str, ...] = ("A", "B")
    style: str = "brackets"
    name: ClassVar[str] = "label_probs"

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", self._choice().labels)

    def _choice(self) -> Choice:
        return Choice(labels=self.labels, tie_labels=(), style=self.style)

    def parse(
        self, text: str, tokens: Sequence[TokenLogprob] | None = None,
        finish_reason: str = "stop",
    ) -> Answer:
        """Parse one answer (see the class docstring)."""
        return _finish(self._parse(text or "", tokens), finish_reason)

    def _parse(self, text: str, tokens: Sequence[TokenLogprob] | None) -> Answer:
        verdict = self._choice()._verdict(text)
        if verdict.status != STATUS_OK:
            return Answer(verdict.status, verdict.label)
        if not tokens or not _spells(tokens, text, verdict.end):
            return Answer(STATUS_NO_LOGPROBS, verdict.label)
        offset, index = 0, 0
        while offset + len(tokens[index].token) <= verdict.start:  # _spells: it is there
            offset += len(tokens[index].token)
            index += 1
        tok = tokens[index]
        if offset + len(tok.token) < verdict.end:
            return Answer(STATUS_NO_LOGPROBS, verdict.label)  # label split over tokens
        if not tok.top:  # only the chosen token's log-prob: the others' are unknown, not 0
            return Answer(STATUS_NO_LOGPROBS, verdict.label)
        head = tok.token[: verdict.start - offset]
        tail = tok.token[verdict.end - offset:]
        keys = {label.strip().casefold(): label for label in self.labels}
        alternatives: dict[str, float] = {}
        for alt, logprob in (*tok.top, (tok.token, tok.logprob)):
            alternatives.setdefault(alt, logprob)
        found: dict[str, float] = {}
        for alt, logprob in alternatives.items():
            core = alt[len(head):] if head and alt.startswith(head) else alt
            core = core[: -len(tail)] if tail and core.endswith(tail) else core
            label = keys.get(core.strip().casefold())
            if label is not None and math.isfinite(logprob):
                found[label] = found.get(label, 0.0) + math.exp(logprob)
        mass = sum(found.values())
        if mass <= 0.0:
            return Answer(STATUS_NO_LOGPROBS, verdict.label)
        probs = {label: found.get(label, 0.0) / mass for label in self.labels}
        return Answer(STATUS_OK, verdict.label, mass=mass, probs=probs)


# ------------------------------------------------------------------------------ registry


ANSWER_KINDS: dict[str, type[AnswerKind]] = {
    kind.name: kind for kind in (IntegerScore, DecimalScore, Choice, LabelProbabilities)
}


def answer_kind(name: str, **options: Any) -> AnswerKind:
    """The answer kind `name` built with `options` (e.g. from a params block).

    Raises
    ------
    ValueError
        For an unknown kind or option (naming the known ones) or a bad option value.
    """
    kind = ANSWER_KINDS.get(name)
    if kind is None:
        raise ValueError(f"unknown answer kind {name!r}; known kinds: {sorted(ANSWER_KINDS)}")
    known = [f.name for f in fields(kind)]  # type: ignore[arg-type]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"answer kind {name!r} has no option(s) {unknown}; options: {known}")
    return kind(**options)
