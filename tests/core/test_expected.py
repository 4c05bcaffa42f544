"""The exact expected score on the token tree: hand-computed cases, and unbiasedness on the
sim judge (whose score distribution is known) for whole-number and digit tokenisers."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest

from judgebias.judging.expected import conditional_expectation
from judgebias.models.base import Sampling
from judgebias.models.base import TokenLogprob as Tok
from judgebias.models.sim import sample_score, score_logprobs, score_tokens

PREFIX = [Tok("Accurate.", -0.1), Tok(" The final score is", -0.01), Tok(" $", -0.01)]
START = sum(len(t.token) for t in PREFIX)


def lp(p: float) -> float:
    return math.log(p)


def expect(score_tokens_: list[Tok], digits: str, **bounds: int) -> tuple[float, float] | None:
    """conditional_expectation of an answer PREFIX + score tokens + ".", span = `digits`."""
    tokens = [*PREFIX, *score_tokens_, Tok(".", -0.001, ((".", -0.001),))]
    text = "".join(t.token for t in tokens)
    assert text[START:START + len(digits)] == digits
    return conditional_expectation(tokens, START, START + len(digits), **bounds)


# ------------------------------------------------------------------- whole-number tokens


def test_whole_token_is_the_mean_over_the_top_k():
    top = (("85", lp(.5)), ("90", lp(.3)), ("80", lp(.2)))
    value, mass = expect([Tok("85", lp(.5), top), Tok("$", 0.0, (("$", 0.0),))], "85")
    assert value == pytest.approx(85.5)  # 42.5 + 27 + 16
    assert mass == pytest.approx(1.0)


def test_whole_token_ignores_non_scores_and_extendable_alternatives():
    # "$" is not a score at the root; "9" could still become 90-99 (not resolved here);
    # "150" is out of range; "07" has a leading zero.
    top = (("85", lp(.4)), ("90", lp(.2)), ("$", lp(.1)), ("9", lp(.1)), ("150", lp(.1)),
           ("07", lp(.05)))
    value, mass = expect([Tok("85", lp(.4), top), Tok("$", 0.0, (("$", 0.0),))], "85")
    assert value == pytest.approx((85 * .4 + 90 * .2) / .6)
    assert mass == pytest.approx(.6)


def test_chosen_whole_token_outside_the_top_k_is_its_own_value():
    top = (("90", lp(.5)), ("80", lp(.3)))
    value, mass = expect([Tok("85", lp(.05), top), Tok("$", 0.0, (("$", 0.0),))], "85")
    assert (value, mass) == (85.0, pytest.approx(.05))


def test_whole_token_that_could_go_on_is_decided_by_the_next_token():
    # "9" alone could be 90-99: the "$" position says whether the number ends (9) or not.
    root = (("9", lp(.6)), ("85", lp(.4)))
    after = (("$", lp(.5)), ("5", lp(.3)), ("0", lp(.2)))  # 9, 95, 90
    value, mass = expect([Tok("9", lp(.6), root), Tok("$", lp(.5), after)], "9")
    assert value == pytest.approx(9 * .5 + 95 * .3 + 90 * .2)
    assert mass == pytest.approx(1.0)


def test_same_prefix_and_suffix_as_the_chosen_token():
    # " 85" vs " 90": the leading space is the chosen token's; "90" without it is another
    # continuation of the text and is ignored. "90$" is a closed child: the number ends.
    top = ((" 85", lp(.4)), (" 90", lp(.3)), ("90", lp(.1)), (" the", lp(.1)))
    tokens = [Tok("Score:", 0.0), Tok(" 85", lp(.4), top), Tok(".", 0.0, ((".", 0.0),))]
    value, mass = conditional_expectation(tokens, 7, 9)
    assert value == pytest.approx((85 * .4 + 90 * .3) / .7)
    assert mass == pytest.approx(.7)
    closed = (("85$", lp(.5)), ("9$", lp(.2)), ("9", lp(.1)))  # "9$" = 9, "9" unresolved
    value, _ = expect([Tok("85$", lp(.5), closed)], "85")
    assert value == pytest.approx((85 * .5 + 9 * .2) / .7)


def test_score_range():
    top = (("10", lp(.5)), ("7", lp(.3)), ("12", lp(.2)))
    value, mass = expect([Tok("10", lp(.5), top), Tok("$", 0.0, (("$", 0.0),))], "10",
                         low=0, high=10)
    assert value == pytest.approx((10 * .5 + 7 * .3) / .8)  # 12 > high
    assert mass == pytest.approx(.8)


# --------------------------------------------------------------------------- digit tokens


def test_digits_decide_at_the_last_digit():
    # First position: "1" (mostly 100) must not be weighted as 10: the number is decided
    # at the position after "9", where "3" -> 93, "5" -> 95, "$" -> 9.
    first = (("9", lp(.6)), ("8", lp(.25)), ("1", lp(.15)))
    second = (("3", lp(.4)), ("5", lp(.3)), ("$", lp(.1)))
    end = (("$", 0.0),)
    value, mass = expect([Tok("9", lp(.6), first), Tok("3", lp(.4), second),
                          Tok("$", 0.0, end)], "93")
    assert value == pytest.approx((93 * .4 + 95 * .3 + 9 * .1) / .8)
    assert mass == pytest.approx(.8)


def test_single_digit_is_decided_by_the_end_of_number_position():
    first = (("7", lp(.7)), ("6", lp(.3)))
    after = (("$", lp(.5)), ("5", lp(.3)), ("0", lp(.2)))  # 7, 75, 70
    value, _ = expect([Tok("7", lp(.7), first), Tok("$", lp(.5), after)], "7")
    assert value == pytest.approx(7 * .5 + 75 * .3 + 70 * .2)


@pytest.mark.parametrize(("path", "digits"), [(["1", "0", "0", "$"], "100"),
                                              (["1", "0", "$"], "10")])
def test_one_zero_zero_is_100_and_one_zero_is_10(path, digits):
    # "1" and "10" can go on; the node after "10" holds 100 ("0"), 10 ("$") and the
    # invalid 105 ("5"), whichever of 100 and 10 was sampled.
    tops = {0: (("1", lp(.8)), ("9", lp(.2))),
            1: (("0", lp(.9)), ("$", lp(.05)), ("5", lp(.05))),
            2: (("0", lp(.7)), ("$", lp(.2)), ("5", lp(.1)))}
    tokens = [Tok(t, dict(tops.get(i, (("$", 0.0),))).get(t, 0.0), tops.get(i, (("$", 0.0),)))
              for i, t in enumerate(path)]
    value, mass = expect(tokens, digits)
    assert value == pytest.approx((100 * .7 + 10 * .2) / .9)
    assert mass == pytest.approx(.9)


def test_zero_is_a_score_and_leading_zeros_are_not():
    top = (("0", lp(.5)), ("5", lp(.2)), ("05", lp(.3)))
    tokens = [Tok("0", lp(.5), top), Tok("$", 0.0, (("$", 0.0),))]
    # On 0..100 "5" may still become 50-59 (unresolved here); "05" is never a score.
    assert expect(tokens, "0") == (0.0, pytest.approx(.5))
    # On 0..9 "5" is final.
    assert expect(tokens, "0", high=9) == (pytest.approx(5 * .2 / .7), pytest.approx(.7))


# ---------------------------------------------------------------------- cannot compute


def test_tokens_that_do_not_spell_a_number_at_the_span():
    tokens = [Tok("something else entirely", 0.0, (("x", 0.0),))]
    assert conditional_expectation(tokens, 3, 5) is None
    assert conditional_expectation(tokens, 20, 40) is None  # past the text
    assert conditional_expectation([], 0, 2) is None


def test_part_of_a_number_or_an_invalid_number():
    top = (("85", lp(.5)), ("90", lp(.5)))
    tokens = [*PREFIX, Tok("85", lp(.5), top), Tok("$", 0.0, (("$", 0.0),))]
    assert conditional_expectation(tokens, START + 1, START + 2) is None  # "5" of "85"
    assert conditional_expectation(tokens, START, START + 2, high=50) is None  # out of range


def test_score_token_mixing_digits_with_other_digits():
    tokens = [Tok("Score 3:", 0.0), Tok(" 85/100", lp(.5), ((" 85/100", lp(.5)),))]
    assert conditional_expectation(tokens, 9, 11) is None


def test_no_alternatives_or_text_ending_in_an_extendable_number():
    assert expect([Tok("85", lp(.5)), Tok("$", 0.0)], "85") is None  # no top-k reported
    tokens = [*PREFIX, Tok("9", lp(.6), (("9", lp(.6)),))]
    assert conditional_expectation(tokens, START, START + 1) is None  # 9 or 9x?


def test_non_finite_logprobs_count_as_zero():
    top = (("85", lp(.5)), ("90", float("nan")), ("80", float("-inf")))
    value, mass = expect([Tok("85", lp(.5), top), Tok("$", 0.0, (("$", 0.0),))], "85")
    assert (value, mass) == (pytest.approx(85.0), pytest.approx(.5))


# ------------------------------------------------------------------ unbiased on the sim


SIM_PREFIX = [Tok(w, -0.01, ((w, -0.01),)) for w in (" The", " final", " score", " is", " $")]
SIM_START = sum(len(t.token) for t in SIM_PREFIX)


def sim_estimate(score: int, logp: np.ndarray, tokenizer: str) -> float:
    tokens = [*SIM_PREFIX, *score_tokens(score, logp, tokenizer, 10), Tok(".", 0.0)]
    result = conditional_expectation(tokens, SIM_START, SIM_START + len(str(score)))
    assert result is not None
    return result[0]


def mean_estimate(m: float, tokenizer: str, draws: int = 400, seed: int = 0) -> float:
    """Mean estimate over `draws` answers sampled at temperature 1. The same seed for every
    m: neighbouring means share their random numbers, so their comparison is not noise."""
    logp = score_logprobs(m, 0.08)
    sampling = Sampling(temperature=1.0, top_logprobs=10)
    rng = np.random.default_rng(seed)
    cache: dict[int, float] = {}
    total = 0.0
    for _ in range(draws):
        score = sample_score(logp, sampling, rng)
        if score not in cache:
            cache[score] = sim_estimate(score, logp, tokenizer)
        total += cache[score]
    return total / draws


def true_mean(m: float) -> float:
    return float(np.arange(101) @ np.exp(score_logprobs(m, 0.08)))


@pytest.mark.parametrize("tokenizer", ["whole", "digits"])
@pytest.mark.parametrize("m", [0.05, 0.5, 0.95])
def test_mean_over_draws_is_the_true_expectation(m, tokenizer):
    # sd of one estimate <= 8 points: 400 draws give a standard error <= 0.4 (seeds 0-5
    # all pass; seed 0 is at most 0.7 off).
    assert mean_estimate(m, tokenizer) == pytest.approx(true_mean(m), abs=1.0)


@pytest.mark.parametrize("tokenizer", ["whole", "digits"])
@pytest.mark.parametrize("m", [0.02, 0.3, 0.93, 0.97])
def test_expectation_over_every_score_is_exact(m, tokenizer):
    # Enumerate every score with its probability: no sampling noise, no tolerance.
    logp = score_logprobs(m, 0.08)
    estimates = [sim_estimate(n, logp, tokenizer) for n in range(101)]
    assert float(np.exp(logp) @ estimates) == pytest.approx(true_mean(m), abs=1e-9)


def test_digit_estimate_rises_with_the_judge_mean():
    means = [mean_estimate(m, "digits") for m in (0.9, 0.93, 0.95, 0.97)]
    assert all(b > a for a, b in pairwise(means)), means
