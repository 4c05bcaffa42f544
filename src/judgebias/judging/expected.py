"""The exact expected score of a judge's integer answer from its token log-probs.

Why: FLEUR / G-VEval score smoothing (seed 000 refs [27], [50]) replaces the sampled
integer score by the expectation ``E = sum_n n p(n)`` of the judge's score distribution,
which varies smoothly with the judge's opinion and has none of the sampling noise of one
draw. Providers only report the top-k log-probs of each generated token, and tokenisers
split a number differently (``"85"`` as one token, or ``"8"``, ``"5"``; ``100`` as
``"1"``, ``"0"``, ``"0"``), so ``p(n)`` is never observed as such.

The pre-fix estimator took a per-position expectation ``sum_l 10^(digits after l) E[d_l]``.
For digit tokenisers that is biased: a first-digit alternative ``"1"`` (mostly 100) was
weighted by the *sampled* number's length (as 10 when ``"93"`` was sampled), and the
"number ends here" alternative ``"$"`` was dropped, so for a judge whose true mean rises
from 93 to 97 the computed expectation stalled or fell (table below).

Estimator (Rao-Blackwellised expectation on the token tree)
-----------------------------------------------------------
The generated score is a path in a tree whose nodes are token positions. Walk the score's
tokens in order keeping the digit prefix ``p`` (empty at the root, the first score
token). The *children* of a node are the alternatives the provider reports in ``top`` at
that position (duplicates dropped, first log-prob kept). A child is

* a *digit child*: a token whose leading characters are digits ``d`` (at the root after
  the same non-digit prefix as the chosen token, e.g. ``" 85"`` vs ``" 90"``). It gives the
  prefix ``q = p + d``. If more characters follow the digits (``"85$"``) the number ends
  there (a *closed* child, value ``int(q)``); otherwise it stays *open*;
* a *terminator*: a token starting with a non-digit (``"$"``, ``"."``, ``" "``): the
  number ends with value ``int(p)``. At the root (``p`` empty) it is not a score and is
  ignored.

A prefix ``q`` is *extendable* when a longer valid score starts with it (no leading zero,
some ``n`` in ``[low, high]`` with ``str(n)`` starting with ``q`` and longer; for
``low = 0`` this is ``q != "0" and int(q) * 10 <= high``). A child is *resolved* when its
value is known at this node: a terminator, a closed digit child, or an open digit child
whose ``q`` is a valid score (``low <= int(q) <= high``, no leading zero unless
``q == "0"``) and not extendable. Children that are invalid (value outside the range,
leading zeros) or extendable are not resolved.

At each node, if the chosen child is an open extendable prefix, go one level down to the
next token (past the last digit this is the token after the number, whose children decide
between "the number ends here" and "another digit follows"). Otherwise the chosen
child is resolved, and the node returns

* the probability-weighted mean of the values of the resolved children in ``top``,
  renormalised over them; ``mass`` is their summed probability;
* if the chosen token is *not* among the reported top-k (an unlikely score drawn from a
  wide distribution), its own value, with ``mass`` its own probability. Averaging it with
  the top-k instead would pull every tail draw towards the top-k mean and bias
  whole-number tokens by about 3 points near the ends of the scale (table below).

Why this is unbiased: at a node with prefix ``p`` let ``R`` be the resolved children in the
top-k ``T``, ``X`` the extendable ones, ``O`` the resolved ones outside ``T``. The estimate's
expectation over the next token is ``P(R) E[V | R] + sum_{x in X} p(x) E[V | px] +
sum_{c in O} p(c) v(c) = E[V | p]`` by induction on the depth, because ``T`` does not
depend on which token is drawn. So for answers sampled at temperature 1 from the reported
distribution, the expectation over draws is exactly ``sum_n n p(n)`` for whole-number and
digit tokenisers alike (less only the probability of invalid or uninterpretable children,
which a valid answer never takes), while the variance of one draw is reduced by
conditioning on ``{next child is resolved}`` at the deciding node.

Limitations
-----------
* Only the log-probs along the sampled path are known, so the estimate conditions on the
  sampled prefix: it is ``E[score | sampled prefix up to the deciding node]``, not the
  unconditional mean of one answer. At temperature != 1 (or with top-p) the draws do not
  follow the reported distribution, and the result is that conditional expectation given
  the sampled prefix, not an unbiased estimate of ``sum_n n p(n)``.
* Alternatives outside the top-k are unknown: they are missing from the average (its
  mass shows in ``mass``), and a draw among them counts only as its own value. This keeps
  the estimate exact on average but reduces the variance only for draws inside the top-k
  (for whole-number tokens with a wide distribution, about half the draws).
* The text must end after the number with a token that decides it: a number still
  extendable when the tokens end returns None.

Measured bias
-------------
``benchmarks/expected_score_bias.py --draws 4000`` (also noise 0.05 and 0.12): sim judge
``logp = score_logprobs(m, 0.08)``, ``Sampling(temperature=1.0, top_logprobs=10)``, each
sampled score wrapped in a G-VEval answer and read by ``IntegerScore.parse``. In score
points: ``true`` = sum_n n p(n); ``bias`` = mean estimate - true over 4000 draws;
``RMSE`` of the estimate around true; ``old`` = the pre-fix estimator's exact expectation
and bias; ``int RMSE`` = RMSE of the parsed integer. Enumerating every score with its
probability instead of sampling, the estimator's bias is 0 to 1e-13 in every cell, both
tokenisers, all three noises; no answer fell back to the parsed integer::

    m     true  | whole: bias  RMSE  old bias | digits: bias  RMSE  old E  old bias | int RMSE
    0.02    6.88 |    -0.05  5.27   -2.60   |   -0.01  3.29  12.47   +5.59   |   5.27
    0.05    8.34 |    -0.07  5.85   -3.62   |   -0.07  3.66  15.54   +7.20   |   5.85
    0.10   11.49 |    -0.09  6.76   -1.86   |   -0.11  5.11  20.08   +8.59   |   6.78
    0.20   20.12 |    -0.08  7.61   -0.53   |   -0.12  6.74  23.43   +3.32   |   7.85
    0.30   30.00 |    -0.09  7.79   -0.41   |   -0.20  7.48  30.21   +0.20   |   8.02
    0.50   50.00 |    -0.09  7.79   -0.41   |   -0.18  7.52  50.00   +0.00   |   8.02
    0.70   70.00 |    -0.09  7.79   -0.41   |   -0.18  7.52  70.00   -0.00   |   8.01
    0.85   84.50 |    -0.09  7.24   +0.09   |   -0.08  7.01  83.89   -0.61   |   7.49
    0.90   88.51 |    -0.06  6.51   +1.05   |   -0.04  6.24  86.70   -1.81   |   6.81
    0.93   90.51 |    -0.09  5.90   +2.00   |   -0.05  5.70  87.54   -2.97   |   6.29
    0.95   91.66 |    -0.03  5.49   +2.80   |   -0.03  5.30  87.74   -3.92   |   5.90
    0.97   92.66 |    -0.01  5.01   +2.91   |   -0.04  4.85  87.69   -4.97   |   5.50
    0.98   93.12 |    -0.03  4.78   +2.60   |   -0.07  4.68  87.58   -5.53   |   5.32

The new estimate is monotone in m for both tokenisers; the old digit-token expectation is
not (87.54 at m = 0.93, 87.69 at 0.97, 87.58 at 0.98, while the truth rises 90.5 -> 93.1;
at noise 0.05 it falls outright, 89.91 at 0.93 -> 88.60 at 0.97). The estimator removes
the bias, not the sampling noise: its RMSE is at most that of the integer and much lower
only where one digit position decides the score (small scores by digits). With top-k
averaging of an out-of-top-k whole token (children = top-k plus the chosen token) the
whole-token bias would be -3.4 at m = 0.05 and +2.9 at m = 0.97, hence its own value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from judgebias.models.base import TokenLogprob

_DIGITS = re.compile(r"[0-9]+")


def conditional_expectation(
    tokens: Sequence[TokenLogprob], start: int, end: int, *, low: int = 0, high: int = 100
) -> tuple[float, float] | None:
    """The expected score of an integer answer, on the tree of its tokens.

    Parameters
    ----------
    tokens
        All tokens of the answer; their concatenated text is the answer text.
    start, end
        The character span ``[start, end)`` of the parsed integer in that text.
    low, high
        The valid score range: values outside it are not scores and get no weight.

    Returns
    -------
    tuple[float, float] | None
        ``(expected score, probability mass used)`` (see the module docstring), or None
        when it cannot be computed: the span is not a maximal run of digits forming a valid
        score in the tokens' text, a score token holds digits outside the number, the
        deciding position reports no alternatives (no log-probs), or the tokens end while
        the number could still go on. The caller then falls back to the parsed score.
    """
    if not tokens:
        return None
    text = "".join(t.token for t in tokens)
    if not 0 <= start < end <= len(text):
        return None
    number = text[start:end]
    if not _DIGITS.fullmatch(number) or not _valid(number, low, high):
        return None
    if _DIGITS.match(text[start - 1: start]) or _DIGITS.match(text[end: end + 1]):
        return None  # not the whole number
    offsets = [0]
    for tok in tokens:
        offsets.append(offsets[-1] + len(tok.token))
    first = next(i for i in range(len(tokens)) if offsets[i + 1] > start)
    last = next(i for i in range(len(tokens)) if offsets[i + 1] >= end)
    head = tokens[first].token[: start - offsets[first]]
    tail = tokens[last].token[end - offsets[last]:]
    if _DIGITS.search(head) or _DIGITS.search(tail):
        return None  # a token mixing the number with other digits: not interpretable
    prefix = ""
    for i in range(first, last + 1):
        piece = text[max(start, offsets[i]): min(end, offsets[i + 1])]
        chosen = prefix + piece
        closed = i == last and bool(tail)
        if not closed and _extendable(chosen, low, high):
            prefix = chosen
            continue
        if i != last:
            return None  # a valid number never passes a non-extendable prefix
        return _node(tokens[i], head if i == first else "", prefix, low, high)
    if last + 1 >= len(tokens):
        return None  # the text ends after an extendable number: nothing decides it
    return _node(tokens[last + 1], "", prefix, low, high)


def _node(
    tok: TokenLogprob, head: str, prefix: str, low: int, high: int
) -> tuple[float, float] | None:
    """The estimate at the deciding node: mean over the resolved top-k children, or the
    chosen token's own value when the provider left it out of the top-k."""
    top: dict[str, float] = {}
    for alt, logprob in tok.top:
        top.setdefault(alt, logprob)
    if not top:
        return None  # no alternatives reported: nothing to average over
    if tok.token not in top:
        value = _resolved_value(tok.token, head, prefix, low, high)
        weight = _probability(tok.logprob)
        if value is None or weight <= 0.0:
            return None
        return float(value), weight
    total = weighted = 0.0
    for alt, logprob in top.items():
        value = _resolved_value(alt, head, prefix, low, high)
        weight = _probability(logprob)
        if value is not None and weight > 0.0:
            total += weight
            weighted += weight * value
    if total <= 0.0:
        return None
    return weighted / total, total


def _resolved_value(alt: str, head: str, prefix: str, low: int, high: int) -> int | None:
    """The score a child token settles at this node, or None (unresolved, invalid or not
    a score)."""
    if prefix:
        match = _DIGITS.match(alt)
        if match is None:
            if not alt:
                return None
            return int(prefix) if _valid(prefix, low, high) else None  # a terminator
        rest = alt
    else:
        if not alt.startswith(head):
            return None
        rest = alt[len(head):]
        match = _DIGITS.match(rest)
        if match is None:
            return None  # at the root a non-digit token is not a score
    candidate = prefix + match.group()
    closed = match.end() < len(rest)
    if not closed and _extendable(candidate, low, high):
        return None
    return int(candidate) if _valid(candidate, low, high) else None


def _valid(digits: str, low: int, high: int) -> bool:
    """A score as written: no leading zero (except "0" itself), inside [low, high]."""
    if digits != "0" and digits.startswith("0"):
        return False
    return low <= int(digits) <= high


def _extendable(digits: str, low: int, high: int) -> bool:
    """Whether a longer valid score starts with ``digits``."""
    if digits.startswith("0"):
        return False
    value, scale = int(digits), 10
    while value * scale <= high:
        if max(value * scale, low) <= min((value + 1) * scale - 1, high):
            return True
        scale *= 10
    return False


def _probability(logprob: float) -> float:
    """exp(logprob), with non-finite log-probs (NaN, -inf) as probability 0."""
    return math.exp(logprob) if math.isfinite(logprob) else 0.0
