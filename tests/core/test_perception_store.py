"""The run's perception store (judgebias.models.perception_store) changes no answer: the
simulated judge answers the same with it cold, warm or absent, and a torn entry, another
question or other code never serves a wrong perception."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judgebias import prompts
from judgebias.data import scenes
from judgebias.importgraph import code_version
from judgebias.models import sim
from judgebias.models.base import ChatRequest
from judgebias.models.perception_store import PerceptionStore
from judgebias.models.sim import SimBackend, SimModel


def _backend(perception_dir) -> SimBackend:
    judge = SimModel.from_params("judge", "neutral", {
        "caption_quality": 0.8, "style": {"opener": "Here we see", "signature": "frankly"}})
    return SimBackend({"sim/judge": judge}, seed=3, perception_dir=perception_dir)


@pytest.fixture(scope="module")
def requests() -> list[ChatRequest]:
    rng = np.random.default_rng(5)
    shown = [scenes.random_scene(rng) for _ in range(12)]
    captions = [scenes.reference_captions(s, rng, 1)[0] for s in shown]
    return [ChatRequest(model="sim/judge",
                        prompt=prompts.render("gveval_ref_free", {"Caption": caption}),
                        images=(scenes.to_png_bytes(scenes.render(s)),))
            for s, caption in zip(shown, captions, strict=True)]


def test_answers_are_the_same_cold_warm_and_without(tmp_path, requests, monkeypatch):
    sim._PERCEIVED.clear()
    without = _backend(None).complete(requests)
    sim._PERCEIVED.clear()
    cold = _backend(tmp_path).complete(requests)
    assert len(list(tmp_path.rglob("*.json"))) == len({r.images[0] for r in requests})
    sim._PERCEIVED.clear()

    def blind(image: bytes) -> scenes.Scene:
        raise AssertionError("a stored scene was perceived again")

    monkeypatch.setattr(scenes, "perceive", blind)
    warm = _backend(tmp_path).complete(requests)
    assert without == cold == warm
    assert all(response.ok for response in warm)
    sim._PERCEIVED.clear()


def test_a_torn_or_foreign_entry_is_computed_again(tmp_path):
    store = PerceptionStore(tmp_path, "scene", scenes.__name__)
    calls: list[int] = []

    def compute() -> list[int]:
        calls.append(1)
        return [1, 2]

    def fetch() -> list[int]:
        return store.fetch(b"png", "q", compute, json.dumps, json.loads)

    assert fetch() == [1, 2] and len(calls) == 1
    assert fetch() == [1, 2] and len(calls) == 1  # read back
    (entry,) = tmp_path.rglob("*.json")
    entry.write_text("[1,")  # a torn write
    assert fetch() == [1, 2] and len(calls) == 2
    assert json.loads(entry.read_text()) == [1, 2]  # replaced


def test_the_key_holds_the_image_the_question_and_the_code(tmp_path):
    store = PerceptionStore(tmp_path, "scene", scenes.__name__)
    paths = {store._path(b"a", ""), store._path(b"b", ""), store._path(b"a", "other")}
    assert len(paths) == 3
    other_code = PerceptionStore(tmp_path, "scene", "judgebias.studies.frame.sim")
    assert other_code._path(b"a", "").parent.parent != store._path(b"a", "").parent.parent
    assert code_version(scenes.__name__) != code_version("judgebias.studies.frame.sim")
    assert PerceptionStore(None, "scene", scenes.__name__).fetch(
        b"a", "", lambda: 5, str, int) == 5
    assert not list(tmp_path.rglob("*"))  # nothing was written above


def test_each_key_part_misses_and_the_unchanged_key_hits(tmp_path, monkeypatch):
    """Issue 39: what a simulated judge perceives depends on the image's bytes, the
    question and the perceiving code (with the numeric libraries' versions); a change of
    any is perceived again, the same three are read back. It reads no weights and runs
    on no device, so those are not part of its key."""
    from judgebias.models import perception_store

    calls: list[int] = []

    def fetch(image: bytes, question: str, kind: str = "scene") -> None:
        def compute() -> list[int]:
            calls.append(1)
            return [len(calls)]

        PerceptionStore(tmp_path, kind, scenes.__name__).fetch(
            image, question, compute, json.dumps, json.loads)

    def perceived(image: bytes, question: str, kind: str = "scene") -> bool:
        before = len(calls)
        fetch(image, question, kind)
        return len(calls) > before

    assert perceived(b"a", "q")
    assert not perceived(b"a", "q")
    assert perceived(b"b", "q")
    assert perceived(b"a", "r")
    assert perceived(b"a", "q", kind="look")
    monkeypatch.setattr(perception_store, "code_version", lambda module: "other")
    assert perceived(b"a", "q")
    assert not perceived(b"a", "q")
