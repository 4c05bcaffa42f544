"""Benchmark: bias of the log-prob expected score for whole-number and digit tokenisers.

    .venv/bin/python benchmarks/expected_score_bias.py [--draws 2000] [--seed 0]

Why: FLEUR / G-VEval score smoothing (seed 000 refs [27], [50]) targets the expectation
``sum_n n p(n)`` of the judge's score distribution. This measures how far the estimator of
`judgebias.judging.expected` (through `IntegerScore.parse`, as the pipeline calls it) and
the pre-fix per-position estimator are from that target on the sim judge, whose ``p(n)`` is
known exactly: ``logp = score_logprobs(m, noise)``, scores sampled at temperature 1 with
the top-10 log-probs, wrapped in a realistic G-VEval answer.

Columns (score points, 0..100 scale): ``true`` = sum_n n p(n); ``bias`` = mean estimate -
true over ``--draws`` draws; ``exact`` = the estimator's expectation computed by
enumerating every score n with its probability p(n) (no Monte-Carlo noise); ``RMSE`` of
the estimate around ``true``; ``old`` = exact expectation and bias of the pre-fix
estimator; ``int RMSE`` = RMSE of the parsed integer itself. Every (m, noise, tokenizer)
cell draws with the same seed, so neighbouring means share their random numbers and the
Monte-Carlo columns are comparable across m. Prints Markdown.
"""

from __future__ import annotations

import argparse
import math
import re
import time
from collections.abc import Sequence

import numpy as np

from judgebias.judging.answers import IntegerScore
from judgebias.models.base import Sampling, TokenLogprob
from judgebias.models.sim import TOKENIZERS, sample_score, score_logprobs, score_tokens

MEANS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98)
NOISES = (0.08, 0.05, 0.12)  # the docstring table of judging.expected uses 0.08
TOP_LOGPROBS = 10
SCORES = np.arange(101)

# A realistic G-VEval answer around the score: words with their leading space, " $",
# the score token(s) and the closing "$" (from sim.score_tokens), then ".".
_REASONING = ("The", " caption", " correctly", " describes", " the", " red", " circle", ".",
              " The", " final", " score", " is", " $")


def answer_tokens(score: int, logp: np.ndarray, tokenizer: str) -> list[TokenLogprob]:
    """The whole answer's tokens for a sampled score, with the sim's top-k log-probs."""
    prefix = [TokenLogprob(word, -0.01, ((word, -0.01),)) for word in _REASONING]
    return [*prefix, *score_tokens(score, logp, tokenizer, TOP_LOGPROBS),
            TokenLogprob(".", -0.0002, ((".", -0.0002),))]


# -------------------------------------------------------------------------------------
# The pre-fix estimator, kept to show the bug. A verbatim copy of the logic that was
# `_score_tokens` / `_digit_part` / `_alternatives` / `_expected_value` in
# judgebias/scoring.py (then judging/answers.py) before the fix; the package no longer
# has it. Per-position expectation sum_l 10^(digits after l) E[d_l]: alternatives that
# change the number's length ("1" meaning 100 at the first digit of "93") are weighted by
# the sampled number's length.
# -------------------------------------------------------------------------------------

_OLD_SCORE_RE = re.compile(r"\$\s*(\d+)\s*\$")
_OLD_DIGITS_RE = re.compile(r"\d+")
_OLD_SCORE_MAX = 100


def old_expected(text: str, tokens: Sequence[TokenLogprob]) -> float | None:
    """The pre-fix expected score of an answer (None where it gave none)."""
    match = list(_OLD_SCORE_RE.finditer(text))[-1]
    indices, offset = [], 0
    for i, tok in enumerate(tokens):
        tok_start, offset = offset, offset + len(tok.token)
        if tok_start < match.end(1) and offset > match.start(1):
            indices.append(i)
    return _old_expected_value([tokens[i] for i in indices])[0] if indices else None


def _old_digit_part(token: str) -> tuple[str, str, str] | None:
    runs = _OLD_DIGITS_RE.findall(token)
    if len(runs) != 1:
        return None
    head, _, tail = token.partition(runs[0])
    return head, runs[0], tail


def _old_alternatives(tok: TokenLogprob, n_digits: int | None) -> dict[int, float]:
    chosen = _old_digit_part(tok.token)
    if chosen is None:
        return {}
    head, _, tail = chosen
    probs: dict[int, float] = {}
    for alt, logprob in [*tok.top, (tok.token, tok.logprob)]:
        part = _old_digit_part(alt)
        if part is None or part[0] != head or part[2] != tail:
            continue
        if n_digits is not None and len(part[1]) != n_digits:
            continue
        value = int(part[1])
        if value <= _OLD_SCORE_MAX:
            probs.setdefault(value, math.exp(logprob))
    return probs


def _old_expected_value(
    score_tokens: list[TokenLogprob],
) -> tuple[float | None, float | None]:
    if len(score_tokens) == 1:
        probs = _old_alternatives(score_tokens[0], None)
        total = sum(probs.values())
        if total <= 0:
            return None, None
        return sum(v * p for v, p in probs.items()) / total, total
    digits = [_old_digit_part(t.token) for t in score_tokens]
    if any(d is None for d in digits):
        return None, None
    expected, remaining = 0.0, sum(len(d[1]) for d in digits)  # type: ignore[index]
    first_mass = None
    for tok, part in zip(score_tokens, digits, strict=True):
        width = len(part[1])  # type: ignore[index]
        remaining -= width
        probs = _old_alternatives(tok, width)
        total = sum(probs.values())
        if total <= 0:
            return None, None
        first_mass = total if first_mass is None else first_mass
        expected += 10**remaining * sum(v * p for v, p in probs.items()) / total
    return min(max(expected, 0.0), float(_OLD_SCORE_MAX)), first_mass


# ------------------------------------------------------------------------------- bench


def estimates(logp: np.ndarray, tokenizer: str) -> tuple[np.ndarray, np.ndarray, int]:
    """New and old estimates for every score 0..100 (the estimate is a function of the
    sampled score), and how many scores fell back to the parsed integer."""
    kind = IntegerScore()
    new, old, fallbacks = np.empty(101), np.empty(101), 0
    for n in SCORES:
        tokens = answer_tokens(int(n), logp, tokenizer)
        text = "".join(t.token for t in tokens)
        answer = kind.parse(text, tokens)
        assert answer.ok and answer.value == n, (n, answer)
        if answer.expected is None:
            fallbacks += 1
        new[n] = n if answer.expected is None else answer.expected
        previous = old_expected(text, tokens)
        old[n] = n if previous is None else previous
    return new, old, fallbacks


def cell(m: float, noise: float, tokenizer: str, draws: int, seed: int) -> dict[str, float]:
    """One (judge mean, noise, tokenizer) cell of the table."""
    logp = score_logprobs(m, noise)
    p = np.exp(logp)
    true = float(SCORES @ p)
    new, old, fallbacks = estimates(logp, tokenizer)
    sampling = Sampling(temperature=1.0, top_logprobs=TOP_LOGPROBS)
    rng = np.random.default_rng(seed)
    drawn = np.array([sample_score(logp, sampling, rng) for _ in range(draws)])
    return {
        "m": m, "true": true,
        "bias": float(new[drawn].mean() - true),
        "exact": float(p @ new - true),
        "rmse": float(np.sqrt(np.mean((new[drawn] - true) ** 2))),
        "old_mean": float(p @ old),
        "old_bias": float(p @ old - true),
        "int_rmse": float(np.sqrt(np.mean((drawn - true) ** 2))),
        "fallbacks": fallbacks,
        "new_mean": float(p @ new),
    }


def table(rows: list[dict[str, float]], tokenizer: str, noise: float, draws: int) -> str:
    """One Markdown table."""
    lines = [
        f"### tokenizer `{tokenizer}`, noise {noise}, {draws} draws per mean",
        "",
        "| m | true | bias | exact | RMSE | old E | old bias | int RMSE |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['m']:.2f} | {r['true']:.2f} | {r['bias']:+.2f} | {r['exact']:+.3f} "
            f"| {r['rmse']:.2f} | {r['old_mean']:.2f} | {r['old_bias']:+.2f} "
            f"| {r['int_rmse']:.2f} |"
        )
    new = [r["new_mean"] for r in rows]
    old = [r["old_mean"] for r in rows]
    lines += [
        "",
        f"new estimator monotone in m: {all(np.diff(new) > 0)}; "
        f"max |exact bias| {max(abs(r['exact']) for r in rows):.3f}; "
        f"fallbacks to the parsed integer: {sum(r['fallbacks'] for r in rows):.0f}; "
        f"old estimator monotone in m: {all(np.diff(old) > 0)}",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    print("## Expected-score bias (score points, 0..100)\n")
    for noise in NOISES:
        for tokenizer in TOKENIZERS:
            rows = [cell(m, noise, tokenizer, args.draws, args.seed) for m in MEANS]
            print(table(rows, tokenizer, noise, args.draws))
    print(f"({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
