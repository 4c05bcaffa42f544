"""Answer kinds on hand-made answers: what each accepts, and the status of what it does not."""

from __future__ import annotations

import math

import pytest

from judgebias.judging.answers import (
    ANSWER_KINDS,
    STATUS_AMBIGUOUS,
    STATUS_NO_LOGPROBS,
    STATUS_OK,
    STATUS_OUT_OF_RANGE,
    STATUS_TIE,
    STATUS_TRUNCATED,
    STATUS_UNPARSEABLE,
    Answer,
    Choice,
    DecimalScore,
    IntegerScore,
    LabelProbabilities,
    answer_kind,
    parse_score,
)
from judgebias.models.base import TokenLogprob as Tok

TEXT = "Accurate and concise. The final score is $85$."
PREFIX = "Accurate and concise. The final score is "
RUBRIC = "Rate the caption on a scale from $0$ to $100$. "


def lp(p: float) -> float:
    return math.log(p)


# -------------------------------------------------------------------------- score_0_100


@pytest.mark.parametrize("text", [
    TEXT,
    "The final score is $ 85 $",
    "the FINAL  score\nis:  $85$.",
    "**The final score is** $85$",
    "The final score is **$85$**.",
    "I considered $40$ at first. The final score is $85$.",
    "The final score is $40$... no. The final score is $85$.",
])
def test_score_after_the_lead(text):
    assert parse_score(text) == Answer(STATUS_OK, 85)


def test_rubric_echo_is_never_the_score_when_the_lead_is_there():
    assert parse_score(RUBRIC + "The final score is $85$.").value == 85
    assert parse_score("The final score is $85$. " + RUBRIC).value == 85
    # The lead without a $NN$ after it: unparseable, not the rubric's 0 or 100.
    assert parse_score(RUBRIC + "The final score is 85.").status == STATUS_UNPARSEABLE
    assert parse_score(RUBRIC + "The final score is $100$.").value == 100


def test_without_a_lead_only_one_distinct_value_counts():
    assert parse_score(RUBRIC).status == STATUS_AMBIGUOUS
    assert parse_score(RUBRIC + "I give $85$.").status == STATUS_AMBIGUOUS
    assert parse_score("Good caption: $70$.") == Answer(STATUS_OK, 70)
    assert parse_score("$70$, so $70$.") == Answer(STATUS_OK, 70)


@pytest.mark.parametrize("text", ["no score here", "The final score is 85.", "", "$8.5$"])
def test_unparseable_is_never_a_number(text):
    assert parse_score(text) == Answer(STATUS_UNPARSEABLE)


@pytest.mark.parametrize(("text", "value"), [("The final score is $150$.", 150),
                                             ("The final score is $-3$.", -3)])
def test_out_of_range_keeps_the_number_for_audit(text, value):
    answer = parse_score(text)
    assert (answer.status, answer.value, answer.ok) == (STATUS_OUT_OF_RANGE, value, False)


def test_truncated_answer_keeps_what_was_parsed():
    answer = parse_score(TEXT, finish_reason="length")
    assert (answer.status, answer.value, answer.ok) == (STATUS_TRUNCATED, 85, False)
    assert parse_score("The caption is", finish_reason="length") == Answer(STATUS_TRUNCATED)
    assert parse_score(TEXT, finish_reason="content_filter").ok  # only "length" truncates


def test_custom_range_and_lead():
    kind = IntegerScore(low=1, high=10, lead="Rating")
    assert kind.parse("Rating: $7$").value == 7
    assert kind.parse("Rating: $0$").status == STATUS_OUT_OF_RANGE
    assert IntegerScore(lead="").parse(RUBRIC).status == STATUS_AMBIGUOUS


def _score_tokens(top: tuple[tuple[str, float], ...], chosen: str = "85") -> list[Tok]:
    return [Tok(PREFIX, -0.1), Tok("$", 0.0), Tok(chosen, dict(top)[chosen], top),
            Tok("$", 0.0, (("$", 0.0),)), Tok(".", 0.0)]


def test_expected_score_from_tokens():
    top = (("85", lp(.5)), ("90", lp(.3)), ("80", lp(.1)), ("$", lp(.05)))
    answer = parse_score(TEXT, _score_tokens(top))
    assert (answer.status, answer.value) == (STATUS_OK, 85)
    assert answer.expected == pytest.approx((42.5 + 27 + 8) / .9)
    assert answer.mass == pytest.approx(.9)


def test_expected_score_by_digits_reads_100_as_100():
    text = PREFIX + "$100$."
    tokens = [Tok(PREFIX, 0.0), Tok("$", 0.0),
              Tok("1", lp(.9), (("1", lp(.9)), ("9", lp(.1)))),
              Tok("0", lp(.9), (("0", lp(.9)), ("$", lp(.1)))),
              Tok("0", lp(.8), (("0", lp(.8)), ("$", lp(.2)))),
              Tok("$", 0.0, (("$", 0.0),)), Tok(".", 0.0)]
    answer = parse_score(text, tokens)
    assert answer.expected == pytest.approx(100 * .8 + 10 * .2)


def test_tokens_that_do_not_spell_the_text_give_no_expected_score():
    top = (("85", lp(.5)), ("90", lp(.5)))
    assert parse_score(TEXT, [Tok("something else", 0.0)]) == Answer(STATUS_OK, 85)
    # Spelled up to the score but not after it: the closing "$" is not the text's.
    wrong_end = [*_score_tokens(top)[:3], Tok(" points", 0.0, ((" points", 0.0),))]
    assert parse_score(TEXT, wrong_end).expected is None
    # A different number in the tokens than in the text.
    other = [*_score_tokens(top)[:2], Tok("90", lp(.5), top), Tok("$.", 0.0)]
    assert parse_score(TEXT, other).expected is None
    assert parse_score(TEXT, []).expected is None


def test_parse_score_is_the_integer_kind():
    top = (("85", lp(.5)), ("90", lp(.5)))
    assert parse_score(TEXT, _score_tokens(top)) == IntegerScore().parse(TEXT, _score_tokens(top))


# ---------------------------------------------------------------------------- score_0_5


@pytest.mark.parametrize(("text", "value"), [
    ("Score: 3.5", 3.5),
    ("3", 3.0),
    ("  4.0\n", 4.0),
    ("**4.5**", 4.5),
    ("2.5.", 2.5),
    ("score: 2", 2.0),
    ("**Score:** 4.0", 4.0),
    ("The objects match. Step 2: colours.\nScore: 1.5", 1.5),
    ("Format: Score: X.X (e.g., Score: 4.5).\nThe image is fine.\nScore: 3.0", 3.0),
])
def test_decimal_score(text, value):
    assert DecimalScore().parse(text) == Answer(STATUS_OK, value)


@pytest.mark.parametrize("text", [
    "I would give it a 3.",        # no lead and not a bare number
    "Score: 4.5 looks right.\nScore: X.X",  # the last lead has no number
    "Subscore: 2",                 # not the lead
    "",
])
def test_decimal_score_unparseable(text):
    assert DecimalScore().parse(text) == Answer(STATUS_UNPARSEABLE)


def test_decimal_score_out_of_range_and_truncated():
    assert DecimalScore().parse("5.5") == Answer(STATUS_OUT_OF_RANGE, 5.5)
    assert DecimalScore().parse("Score: -1") == Answer(STATUS_OUT_OF_RANGE, -1.0)
    answer = DecimalScore().parse("Score: 3.5", finish_reason="length")
    assert (answer.status, answer.value) == (STATUS_TRUNCATED, 3.5)


def test_decimal_score_has_no_expected_value():
    tokens = [Tok("Score:", 0.0), Tok(" 3", lp(.5), ((" 3", lp(.5)), (" 4", lp(.5)))),
              Tok(".5", 0.0)]
    assert DecimalScore().parse("Score: 3.5", tokens).expected is None


# ------------------------------------------------------------------------------- choice


@pytest.mark.parametrize(("text", "status", "value"), [
    ("Analysis: both fine.\n\nJudgement: [[A]]", STATUS_OK, "A"),
    ("[[B]]", STATUS_OK, "B"),
    ("Judgement: [[ b ]]", STATUS_OK, "B"),
    ("Judgement: [[C]]", STATUS_TIE, "C"),
    # two verdicts: the last bracketed label on its own line wins ...
    ("Assistant A's [[A]] claim is wrong.\nJudgement: [[B]]", STATUS_OK, "B"),
    # ... two different ones on the final verdict's line are ambiguous (a format echo)
    ("Judgement: [[A]] or [[B]]", STATUS_AMBIGUOUS, None),
    ("Judgement: [[A]] [[C]]", STATUS_AMBIGUOUS, None),
    ("Judgement: [[A]], i.e. [[A]]", STATUS_OK, "A"),
    ("Judgement: A", STATUS_UNPARSEABLE, None),
    ("Judgement: [[D]]", STATUS_UNPARSEABLE, None),
])
def test_choice_brackets(text, status, value):
    assert Choice().parse(text) == Answer(status, value)


WORDS = Choice(labels=("first", "second"), tie_labels=("tie",), style="words")


@pytest.mark.parametrize(("text", "status", "value"), [
    ("first", STATUS_OK, "first"),
    ("Second.", STATUS_OK, "second"),
    ("’first’", STATUS_OK, "first"),
    ("Answer: **second**", STATUS_OK, "second"),
    ("The first image misses the dog.\nAnswer: second", STATUS_OK, "second"),
    ("The second image is better.", STATUS_OK, "second"),  # the only label word
    ("tie", STATUS_TIE, "tie"),
    ("first or second", STATUS_AMBIGUOUS, None),
    ("The first image is sharp, the second is not.", STATUS_AMBIGUOUS, None),
    ("Only return either first, second or tie.", STATUS_AMBIGUOUS, None),
    ("firstly, neither", STATUS_UNPARSEABLE, None),
    ("", STATUS_UNPARSEABLE, None),
])
def test_choice_words(text, status, value):
    assert WORDS.parse(text) == Answer(status, value)


def test_choice_truncated_keeps_the_label():
    assert Choice().parse("Judgement: [[A]]", finish_reason="length") == Answer(
        STATUS_TRUNCATED, "A")


def test_tie_is_not_ok():
    answer = Choice().parse("[[C]]")
    assert answer.status == STATUS_TIE and not answer.ok


# -------------------------------------------------------------------- label probabilities


def test_label_probabilities_from_the_label_token():
    top = (("A", lp(.6)), ("B", lp(.3)), ("C", lp(.05)), (" A", lp(.02)))
    tokens = [Tok("Judgement:", 0.0), Tok(" [[", 0.0), Tok("A", lp(.6), top), Tok("]]", 0.0)]
    answer = LabelProbabilities().parse("Judgement: [[A]]", tokens)
    # "A" and " A" both mean A; "C" is not a label of this kind.
    assert (answer.status, answer.value) == (STATUS_OK, "A")
    assert answer.mass == pytest.approx(.92)
    assert answer.probs == pytest.approx({"A": .62 / .92, "B": .3 / .92})


def test_label_missing_from_the_top_k_has_probability_zero():
    top = (("B", lp(.7)), ("maybe", lp(.2)))
    tokens = [Tok("[[", 0.0), Tok("B", lp(.7), top), Tok("]]", 0.0)]
    answer = LabelProbabilities().parse("[[B]]", tokens)
    assert answer.probs == {"A": 0.0, "B": 1.0}
    assert answer.mass == pytest.approx(.7)


def test_chosen_label_outside_the_top_k_is_added():
    top = (("B", lp(.8)),)
    tokens = [Tok("[[", 0.0), Tok("A", lp(.1), top), Tok("]]", 0.0)]
    answer = LabelProbabilities().parse("[[A]]", tokens)
    assert answer.probs == pytest.approx({"A": .1 / .9, "B": .8 / .9})


def test_label_token_glued_to_the_brackets():
    top = (("[[A", lp(.75)), ("[[B", lp(.2)), ("[[", lp(.05)))
    tokens = [Tok("Judgement: ", 0.0), Tok("[[A", lp(.75), top), Tok("]]", 0.0)]
    answer = LabelProbabilities().parse("Judgement: [[A]]", tokens)
    assert answer.probs == pytest.approx({"A": .75 / .95, "B": .2 / .95})


def test_label_probabilities_words():
    kind = LabelProbabilities(labels=("first", "second"), style="words")
    top = (("first", lp(.5)), ("First", lp(.1)), ("second", lp(.3)), ("tie", lp(.1)))
    answer = kind.parse("first", [Tok("first", lp(.5), top)])
    assert answer.value == "first"
    assert answer.probs == pytest.approx({"first": .6 / .9, "second": .3 / .9})


def test_label_probabilities_without_usable_logprobs_keep_the_label():
    kind = LabelProbabilities()
    assert kind.parse("[[B]]") == Answer(STATUS_NO_LOGPROBS, "B")
    assert kind.parse("[[B]]", [Tok("[[X]]", 0.0)]) == Answer(STATUS_NO_LOGPROBS, "B")
    split = LabelProbabilities(labels=("first", "second"), style="words")
    tokens = [Tok("fir", 0.0, (("fir", 0.0),)), Tok("st", 0.0, (("st", 0.0),))]
    assert split.parse("first", tokens) == Answer(STATUS_NO_LOGPROBS, "first")


def test_label_probabilities_statuses_follow_choice():
    tokens = [Tok("[[A]] or [[B]]", 0.0)]
    assert LabelProbabilities().parse("[[A]] or [[B]]", tokens) == Answer(STATUS_AMBIGUOUS)
    assert LabelProbabilities().parse("no verdict", None) == Answer(STATUS_UNPARSEABLE)
    top = (("A", lp(.5)), ("B", lp(.5)))
    tokens = [Tok("[[", 0.0), Tok("A", lp(.5), top), Tok("]]", 0.0)]
    cut = LabelProbabilities().parse("[[A]]", tokens, finish_reason="length")
    assert cut.status == STATUS_TRUNCATED and cut.probs == pytest.approx({"A": .5, "B": .5})


# ------------------------------------------------------------------------------ registry


def test_registry_builds_kinds_from_params():
    assert set(ANSWER_KINDS) == {"score_0_100", "score_0_5", "choice", "label_probs"}
    assert answer_kind("score_0_100") == IntegerScore()
    words = answer_kind("choice", labels=["first", "second"], tie_labels=["tie"],
                        style="words")
    assert words == WORDS and words.labels == ("first", "second")
    assert answer_kind("score_0_5", high=10).parse("7.5").value == 7.5
    assert answer_kind("label_probs").name == "label_probs"


@pytest.mark.parametrize(("name", "options", "message"), [
    ("score_1_10", {}, "score_1_10"),
    ("choice", {"labelz": ["A"]}, "labelz"),
    ("choice", {"style": "emoji"}, "emoji"),
    ("choice", {"labels": ["A", "a"]}, "differ"),
    ("score_0_100", {"low": 50, "high": 10}, "low"),
    ("score_0_100", {"high": 99.5}, "integer"),
])
def test_registry_rejects_unknown_kinds_and_bad_options(name, options, message):
    with pytest.raises(ValueError, match=message):
        answer_kind(name, **options)
