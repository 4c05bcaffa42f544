"""The sim backend answers like a model and carries exactly the traits planted in it."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from judgebias import prompts
from judgebias.data.scenes import (
    match_claims,
    perceive,
    random_scene,
    read_caption,
    reference_captions,
    render,
    scene_claims,
    to_png_bytes,
)
from judgebias.models.base import ChatRequest, ChatResponse, Sampling
from judgebias.models.sim import SimBackend, SimModel, request_rng, score_logprobs
from judgebias.studies.philautia.sim import (
    CaptionTask,
    GVEvalTask,
    evaluation,
    has_signature,
    parse_evaluation_prompt,
    style_bonus,
    write_caption,
)

CAPTION_PROMPT = prompts.render("caption_llava_ov")
FINAL = re.compile(r"The final score is \$(\d{1,3})\$\.$")

LUMEN, CORVID = "In this picture,", "This image shows"
PANEL = {
    # key: (family, opener, signature, extra traits)
    "lumen-large": ("lumen", LUMEN, "vivid", {"self_preference": 0.12}),
    "lumen-base": ("lumen", LUMEN, "neatly", {"preferences": {"families": {"lumen": 0.1}}}),
    "corvid-pro": ("corvid", CORVID, "clearly", {"caption_quality": 0.4}),
    "corvid-lite": ("corvid", CORVID, "plainly", {"tokenizer": "digits"}),
    "judge": ("neutral", "Here we see", "frankly", {"noise": 0.05}),
}


def _model(key: str) -> SimModel:
    family, opener, signature, extra = PANEL[key]
    traits = {
        "caption_quality": 1.0,
        "style": {"opener": opener, "signature": signature},
        "leniency": 0.5,  # accurate captions land near 75, far from the 100 ceiling
        "spread": 0.5,
        "noise": 0.08,
        **extra,
    }
    return SimModel.from_params(key, family, traits)


@pytest.fixture(scope="module")
def backend() -> SimBackend:
    return SimBackend({f"sim/{key}": _model(key) for key in PANEL}, seed=7)


@pytest.fixture(scope="module")
def images() -> list[tuple[object, bytes]]:
    rng = np.random.default_rng(2024)
    scenes = [random_scene(rng) for _ in range(200)]
    return [(scene, to_png_bytes(render(scene))) for scene in scenes]


def _eval_prompt(caption: str, references: list[str] | None = None) -> str:
    """The G-VEval prompt as the judge jobs render it (judgebias.prompts)."""
    if references is None:
        return prompts.render("gveval_ref_free", {"Caption": caption})
    return prompts.render("gveval_ref", {"Caption": caption, "Reference": references})


def _evaluate(
    backend: SimBackend,
    judge: str,
    png: bytes,
    caption: str,
    references: list[str] | None = None,
    sampling: Sampling | None = None,
) -> ChatResponse:
    request = ChatRequest(
        model=f"sim/{judge}",
        prompt=_eval_prompt(caption, references),
        images=(png,),
        sampling=sampling or Sampling(),
    )
    return backend.complete([request])[0]


def _score(response: ChatResponse) -> int:
    assert response.ok, response.error
    match = FINAL.search(response.text)
    assert match, response.text
    return int(match.group(1))


def _mean_score(backend: SimBackend, judge: str, pairs: list[tuple[bytes, str]]) -> float:
    return float(np.mean([_score(_evaluate(backend, judge, png, cap)) for png, cap in pairs]))


def _caption(backend: SimBackend, key: str, png: bytes) -> ChatResponse:
    request = ChatRequest(model=f"sim/{key}", prompt=CAPTION_PROMPT, images=(png,))
    return backend.complete([request])[0]


def test_answers_are_deterministic(backend: SimBackend, images) -> None:
    _, png = images[0]
    assert _caption(backend, "corvid-pro", png) == _caption(backend, "corvid-pro", png)
    caption = _caption(backend, "corvid-pro", png).text
    first = [_evaluate(backend, "judge", png, caption) for _ in range(2)]
    assert first[0] == first[1]
    rebuilt = SimBackend({f"sim/{key}": _model(key) for key in PANEL}, seed=7)
    assert _evaluate(rebuilt, "judge", png, caption) == first[0]


def test_quality_one_captions_are_correct_and_in_style(backend: SimBackend, images) -> None:
    for scene, png in images[:60]:
        for key in ("lumen-large", "lumen-base"):
            response = _caption(backend, key, png)
            assert response.ok
            _, opener, signature, _ = PANEL[key]
            text = response.text
            assert text.startswith(opener) and has_signature(text, signature)
            assert text.endswith(".") and text.count(".") == 1
            assert "".join(t.token for t in response.tokens) == text
            assert match_claims(read_caption(text), scene_claims(scene)).accuracy == 1.0


def test_low_quality_generator_hallucinates(backend: SimBackend, images) -> None:
    accuracies = [
        match_claims(
            read_caption(_caption(backend, "corvid-pro", png).text), scene_claims(scene)
        ).accuracy
        for scene, png in images[:100]
    ]
    assert np.mean(accuracies) < 0.8


def test_better_captions_get_higher_scores(backend: SimBackend, images) -> None:
    good = [(png, _caption(backend, "lumen-base", png).text) for _, png in images[:120]]
    bad = [(png, _caption(backend, "corvid-pro", png).text) for _, png in images[:120]]
    # The neutral judge has no style bias, so only accuracy separates the two.
    assert _mean_score(backend, "judge", good) > _mean_score(backend, "judge", bad) + 5


def _styled_pairs(images, key: str) -> list[tuple[bytes, str]]:
    model, rng = _model(key), np.random.default_rng(0)
    return [(png, write_caption(model, perceive(png), rng, quality=1.0)) for _, png in images]


def test_self_preference_raises_scores_on_own_captions(backend: SimBackend, images) -> None:
    own = _styled_pairs(images, "lumen-large")
    other = _styled_pairs(images, "corvid-lite")  # equally accurate, another family's style
    gap = _mean_score(backend, "lumen-large", own) - _mean_score(backend, "lumen-large", other)
    control = _mean_score(backend, "judge", own) - _mean_score(backend, "judge", other)
    assert 8 < gap < 16  # planted: +0.12
    assert abs(control) < 3


def test_family_bonus_favours_siblings_but_not_self(backend: SimBackend, images) -> None:
    sibling = _styled_pairs(images, "lumen-large")
    stranger = _styled_pairs(images, "corvid-lite")
    gap = _mean_score(backend, "lumen-base", sibling) - _mean_score(backend, "lumen-base", stranger)
    assert 6 < gap < 14  # planted: +0.10
    base = _model("lumen-base")
    own_caption = _styled_pairs(images[:1], "lumen-base")[0][1]
    assert style_bonus(backend, base, own_caption) == base.self_preference == 0.0


def test_reference_based_prompt_is_read_and_scored(backend: SimBackend, images) -> None:
    scene, png = images[3]
    references = reference_captions(scene, np.random.default_rng(1))
    caption = write_caption(_model("judge"), scene, np.random.default_rng(2), quality=1.0)
    prompt = _eval_prompt(caption, references)
    assert parse_evaluation_prompt(prompt) == (caption, references)
    assert parse_evaluation_prompt(_eval_prompt(caption)) == (caption, None)
    response = _evaluate(backend, "judge", png, caption, references)
    assert _score(response) > 50
    assert "reference captions" in response.text


def _score_positions(response: ChatResponse) -> list[int]:
    tokens = [t.token for t in response.tokens]
    start = tokens.index(" $") + 1
    return list(range(start, tokens.index("$", start)))


def test_score_format_and_whole_token_distribution(backend: SimBackend, images) -> None:
    _, png = images[5]
    caption = _caption(backend, "lumen-base", png).text
    response = _evaluate(backend, "judge", png, caption, sampling=Sampling(top_logprobs=30))
    score = _score(response)
    assert "".join(t.token for t in response.tokens) == response.text
    assert [t.token for t in response.tokens[-3:]] == [str(score), "$", "."]
    (position,) = _score_positions(response)
    token = response.tokens[position]
    assert token.token == str(score)
    mass = sum(math.exp(lp) for _, lp in token.top)
    assert mass <= 1 + 1e-9 and mass > 0.99  # noise 0.05: 30 integers cover +-3 sd
    assert dict(token.top).get(token.token, token.logprob) == pytest.approx(token.logprob)
    assert [lp for _, lp in token.top] == sorted((lp for _, lp in token.top), reverse=True)


def test_digit_tokenizer_spells_the_score(backend: SimBackend, images) -> None:
    for _, png in images[:20]:
        caption = _caption(backend, "lumen-base", png).text
        response = _evaluate(
            backend, "corvid-lite", png, caption, sampling=Sampling(top_logprobs=11)
        )
        score = _score(response)
        positions = _score_positions(response)
        digits = [response.tokens[i] for i in positions]
        assert [t.token for t in digits] == list(str(score))
        for t in [*digits, response.tokens[positions[-1] + 1]]:
            assert sum(math.exp(lp) for _, lp in t.top) == pytest.approx(1.0, abs=1e-9)
            assert dict(t.top)[t.token] == pytest.approx(t.logprob)
        # The first digit's alternatives are the ten digits' marginal probabilities.
        assert {alt for alt, _ in digits[0].top} == set("0123456789")


def test_top_lists_are_sub_normalised_for_small_k(backend: SimBackend, images) -> None:
    _, png = images[6]
    for judge in ("judge", "corvid-lite"):
        response = _evaluate(
            backend, judge, png, "A red circle.", sampling=Sampling(top_logprobs=3)
        )
        for i in _score_positions(response):
            assert len(response.tokens[i].top) <= 3
            assert sum(math.exp(lp) for _, lp in response.tokens[i].top) <= 1 + 1e-9


def test_temperature_zero_takes_the_mode(backend: SimBackend, images) -> None:
    _, png = images[7]
    caption = "A big red circle on the left on a white background."
    scores = {
        _score(_evaluate(backend, "judge", png, caption, sampling=Sampling(temperature=0, seed=s)))
        for s in range(5)
    }
    assert len(scores) == 1
    # the mode of the judge's distribution around its opinion of this very content
    result = evaluation(backend, _model("judge"), perceive(png), caption, None)
    request = ChatRequest(model="sim/judge", prompt=_eval_prompt(caption, None), images=(png,))
    shift = request_rng(backend.seed, request, with_sampling=False).standard_normal()
    opinion = min(max(result.mean + _model("judge").noise * shift, 0.0), 1.0)
    assert scores == {int(np.argmax(score_logprobs(opinion, _model("judge").noise)))}


def test_expected_score_tracks_latent_mean() -> None:
    logp = score_logprobs(0.73, 0.08)
    assert float(np.sum(np.exp(logp) * np.arange(101))) == pytest.approx(73, abs=0.5)


def test_failures_are_reported_not_raised(backend: SimBackend, images) -> None:
    _, png = images[0]
    unknown = ChatRequest(model="sim/nobody", prompt=CAPTION_PROMPT, images=(png,))
    no_image = ChatRequest(model="sim/judge", prompt=CAPTION_PROMPT)
    odd_task = ChatRequest(model="sim/judge", prompt="What is 2 + 2?", images=(png,))
    broken = ChatRequest(model="sim/judge", prompt=CAPTION_PROMPT, images=(b"nope",))
    no_caption = ChatRequest(model="sim/judge", prompt=_eval_prompt(" "), images=(png,))
    responses = backend.complete([unknown, no_image, odd_task, broken, no_caption])
    assert [r.status for r in responses] == ["failed"] * 5
    assert "unknown model" in responses[0].error
    assert responses[1].error == "sim: no image attached"
    assert responses[2].error == ("sim: the prompt is none of the tasks it answers "
                                  "(gveval, mmb_pairwise, mmb_rephrase, frame_score, "
                                  "frame_pairwise, frame_instruction, birch_judge, "
                                  "birch_label, birch_reference, birch_anchor, "
                                  "birch_lengthen, caption)")
    assert responses[3].error.startswith("sim: ")
    assert "no caption found" in responses[4].error


def test_tasks_are_tried_in_order_and_pluggable(images) -> None:
    """The studies' tasks in registry order, philautia's broad caption recogniser last,
    and a task of a study's own, given to the backend, which answers only what its tasks
    recognise."""
    from judgebias.models.base import TokenLogprob
    from judgebias.models.sim import sim_tasks

    # philautia's G-VEval, MMB's, FRAME's, BIRCH's, then philautia's broad captioning
    assert [t.name for t in sim_tasks()] == ["gveval", "mmb_pairwise", "mmb_rephrase",
                                             "frame_score", "frame_pairwise",
                                             "frame_instruction", "birch_judge",
                                             "birch_label", "birch_reference",
                                             "birch_anchor", "birch_lengthen", "caption"]
    assert GVEvalTask().recognise(_eval_prompt("Write a caption."))  # mentions a caption
    assert CaptionTask().recognise(CAPTION_PROMPT)
    assert not CaptionTask().recognise("Rate how good this caption is.")

    class Echo:
        name = "echo"

        def recognise(self, prompt: str) -> bool:
            return prompt.startswith("ECHO ")

        def tokens(self, backend, model, request):
            return [TokenLogprob(request.prompt[5:], 0.0)]

    _, png = images[0]
    models = {"sim/judge": _model("judge")}
    backend = SimBackend(models, seed=7, tasks=[Echo(), *sim_tasks()])
    echo, caption = backend.complete([
        ChatRequest(model="sim/judge", prompt="ECHO hello", images=(png,)),
        ChatRequest(model="sim/judge", prompt=CAPTION_PROMPT, images=(png,)),
    ])
    assert (echo.text, caption.ok) == ("hello", True)
    only = SimBackend(models, seed=7, tasks=[Echo()]).complete(
        [ChatRequest(model="sim/judge", prompt=CAPTION_PROMPT, images=(png,))])[0]
    assert only.error == "sim: the prompt is none of the tasks it answers (echo)"


def test_max_tokens_truncates_like_a_real_model(backend: SimBackend, images) -> None:
    _, png = images[0]
    request = ChatRequest(
        model="sim/judge",
        prompt=_eval_prompt("A red circle."),
        images=(png,),
        sampling=Sampling(max_tokens=5),
    )
    response = backend.complete([request])[0]
    assert response.finish_reason == "length" and len(response.tokens) == 5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"style": {"opener": "On the left", "signature": "neatly"}}, "scene words"),
        ({"tokenizer": "bytes"}, "tokenizer"),
        ({"caption_quality": 1.5}, "caption_quality"),
        ({"preferences": {"people": {}}}, "preferences"),
    ],
)
def test_bad_traits_name_the_key(change: dict, message: str) -> None:
    traits = {"caption_quality": 0.9, "style": {"opener": "Here", "signature": "neatly"}}
    with pytest.raises(ValueError, match=message):
        SimModel.from_params("m", "f", {**traits, **change})


def test_unknown_traits_are_kept_for_other_studies() -> None:
    model = SimModel.from_params(
        "m",
        "f",
        {
            "caption_quality": 1,
            "style": {"opener": "Here", "signature": "x"},
            "informativeness_weight": 0.3,
        },
    )
    assert model.extra == {"informativeness_weight": 0.3}
