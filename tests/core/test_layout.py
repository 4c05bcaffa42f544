"""One request layout on every backend (issue 19, part 9).

The same request, built by the judging core from a paper's template, is rendered by the
three payload builders (OpenAI chat messages, google-genai contents, vLLM's ``LLM.chat``
messages); each payload is read back as a sequence of text and image parts, and the three
must agree part for part: the same order, the same labels before each image, the same
image bytes. The journal key must tell layouts apart, serve-sim must rebuild the request
a backend sent, and a template whose image places do not match its task is refused
before anything is asked.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgebias import prompts
from judgebias.config import validate_params
from judgebias.data.scenes import random_scene, render, to_png_bytes
from judgebias.devtools.serve_sim.gemini_wire import parse_gemini
from judgebias.devtools.serve_sim.openai_wire import parse_openai
from judgebias.judging.answers import IntegerScore
from judgebias.judging.tasks import FreeText, JudgeTask, build_requests
from judgebias.models.base import ChatRequest
from judgebias.models.context import RunContext
from judgebias.models.gemini_wire import build_contents
from judgebias.models.journal import request_key
from judgebias.models.openai_wire import openai_chat_messages
from judgebias.models.vllm_backend import chat_messages as vllm_chat_messages
from judgebias.studies.birch.jobs import judge_task as birch_judge_task
from judgebias.studies.frame.jobs import pairwise_task, score_task
from judgebias.studies.frame.params import FrameParams

MODEL = "lumen-large"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def _openai_style(messages: list[dict]) -> list[tuple[str, str]]:
    """The user message's parts of OpenAI-format messages as (kind, text or image hash)."""
    [user] = [m for m in messages if m["role"] == "user"]
    return [("text", part["text"]) if part["type"] == "text"
            else ("image", _sha(base64.b64decode(part["image_url"]["url"].split(",", 1)[1])))
            for part in user["content"]]


def _gemini_style(contents: list) -> list[tuple[str, str]]:
    [turn] = contents
    assert turn.role == "user"
    return [("text", part.text) if part.text is not None
            else ("image", _sha(part.inline_data.data)) for part in turn.parts]


def rendered_by_every_backend(request: ChatRequest) -> list[tuple[str, str]]:
    """The parts every backend would send; fails unless all three agree."""
    openai_parts = _openai_style(openai_chat_messages(request))
    gemini_parts = _gemini_style(build_contents(request))
    vllm_parts = _openai_style(vllm_chat_messages(request))
    assert openai_parts == gemini_parts == vllm_parts
    return openai_parts


def labels(parts: list[tuple[str, str]]) -> list[str]:
    """The last line of the text right before each image ('' when none)."""
    found = []
    for i, (kind, _) in enumerate(parts):
        if kind == "image":
            before = parts[i - 1][1] if i and parts[i - 1][0] == "text" else ""
            found.append(before.rstrip("\n").rsplit("\n", 1)[-1].strip())
    return found


@pytest.fixture
def config(params, tmp_path):
    config = validate_params(params)
    config["journal_dir"] = str(tmp_path / "journal")
    return config


@pytest.fixture
def pictures(tmp_path) -> list[str]:
    """Two real PNG files (synthetic scenes written with Pillow)."""
    rng = np.random.default_rng(5)
    paths = []
    for i in range(2):
        path = tmp_path / f"picture-{i}.png"
        path.write_bytes(to_png_bytes(render(random_scene(rng))))
        paths.append(str(path))
    return paths


def _one_request(config: dict, task: JudgeTask, row: dict) -> ChatRequest:
    [request], [status] = build_requests(RunContext(config), MODEL, task, pd.DataFrame([row]))
    assert status == "ok" and request is not None
    return request


def test_frame_pairwise_images_sit_under_their_labels_on_every_backend(config, pictures):
    """Seed 004 Fig. 8: the question, then "Image 1:" and the first image, "Image 2:" and
    the second; the text the sim reads is the text parts joined."""
    request = _one_request(config, pairwise_task(FrameParams.from_params(config).pairwise.prompt),
                           {"instruction": "A red bicycle.", "first_image": pictures[0],
                            "second_image": pictures[1]})
    parts = rendered_by_every_backend(request)
    first, second = (_sha(Path(p).read_bytes()) for p in pictures)
    assert [kind for kind, _ in parts] == ["text", "image", "text", "image"]
    assert [value for kind, value in parts if kind == "image"] == [first, second]
    assert labels(parts) == ["Image 1:", "Image 2:"]
    assert parts[0][1].startswith("Two images were generated from the same instruction.")
    assert "".join(v for k, v in parts if k == "text") == request.prompt
    assert openai_chat_messages(request)[0] == {"role": "system",
                                                "content": prompts.render("frame_system")}


def test_frame_score_and_birch_judge_place_their_image_as_the_papers_print(config, pictures):
    """FRAME Figs. 4-7: "Image:" after the instruction; BIRCH Fig. 21 (its Base without
    the reference block): the image under "Inputs", before the user instruction."""
    score = _one_request(config, score_task(FrameParams.from_params(config).prompts, "standard"),
                         {"instruction": "Two cats.", "image": pictures[0]})
    parts = rendered_by_every_backend(score)
    assert [kind for kind, _ in parts] == ["text", "image"]
    assert labels(parts) == ["Image:"] and parts[0][1].rstrip().endswith("Two cats.\nImage:")

    judge = _one_request(config, birch_judge_task("base"),
                         {"query": "What colour is the car?", "first": "Red.",
                          "second": "Blue.", "image": pictures[0]})
    before, image, after = rendered_by_every_backend(judge)
    assert image[0] == "image"
    assert before[1].rstrip().endswith("Inputs")
    assert after[1].lstrip().startswith("[The Start of User Instruction] What colour")


def test_unmarked_and_leading_image_places(config, pictures):
    """G-VEval (unmarked): the image after the whole text, as its scorer sends it; the
    LLaVA-OneVision caption prompt: the image first."""
    evaluator = JudgeTask(prompt="gveval_ref_free", answer=IntegerScore(),
                          fields={"Caption": "caption"})
    request = _one_request(config, evaluator, {"caption": "A dog.",
                                               "image_path": pictures[0]})
    assert request.image_at == ()
    assert [k for k, _ in rendered_by_every_backend(request)] == ["text", "image"]
    caption = _one_request(config, JudgeTask(prompt="caption_llava_ov", answer=FreeText()),
                           {"image_path": pictures[0]})
    assert rendered_by_every_backend(caption) == [
        ("image", _sha(Path(pictures[0]).read_bytes())),
        ("text", "Provide a one-sentence caption for the provided image.")]


def test_the_journal_key_covers_the_layout():
    png = to_png_bytes(render(random_scene(np.random.default_rng(1))))
    after = ChatRequest("m", "Look: here.", (png,))
    spelled_out = ChatRequest("m", "Look: here.", (png,), image_at=(11,))
    inside = ChatRequest("m", "Look: here.", (png,), image_at=(5,))
    assert spelled_out == after  # the default layout, written out, is the same request
    assert request_key(spelled_out, "openai") == request_key(after, "openai")
    assert request_key(inside, "openai") != request_key(after, "openai")
    with pytest.raises(ValueError, match="image_at"):
        ChatRequest("m", "short", (png,), image_at=(99,))
    with pytest.raises(ValueError, match="places 2 images"):
        ChatRequest("m", "short", (png,), image_at=(1, 2))


def test_serve_sim_rebuilds_the_request_a_backend_sent(config, pictures):
    """What the openai and gemini clients send is read back as the same request (same
    text, images and places), so a model behind serve-sim sees what the sim sees."""
    request = _one_request(config, pairwise_task(FrameParams.from_params(config).pairwise.prompt),
                           {"instruction": "A red bicycle.", "first_image": pictures[0],
                            "second_image": pictures[1]})
    body = {"model": request.model, "messages": openai_chat_messages(request)}
    rebuilt, _ = parse_openai(body)
    assert (rebuilt.prompt, rebuilt.images, rebuilt.image_at, rebuilt.system) == (
        request.prompt, request.images, request.image_at, request.system)
    contents = [c.model_dump(mode="json", exclude_none=True)
                for c in build_contents(request)]
    rebuilt, _ = parse_gemini(request.model, {"contents": contents})
    assert (rebuilt.prompt, rebuilt.images, rebuilt.image_at) == (
        request.prompt, request.images, request.image_at)


def test_image_places_must_match_the_task_before_any_call(config, pictures):
    """A two-image template on a one-image task is refused by the request builder (the
    model jobs and `judgebias plan` both build requests with it): nothing is asked."""
    wrong = JudgeTask(prompt="frame_pairwise", answer=FreeText(),
                      fields={"Instruction": "instruction"}, images=("image",))
    with pytest.raises(ValueError, match=r"frame_pairwise.*2 image places.*attaches 1"):
        build_requests(RunContext(config), MODEL, wrong, pd.DataFrame(
            [{"instruction": "x", "image": pictures[0]}]))
