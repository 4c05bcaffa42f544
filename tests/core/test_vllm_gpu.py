"""The vllm backend on a real GPU, end to end through judgebias's caption and score jobs.

The model is the tiny random-weight LLaVA of tests/helpers/tiny_vlm.py (why, and how it is built,
is said there).

A random model's answers are mostly unparseable as scores, or cut off by max_tokens: they
must be recorded as "unparseable" or "truncated" (never a number for the analysis), which is
part of what is checked.

Skipped unless torch sees a CUDA GPU and torch, transformers, tokenizers and vllm are
installed (``pip install judgebias[vllm]``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.project import REPO
from helpers.tiny_vlm import SPECIAL_TOKENS, build_tiny_vlm

pytestmark = pytest.mark.gpu

ENGINE: dict[str, Any] = {  # engine args for a tiny model on a shared GPU
    "max_model_len": 2048,
    "gpu_memory_utilization": 0.2,
    "enforce_eager": True,
    "dtype": "bfloat16",
    "limit_mm_per_prompt": {"image": 1},
    "max_num_seqs": 16,
    "seed": 0,
}
VLLM_MODELS = ("corvid-pro", "corvid-lite")  # no other panel model's sim traits name them
STATUSES = {"ok", "empty", "failed", "unparseable", "out_of_range", "ambiguous", "truncated",
            "no_caption"}


def _require_gpu_stack() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed (judgebias[vllm])")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    for name in ("transformers", "tokenizers", "vllm"):
        pytest.importorskip(name, reason=f"{name} is not installed (judgebias[vllm])")


@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory) -> Path:
    _require_gpu_stack()
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny-llava"))


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    """No hub, no telemetry: the model is a local folder."""
    for name, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                        "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}.items():
        monkeypatch.setenv(name, value)


def _params(model_dir: Path, **fields: Any) -> dict[str, Any]:
    """The default params with two panel models served by vllm from ``model_dir``; no
    image limit of their own: the backend takes it from their studies (corvid-pro's
    MMB and FRAME analysis requests carry two images)."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    engine = {k: v for k, v in ENGINE.items() if k != "limit_mm_per_prompt"}
    for key in VLLM_MODELS:
        model = params["panel"][key]
        model.pop("sim")
        model.update(backend="vllm", model_id=str(model_dir), revision="",
                     resources={"gpus": 1}, engine=copy.deepcopy(engine), **fields)
        model["sampling"]["max_tokens"] = 64
    return params


def _png(images, i: int) -> bytes:
    return Path(images["image_path"].iloc[i]).read_bytes()


def test_caption_and_score_jobs_run_through_vllm(tiny_vlm, tmp_path):
    import pandas as pd

    from judgebias.config import validate_params
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.judging.answers import parse_score
    from judgebias.judging.values import numeric_values
    from judgebias.models.base import ChatResponse
    from judgebias.models.context import RunContext
    from judgebias.studies.philautia.data import build_synthetic_dataset
    from judgebias.studies.philautia.jobs import caption_images, score_captions
    from judgebias.studies.philautia.params import PhilautiaParams
    from judgebias.studies.philautia.tables import CAPTIONS, IMAGES, SCORES

    config = validate_params(_params(tiny_vlm))
    config["journal_dir"] = str(tmp_path / "journal")
    run, view = RunContext(config), PhilautiaParams.from_params(config)
    images = build_synthetic_dataset(tmp_path / "dataset", 4, 1)
    images_path = str(tmp_path / "images.parquet")
    write_table(images, images_path, IMAGES)

    def captions_of(generator: str) -> tuple[pd.DataFrame, str]:
        path = str(tmp_path / f"captions-{generator}.parquet")
        write_table(caption_images(run, generator, images_path, prompt=view.caption_prompt),
                    path, CAPTIONS)
        return read_table(path, CAPTIONS), path

    captions, captions_path = captions_of("corvid-pro")
    assert len(captions) == 4 and set(captions["status"]) <= STATUSES
    assert (captions["backend"] == "vllm").all() and captions["request_key"].notna().all()
    ok = captions["status"] == "ok"
    assert captions.loc[ok, "raw_text"].str.strip().str.len().gt(0).all()
    assert captions.loc[ok, "label"].notna().all()  # the caption text
    assert captions.loc[captions["status"].isin(["failed", "empty"]), "label"].isna().all()
    cut = captions["status"] == "truncated"  # cut off by max_tokens: text kept for audit
    assert (captions.loc[cut, "finish_reason"] == "length").all()
    assert (captions.loc[cut, "label"] == captions.loc[cut, "raw_text"].str.strip()).all()
    for payload in captions.loc[ok, "logprobs"]:  # top_logprobs: 10 in params.yaml
        tokens = ChatResponse.tokens_from_json(payload)
        assert tokens and all(t.logprob <= 0 and len(t.top) <= 10 for t in tokens)
    again = caption_images(run, "corvid-pro", images_path,  # answered from the journal
                           prompt=view.caption_prompt)
    assert again["raw_text"].tolist() == captions["raw_text"].tolist()

    sim_captions, sim_path = captions_of("lumen-large")
    for evaluator, setting, caps, path in (("corvid-lite", "ref_free", sim_captions, sim_path),
                                           ("corvid-pro", "ref_based", captions,
                                            captions_path)):
        scores = score_captions(run, evaluator, setting, images_path, path,
                                spec=view.settings[setting])
        write_table(scores, tmp_path / f"scores-{evaluator}.parquet", SCORES)
        assert len(scores) == 4 and set(scores["status"]) <= STATUSES
        asked = scores["request_key"].notna()
        assert asked.tolist() == (caps["status"] == "ok").tolist()
        assert (scores.loc[~asked, "status"] == "no_caption").all()
        usable = numeric_values(scores, config["philautia"]["score"], 100.0)
        for row, score in zip(scores.itertuples(index=False), usable, strict=True):
            answer = parse_score(row.raw_text, ChatResponse.tokens_from_json(row.logprobs),
                                 row.finish_reason or "stop")
            if row.status == "ok":  # a parseable $NN$ in the text, and only then a number
                assert row.value == answer.value and 0 <= row.value <= 100
                assert 0 <= score <= 1
            else:  # never a number for the analysis; out of range / cut off: kept for audit
                assert pd.isna(score)
                if row.status in ("out_of_range", "truncated") and answer.value is not None:
                    assert row.value == answer.value
                else:
                    assert pd.isna(row.value) and pd.isna(row.expected)
            if row.status == "unparseable":
                assert row.raw_text.strip() and parse_score(row.raw_text).value is None
        assert scores.loc[asked, "logprobs_available"].all()
    assert (sim_captions["status"] == "ok").all()  # so the ref_free scores were all asked


def test_backend_batches_maps_log_probs_and_fails_bad_requests_alone(tiny_vlm, tmp_path):
    import io
    import math

    from PIL import Image

    from judgebias.models.base import ChatRequest, Sampling
    from judgebias.models.vllm_backend import VllmBackend
    from judgebias.studies.philautia.data import build_synthetic_dataset

    images = build_synthetic_dataset(tmp_path / "dataset", 2, 3)
    jpeg = io.BytesIO()
    Image.open(io.BytesIO(_png(images, 1))).convert("RGB").save(jpeg, format="JPEG")
    model = str(tiny_vlm)
    greedy = Sampling(temperature=0.0, max_tokens=24, top_logprobs=5, seed=0)
    sampled = Sampling(temperature=1.0, max_tokens=24, top_logprobs=3, seed=7)
    requests = [
        ChatRequest(model=model, prompt="Provide a caption.", images=(_png(images, 0),),
                    sampling=greedy),
        ChatRequest(model=model, prompt="Provide a caption.", images=(jpeg.getvalue(),),
                    sampling=sampled),
        ChatRequest(model=model, prompt="word " * 5000, images=(_png(images, 0),),
                    sampling=greedy),  # longer than max_model_len: vLLM rejects it
        ChatRequest(model="another/model", prompt="Provide a caption.", sampling=greedy),
        ChatRequest(model=model, prompt="Provide a caption.", images=(b"not an image",),
                    sampling=greedy),
    ]
    backend = VllmBackend(model, engine_args=ENGINE)
    assert backend.name == "vllm" and backend.version.startswith("vllm-")
    seen: dict[int, Any] = {}
    responses = backend.complete(requests, on_response=lambda i, r: seen.setdefault(i, r))
    assert sorted(seen) == list(range(len(requests)))
    assert [seen[i] for i in range(len(requests))] == responses
    first, second, too_long, other, broken = responses
    assert too_long.status == "failed" and "rejected" in too_long.error
    assert other.status == "failed" and "another/model" in other.error
    assert broken.status == "failed" and "image format" in broken.error
    for response, k in ((first, 5), (second, 3)):
        assert response.status in {"ok", "empty"}, response.error
        assert response.usage["prompt_tokens"] > 16  # the image's 16 tokens and the text
        assert 0 < response.usage["completion_tokens"] <= 24
        assert response.tokens is not None and len(response.tokens) <= 24
        for token in response.tokens:
            assert token.logprob <= 0 and len(token.top) <= k
            assert [lp for _, lp in token.top] == sorted((lp for _, lp in token.top),
                                                         reverse=True)
            assert sum(math.exp(lp) for _, lp in token.top) <= 1.0 + 1e-3
        # The tokens spell the text unless a special token (skipped in the text) or a
        # partial UTF-8 byte (decoded alone as U+FFFD) was sampled: a random model may.
        if all(t.token.isascii() and t.token not in SPECIAL_TOKENS for t in response.tokens):
            assert "".join(t.token for t in response.tokens) == response.text
    for token in first.tokens or ():  # greedy: each chosen token is the most likely one
        assert token.logprob == pytest.approx(token.top[0][1], abs=1e-3)
    assert json.loads(first.logprobs_json())


def test_a_lora_adapter_changes_the_answers_and_their_keys(tiny_vlm, tmp_path):
    """Issue 41 item 5 on a GPU: the caption job with a random adapter in the model's
    ``vision-lora`` folder (Phi-4-multimodal's layout) answers otherwise than without it,
    under other journal keys, with the engine sized for it and for corvid-pro's studies."""
    import gc
    import shutil

    from helpers.tiny_lora import save_random_lora

    from judgebias.config import validate_params
    from judgebias.io.artifacts import write_table
    from judgebias.models.context import RunContext
    from judgebias.models.registry import build_backend
    from judgebias.studies.philautia.data import build_synthetic_dataset
    from judgebias.studies.philautia.jobs import caption_images
    from judgebias.studies.philautia.params import PhilautiaParams
    from judgebias.studies.philautia.tables import IMAGES

    model_dir = tmp_path / "tiny-llava"
    shutil.copytree(tiny_vlm, model_dir)  # the module's model stays without the adapter
    save_random_lora(model_dir / "vision-lora", model_dir, rank=8, seed=1)
    images = build_synthetic_dataset(tmp_path / "dataset", 3, 1)
    images_path = str(tmp_path / "images.parquet")
    write_table(images, images_path, IMAGES)
    captions = {}
    for name, fields in (("plain", {}), ("lora", {"lora": {"image": "vision-lora"}})):
        config = validate_params(_params(model_dir, **fields))
        config["journal_dir"] = str(tmp_path / "journal")  # one journal for both
        captions[name] = caption_images(
            RunContext(config), "corvid-pro", images_path,
            prompt=PhilautiaParams.from_params(config).caption_prompt)
        gc.collect()  # the job's engine, gone with the job: its GPU memory back
        backend, _ = build_backend(RunContext(config), "corvid-pro", "generator")
        options = backend.engine_options()  # type: ignore[attr-defined]
        assert options["limit_mm_per_prompt"] == {"image": 2}
        assert options.get("enable_lora", False) == (name == "lora")
        if name == "lora":
            assert options["max_lora_rank"] == 8 and options["max_loras"] == 1
    plain, lora = captions["plain"], captions["lora"]
    assert not set(plain["request_key"]) & set(lora["request_key"])
    assert plain["raw_text"].tolist() != lora["raw_text"].tolist()
    assert all(a != b for a, b in zip(plain["raw_text"], lora["raw_text"], strict=True))
