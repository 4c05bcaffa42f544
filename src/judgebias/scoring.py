"""Reading a judge's answer: the parsed `$NN$` score and its log-prob weighted expectation.

The G-VEval prompt (seed 000 Appendix C) asks the evaluator to end with
"The final score is $NN$." with NN an integer in 0..100; seed 000 §5 then normalises
scores linearly to [0, 1]. Where the provider returns token log-probs we also compute the
probability-weighted expected score -- the "score smoothing" of FLEUR (seed 000 ref. [27])
and G-VEval (ref. [50]): at the score position, keep the probability mass of the
alternatives that are scores, renormalise it, and take the expectation.

Tokenisers differ in how a number is split, so both cases are handled:

* one token holds the whole number ("85"): E = sum_v p(v) v over the top-k alternatives
  that parse as integers 0..100 (the chosen token is added if the provider left it out),
  with p renormalised over those alternatives;
* the number spans several tokens ("8", "5"; "1", "0", "0"): E = sum_l 10^(digits after
  l) * E[d_l], where E[d_l] is the renormalised expectation of the digit(s) at token l.
  This is FLEUR's per-position smoothing. Approximation (documented, unavoidable with
  top-k log-probs): the provider only reports alternatives along the sampled path, so the
  expectation at later positions is conditional on the sampled earlier digits, and
  alternatives that would change the number of digits (e.g. "9" then "$") are dropped at
  that position. The result is clipped to [0, 100].

An answer without a parseable score is never turned into a number: it keeps its status.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from judgebias.models.base import TokenLogprob

SCORE_MAX = 100
_SCORE_RE = re.compile(r"\$\s*(\d+)\s*\$")
_DIGITS_RE = re.compile(r"\d+")

STATUS_OK = "ok"
STATUS_UNPARSEABLE = "unparseable"
STATUS_OUT_OF_RANGE = "out_of_range"


@dataclass(frozen=True)
class ParsedScore:
    """The score read from one answer; `raw` and `expected` are on the 0..100 scale."""

    status: str
    raw: int | None = None
    expected: float | None = None
    score_mass: float | None = None  # probability mass of score alternatives (diagnostic)

    @property
    def normalised(self) -> float | None:
        return None if self.raw is None else self.raw / SCORE_MAX

    @property
    def expected_normalised(self) -> float | None:
        return None if self.expected is None else self.expected / SCORE_MAX


def parse_score(text: str, tokens: Sequence[TokenLogprob] | None = None) -> ParsedScore:
    """Parse the last `$NN$` of an answer and, with log-probs, its expected value."""
    matches = list(_SCORE_RE.finditer(text or ""))
    if not matches:
        return ParsedScore(STATUS_UNPARSEABLE)
    match = matches[-1]
    raw = int(match.group(1))
    if raw > SCORE_MAX:
        return ParsedScore(STATUS_OUT_OF_RANGE)
    if not tokens:
        return ParsedScore(STATUS_OK, raw)
    span = _score_tokens(tokens, match.start(1), match.end(1))
    if span is None:
        return ParsedScore(STATUS_OK, raw)
    expected, mass = _expected_value([tokens[i] for i in span])
    return ParsedScore(STATUS_OK, raw, expected, mass)


def _score_tokens(tokens: Sequence[TokenLogprob], start: int, end: int) -> list[int] | None:
    """Indices of the tokens overlapping characters [start, end) of the answer text.

    Returns None when the tokens do not spell the text (a provider that post-processed
    the text), in which case only the parsed score is used.
    """
    indices, offset = [], 0
    for i, tok in enumerate(tokens):
        tok_start, offset = offset, offset + len(tok.token)
        if tok_start < end and offset > start:
            indices.append(i)
    return indices or None


def _digit_part(token: str) -> tuple[str, str, str] | None:
    """Split a token into (prefix, digits, suffix) when it holds exactly one digit run."""
    runs = _DIGITS_RE.findall(token)
    if len(runs) != 1:
        return None
    head, _, tail = token.partition(runs[0])
    return head, runs[0], tail


def _alternatives(tok: TokenLogprob, n_digits: int | None) -> dict[int, float]:
    """Probabilities of the numeric alternatives at one position, keyed by their value.

    Only alternatives with the chosen token's non-digit prefix/suffix count (so "$" or a
    word are not scores); with `n_digits`, only alternatives with that many digits.
    """
    chosen = _digit_part(tok.token)
    if chosen is None:
        return {}
    head, _, tail = chosen
    probs: dict[int, float] = {}
    for alt, logprob in [*tok.top, (tok.token, tok.logprob)]:
        part = _digit_part(alt)
        if part is None or part[0] != head or part[2] != tail:
            continue
        if n_digits is not None and len(part[1]) != n_digits:
            continue
        value = int(part[1])
        if value <= SCORE_MAX:
            probs.setdefault(value, math.exp(logprob))
    return probs


def _expected_value(score_tokens: list[TokenLogprob]) -> tuple[float | None, float | None]:
    """Expectation of the score over the top-k alternatives (see module docstring)."""
    if len(score_tokens) == 1:
        probs = _alternatives(score_tokens[0], None)
        total = sum(probs.values())
        if total <= 0:
            return None, None
        return sum(v * p for v, p in probs.items()) / total, total
    digits = [_digit_part(t.token) for t in score_tokens]
    if any(d is None for d in digits):
        return None, None
    expected, remaining = 0.0, sum(len(d[1]) for d in digits)  # type: ignore[index]
    first_mass = None
    for tok, part in zip(score_tokens, digits, strict=True):
        width = len(part[1])  # type: ignore[index]
        remaining -= width
        probs = _alternatives(tok, width)
        total = sum(probs.values())
        if total <= 0:
            return None, None
        first_mass = total if first_mass is None else first_mass
        expected += 10**remaining * sum(v * p for v, p in probs.items()) / total
    return min(max(expected, 0.0), float(SCORE_MAX)), first_mass
