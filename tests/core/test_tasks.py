"""The judging core on a task no study runs yet: a pairwise judge with a system prompt,
two images per request and label probabilities read from the log-probs (MMB's and
FRAME-pairwise's shape), through the real journal and the sim backend with a plugged-in
sim task."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pandas as pd
import pytest

from judgebias.config import validate_params
from judgebias.judging.answers import LabelProbabilities
from judgebias.judging.tasks import JudgeTask, run_task
from judgebias.models import sim
from judgebias.models.base import ChatRequest, TokenLogprob
from judgebias.models.context import RunContext
from judgebias.models.journal import TooManyFailures
from judgebias.studies.philautia.data import build_synthetic_dataset
from judgebias.studies.philautia.sim import CaptionTask

P_MORE = 0.8  # the planted judge prefers the image with more objects with this probability


@dataclass(frozen=True)
class PairTask:
    """Answers "[[A]]" or "[[B]]": which of two images shows more objects (ties: A)."""

    name: str = "pair"

    def recognise(self, prompt: str) -> bool:
        return "Generated captions:" in prompt

    def tokens(self, backend, model, request: ChatRequest) -> list[TokenLogprob]:
        if not request.system:
            raise ValueError("the pairwise judge expects a system prompt")
        first, second = backend.perceive(request, 0), backend.perceive(request, 1)
        p_a = P_MORE if len(first.objects) >= len(second.objects) else 1 - P_MORE
        label = "A" if p_a >= 0.5 else "B"
        top = (("A", math.log(p_a)), ("B", math.log(1 - p_a)))
        return [TokenLogprob("[[", 0.0, (("[[", 0.0),)),
                TokenLogprob(label, math.log(max(p_a, 1 - p_a)), top),
                TokenLogprob("]]", 0.0, (("]]", 0.0),))]


@pytest.fixture
def pairs(tmp_path, params, monkeypatch):
    monkeypatch.setattr(sim, "sim_tasks", lambda: [PairTask(), CaptionTask()])
    config = validate_params(params)
    config["journal_dir"] = str(tmp_path / "journal")
    images = build_synthetic_dataset(tmp_path / "images", 6, 3)
    paths = list(images["image_path"])
    items = pd.DataFrame({"pair_id": [f"p{i}" for i in range(5)], "image_a": paths[:5],
                          "image_b": paths[1:], "caption": "Which image shows more?"})
    items.loc[4, "image_b"] = None  # an item whose second image was not imported
    counts = [len(json.loads(s)["objects"]) for s in images["scene"]]
    return config, items, counts


def test_pairwise_task_with_system_prompt_and_label_probabilities(pairs):
    config, items, counts = pairs
    task = JudgeTask(prompt="gveval_ref_free", answer=LabelProbabilities(labels=("A", "B")),
                     fields={"Caption": "caption"}, images=("image_a", "image_b"),
                     system="caption_llava_ov")
    rows = run_task(RunContext(config), "corvid-pro", "evaluator", task, items)
    assert list(rows["status"]) == ["ok"] * 4 + ["no_image"]
    for i in range(4):
        more_a = counts[i] >= counts[i + 1]
        probs = json.loads(rows["probs"][i])
        assert rows["label"][i] == ("A" if more_a else "B")
        assert probs["A"] == pytest.approx(P_MORE if more_a else 1 - P_MORE)
        assert probs["A"] + probs["B"] == pytest.approx(1.0)
    assert rows["probs"][4] == "" and rows["raw_text"][4] == ""
    # the system prompt is part of the journal key: the same task without it is new work,
    # and the sim's planted judge fails it: the job stops (max_failures 0) ...
    again = run_task(RunContext(config), "corvid-pro", "evaluator", task, items)
    pd.testing.assert_frame_equal(rows, again)
    plain = JudgeTask(prompt=task.prompt, answer=task.answer, fields=task.fields,
                      images=task.images)
    with pytest.raises(TooManyFailures, match=r"panel.corvid-pro \(evaluator\): 1 of 1 calls "
                       "failed .*expects a system prompt"):
        run_task(RunContext(config), "corvid-pro", "evaluator", plain, items.iloc[:1])
    # ... unless the user accepts failures: then the row is kept as a failure, never a number
    bare = run_task(RunContext({**config, "max_failures": {"corvid-pro": 1.0}}), "corvid-pro",
                    "evaluator", plain, items.iloc[:1])
    assert bare["status"][0] == "failed" and bare["request_key"][0] != rows["request_key"][0]
    assert bare["label"].isna().all()
