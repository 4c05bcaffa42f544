"""Score parsing and the log-prob weighted expected score, on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from judgebias.models.base import TokenLogprob as Tok
from judgebias.scoring import parse_score

TEXT = "Accurate and concise. The final score is $85$."
PREFIX = "Accurate and concise. The final score is "


def _lp(p: float) -> float:
    return math.log(p)


def test_parse_without_logprobs():
    parsed = parse_score(TEXT)
    assert (parsed.status, parsed.raw, parsed.normalised, parsed.expected) == ("ok", 85, 0.85,
                                                                               None)


@pytest.mark.parametrize("text", ["no score here", "The final score is 85.", ""])
def test_unparseable_is_never_a_number(text):
    parsed = parse_score(text)
    assert parsed.status == "unparseable" and parsed.raw is None and parsed.normalised is None


def test_out_of_range():
    assert parse_score("The final score is $150$.").status == "out_of_range"


def test_last_score_wins():
    assert parse_score("I considered $40$ but The final score is $70$.").raw == 70


def test_whole_number_token():
    # p(85)=.5, p(90)=.3, p(80)=.1, "$" (not a score)=.05 -> (42.5+27+8)/.9
    top = (("85", _lp(.5)), ("90", _lp(.3)), ("80", _lp(.1)), ("$", _lp(.05)))
    tokens = [Tok(PREFIX, -0.1), Tok("$", 0.0), Tok("85", _lp(.5), top), Tok("$", 0.0),
              Tok(".", 0.0)]
    parsed = parse_score(TEXT, tokens)
    assert parsed.expected == pytest.approx(77.5 / 0.9)
    assert parsed.score_mass == pytest.approx(0.9)
    assert parsed.expected_normalised == pytest.approx(77.5 / 90)


def test_digit_tokens():
    # first digit: 8 (.6), 9 (.4) -> 8.4 tens; second digit given "8": 5 (.5), 0 (.5) -> 2.5
    tokens = [Tok(PREFIX, -0.1), Tok("$", 0.0),
              Tok("8", _lp(.6), (("8", _lp(.6)), ("9", _lp(.4)))),
              Tok("5", _lp(.5), (("5", _lp(.5)), ("0", _lp(.5)))),
              Tok("$", 0.0), Tok(".", 0.0)]
    assert parse_score(TEXT, tokens).expected == pytest.approx(86.5)


def test_three_digit_score_by_digits_is_clipped():
    text = PREFIX + "$100$."
    tokens = [Tok(PREFIX, 0.0), Tok("$", 0.0),
              Tok("1", _lp(.9), (("1", _lp(.9)), ("9", _lp(.1)))),
              Tok("0", 0.0, (("0", 0.0),)), Tok("0", 0.0, (("0", 0.0),)),
              Tok("$", 0.0), Tok(".", 0.0)]
    # 100 * (1*.9 + 9*.1) = 180 -> clipped to the scale's maximum
    assert parse_score(text, tokens).expected == 100.0


def test_chosen_token_missing_from_top_is_added():
    tokens = [Tok(PREFIX, 0.0), Tok("$", 0.0), Tok("85", _lp(.2), (("90", _lp(.6)),)),
              Tok("$", 0.0), Tok(".", 0.0)]
    assert parse_score(TEXT, tokens).expected == pytest.approx((85 * .2 + 90 * .6) / .8)


def test_tokens_that_do_not_spell_the_text_fall_back_to_parsed():
    tokens = [Tok("something else", 0.0)]
    parsed = parse_score(TEXT, tokens)
    assert parsed.raw == 85 and parsed.expected is None
