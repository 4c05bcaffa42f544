"""CPU-only checks of the GPU-side code: local GPU assignment, and the vllm backend's pure
helpers (message building, image types, mapping vLLM's output structure to our answers).

The GPU assignment tests use real processes and real ``flock`` locks on explicit device
lists, so they need no GPU. The vllm helper tests feed objects shaped like vLLM's
``RequestOutput`` / ``CompletionOutput`` / ``Logprob`` (same fields, see vllm/outputs.py
and vllm/logprobs.py) to the mapping functions; the backend itself runs in
tests/core/test_vllm_gpu.py where a GPU is present.
"""

from __future__ import annotations

import base64
import fcntl
import io
import itertools
import math
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from judgebias.judging.answers import STATUS_OK, STATUS_TRUNCATED, parse_score
from judgebias.models.base import ChatRequest, Sampling
from judgebias.models.gpu import (
    ENV,
    GpuAssignmentError,
    assign_gpus,
    job_lock_dir,
    lock_path,
    visible_devices,
)
from judgebias.models.openai_wire import image_data_url
from judgebias.models.vllm_backend import (
    INSTALL_HINT,
    chat_messages,
    failed,
    is_request_error,
    map_logprobs,
    map_output,
    sampling_kwargs,
)
from judgebias.models.wire import image_mime_type

DEVICES = ["0", "1", "2"]
CTX = multiprocessing.get_context("fork")  # flock is POSIX-only anyway; fork starts fast


# ------------------------------------------------------------------ GPU assignment


def test_visible_devices_follow_cuda_visible_devices(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, "0, 3")
    assert visible_devices() == ["0", "3"]
    monkeypatch.setenv(ENV, "")
    assert visible_devices() == []
    monkeypatch.setenv(ENV, "2,-1,3")  # like CUDA: enumeration stops at an invalid id
    assert visible_devices() == ["2"]
    monkeypatch.delenv(ENV)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi: no GPU
    assert visible_devices() == []


def test_zero_gpus_is_a_no_op(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, "7")
    with assign_gpus(0, tmp_path / "locks", devices=[]) as chosen:
        assert chosen == [] and os.environ[ENV] == "7"
    assert not (tmp_path / "locks").exists()
    with pytest.raises(ValueError, match=">= 0"), assign_gpus(-1, tmp_path):
        pass


def test_too_few_devices_names_the_need_and_the_devices(tmp_path):
    with pytest.raises(GpuAssignmentError, match=r"needs 4 GPU\(s\) but 3 were found") as err, \
            assign_gpus(4, tmp_path, devices=DEVICES):
        pass
    assert "'0', '1', '2'" in str(err.value)
    with pytest.raises(GpuAssignmentError, match="none"), assign_gpus(1, tmp_path, devices=[]):
        pass


def test_sets_and_restores_cuda_visible_devices(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV, raising=False)
    with assign_gpus(2, tmp_path, devices=DEVICES) as chosen:
        assert chosen == ["0", "1"] and os.environ[ENV] == "0,1"
        assert lock_path(tmp_path, "0").read_text().strip() == str(os.getpid())
    assert ENV not in os.environ
    monkeypatch.setenv(ENV, "0,1,2")
    with assign_gpus(3, tmp_path, devices=DEVICES) as chosen:  # the locks were released
        assert os.environ[ENV] == "0,1,2" and chosen == DEVICES
    assert os.environ[ENV] == "0,1,2"
    with pytest.raises(KeyError), assign_gpus(1, tmp_path, devices=["5"]):
        raise KeyError("the job failed")
    assert os.environ[ENV] == "0,1,2"
    with assign_gpus(1, tmp_path, devices=["5"]):  # released after an exception too
        pass


def test_lock_file_names_are_safe_for_uuid_ids(tmp_path):
    assert lock_path(tmp_path, "MIG-1/2:3").name == "gpu-MIG-1_2_3.lock"
    assert lock_path(tmp_path, "3").name == "gpu-3.lock"


def test_a_held_device_is_not_given_twice_in_one_process(tmp_path):
    with assign_gpus(1, tmp_path, devices=["0", "1"]) as first, \
            assign_gpus(1, tmp_path, devices=["0", "1"]) as second:
        assert first == ["0"] and second == ["1"]
    with pytest.raises(GpuAssignmentError, match="within"), \
            assign_gpus(1, tmp_path, devices=["0"]), \
            assign_gpus(1, tmp_path, devices=["0"], timeout_s=0.2, poll_s=0.05):
        pass


def _hold(lock_dir: str, n: int, hold_s: float, barrier: Any, results: Any) -> None:
    """Child: take n devices, wait at the barrier (if any), hold, report what it had."""
    with assign_gpus(n, Path(lock_dir), devices=DEVICES, timeout_s=30, poll_s=0.02) as chosen:
        start = time.monotonic()
        seen = os.environ[ENV]
        if barrier is not None:
            barrier.wait(timeout=30)
        time.sleep(hold_s)
        end = time.monotonic()
    results.put((chosen, seen, start, end))


def _run_holders(lock_dir: Path, count: int, n: int, hold_s: float, barrier: Any = None
                 ) -> list[tuple[list[str], str, float, float]]:
    results = CTX.Queue()
    procs = [CTX.Process(target=_hold, args=(str(lock_dir), n, hold_s, barrier, results))
             for _ in range(count)]
    for proc in procs:
        proc.start()
    out = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    return out


def test_concurrent_jobs_get_distinct_devices(tmp_path):
    """Three jobs holding one device each at the same moment hold three different ones."""
    out = _run_holders(tmp_path, 3, 1, 0.05, barrier=CTX.Barrier(3))
    chosen = [c for c, _, _, _ in out]
    assert sorted(d for c in chosen for d in c) == DEVICES
    assert all(seen == ",".join(c) for c, seen, _, _ in out)


def test_jobs_wait_until_enough_devices_are_free(tmp_path):
    """Four jobs needing 2 of 3 devices: any two would share one, so they run in turn."""
    out = sorted(_run_holders(tmp_path, 4, 2, 0.2), key=lambda r: r[2])
    assert all(len(set(c)) == 2 for c, _, _, _ in out)
    for (_, _, _, end), (_, _, start, _) in itertools.pairwise(out):
        assert start >= end  # no two holders overlapped in time


def _hold_until_killed(lock_dir: str, held: Any) -> None:
    with assign_gpus(len(DEVICES), Path(lock_dir), devices=DEVICES, timeout_s=30):
        held.set()
        time.sleep(600)


def _hold_then_release(lock_dir: str, held: Any, released: Any, hold_s: float) -> None:
    with assign_gpus(len(DEVICES), Path(lock_dir), devices=DEVICES, timeout_s=30):
        held.set()
        time.sleep(hold_s)
        released.value = time.monotonic()


def test_waits_for_a_holder_then_times_out_or_acquires(tmp_path):
    held, released = CTX.Event(), CTX.Value("d", 0.0)
    proc = CTX.Process(target=_hold_then_release, args=(str(tmp_path), held, released, 1.0))
    proc.start()
    try:
        assert held.wait(timeout=30)
        with pytest.raises(GpuAssignmentError, match=r"no 1 of the GPUs .* within 0.2s"), \
                assign_gpus(1, tmp_path, devices=DEVICES, timeout_s=0.2, poll_s=0.05):
            pass
        with assign_gpus(1, tmp_path, devices=DEVICES, timeout_s=30, poll_s=0.02) as chosen:
            acquired = time.monotonic()
            assert len(chosen) == 1
        assert released.value > 0 and acquired >= released.value
    finally:
        proc.join(timeout=30)
    assert proc.exitcode == 0


def test_a_killed_job_releases_its_devices(tmp_path):
    held = CTX.Event()
    proc = CTX.Process(target=_hold_until_killed, args=(str(tmp_path), held))
    proc.start()
    try:
        assert held.wait(timeout=30)
        with pytest.raises(GpuAssignmentError), \
                assign_gpus(1, tmp_path, devices=DEVICES, timeout_s=0.1, poll_s=0.02):
            pass
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(timeout=30)
    assert proc.exitcode == -signal.SIGKILL
    with assign_gpus(3, tmp_path, devices=DEVICES, timeout_s=5, poll_s=0.02) as chosen:
        assert chosen == DEVICES


# ------------------------------------------------------------ vllm backend helpers
# Shaped like vllm.logprobs.Logprob, vllm.outputs.CompletionOutput / RequestOutput.


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    outputs: list[CompletionOutput] = field(default_factory=list)
    finished: bool = True


def _image(fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(buffer, format=fmt)
    return buffer.getvalue()


def test_image_types_from_magic_bytes():
    assert image_mime_type(_image("PNG")) == "image/png"
    assert image_mime_type(_image("JPEG")) == "image/jpeg"
    assert image_mime_type(_image("GIF")) == "image/gif"
    assert image_mime_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    with pytest.raises(ValueError, match="unknown image format"):
        image_mime_type(b"BM\x00\x00 not an image we send")
    png = _image("PNG")
    url = image_data_url(png)
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == png


def test_chat_messages_follow_the_requests_layout():
    """The images where the request places them (after the text by default), as the
    openai backend sends them (tests/core/test_layout.py compares all three backends)."""
    png, jpeg = _image("PNG"), _image("JPEG")
    request = ChatRequest(model="m", prompt="Describe it.", images=(png, jpeg))
    [message] = chat_messages(request)
    assert message["role"] == "user"
    parts = message["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "image_url"]
    assert parts[0]["text"] == "Describe it."
    assert parts[1]["image_url"]["url"] == image_data_url(png)
    assert parts[2]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    marked = ChatRequest(model="m", prompt="A: B: end", images=(png, jpeg), image_at=(3, 6))
    assert [p.get("text", p["type"]) for p in chat_messages(marked)[0]["content"]] == [
        "A: ", "image_url", "B: ", "image_url", "end"]
    assert chat_messages(ChatRequest(model="m", prompt="x"))[0]["content"] == [
        {"type": "text", "text": "x"}]


def test_sampling_maps_to_sampling_params_kwargs():
    sampling = Sampling(temperature=0.7, top_p=0.9, max_tokens=64, top_logprobs=10, seed=3)
    assert sampling_kwargs(ChatRequest(model="m", prompt="p", sampling=sampling)) == {
        "temperature": 0.7, "top_p": 0.9, "max_tokens": 64, "seed": 3, "logprobs": 10}
    zero = Sampling(top_logprobs=0)
    assert sampling_kwargs(ChatRequest(model="m", prompt="p", sampling=zero))["logprobs"] == 0


# An answer "... is $85$." as a BPE tokenizer splits it, then the EOS token the text omits.
_IDS = [11, 12, 13, 14, 15, 2]
_TEXT = "Fine. The final score is $85$."
_POSITIONS: list[dict[int, Logprob]] = [
    {11: Logprob(-0.1, 1, "Fine."), 30: Logprob(-2.5, 2, "Bad.")},
    {12: Logprob(-0.2, 1, " The final score is")},
    {13: Logprob(-0.01, 1, " $")},
    # the sampled "85" is not the most likely token: vLLM reports it with its rank
    {40: Logprob(-0.9, 1, "90"), 14: Logprob(-1.0, 2, "85"), 41: Logprob(-1.6, 3, "80")},
    {15: Logprob(-0.001, 1, "$.")},
    {2: Logprob(-0.05, 1, "</s>")},
]


def test_logprobs_map_to_tokens_that_spell_the_text():
    tokens = map_logprobs(_IDS, _POSITIONS, top_k=3, text=_TEXT)
    assert tokens is not None
    assert "".join(t.token for t in tokens) == _TEXT  # the trailing "</s>" is dropped
    score = tokens[3]
    assert score.token == "85" and score.logprob == -1.0
    assert score.top == (("90", -0.9), ("85", -1.0), ("80", -1.6))  # best first
    assert tokens[0].top == (("Fine.", -0.1), ("Bad.", -2.5))
    untrimmed = map_logprobs(_IDS, _POSITIONS, top_k=3)
    assert untrimmed is not None and untrimmed[-1].token == "</s>"
    assert map_logprobs(_IDS, None, top_k=3) is None


def test_a_chosen_token_outside_the_top_k_is_not_among_the_alternatives():
    # vLLM returns the top-k plus the sampled token when it ranks lower.
    position = {7: Logprob(-4.0, 9, "7"), 8: Logprob(-0.3, 1, "8"), 9: Logprob(-1.5, 2, "9")}
    [token] = map_logprobs([7], [position], top_k=2)  # type: ignore[misc]
    assert token.token == "7" and token.logprob == -4.0
    assert token.top == (("8", -0.3), ("9", -1.5))
    [bare] = map_logprobs([7], [{7: Logprob(-4.0, 9, "7")}], top_k=0)  # type: ignore[misc]
    assert bare.top == ()
    # plain dicts of the same shape work as well (e.g. logprobs read back from JSON)
    [plain] = map_logprobs([5], [{5: {"logprob": -0.5, "decoded_token": "x"}}], top_k=1)  # type: ignore[misc]
    assert plain == type(plain)("x", -0.5, (("x", -0.5),))


def test_mapped_tokens_feed_the_expected_score():
    output = RequestOutput("0", None, list(range(40)), [CompletionOutput(
        0, _TEXT, _IDS, -1.4, _POSITIONS, finish_reason="stop")])
    response = map_output(output, top_k=3)
    assert response.ok and response.text == _TEXT and response.finish_reason == "stop"
    assert response.usage == {"prompt_tokens": 40, "completion_tokens": 6, "total_tokens": 46}
    parsed = parse_score(response.text, response.tokens, response.finish_reason)
    assert parsed.status == STATUS_OK and parsed.value == 85
    probs = {90: math.exp(-0.9), 85: math.exp(-1.0), 80: math.exp(-1.6)}
    expected = sum(v * p for v, p in probs.items()) / sum(probs.values())
    assert parsed.expected == pytest.approx(expected)
    assert response.logprobs_json()  # journalable as it is


def test_finish_reasons_and_empty_text_become_statuses():
    def answer(text: str, finish: str | None, logprobs=None) -> Any:
        ids = [1] * len(logprobs or [])
        return RequestOutput("0", None, [1, 2], [CompletionOutput(
            0, text, ids, None, logprobs, finish_reason=finish)])

    cut = map_output(answer("The final score is", "length"), top_k=5)
    assert cut.ok and cut.finish_reason == "length" and cut.tokens is None
    assert parse_score(cut.text, cut.tokens).status == "unparseable"
    # an answer cut off by max_tokens is "truncated", whatever its text holds
    assert parse_score(cut.text, cut.tokens, cut.finish_reason).status == STATUS_TRUNCATED
    for reason in ("abort", "error"):
        bad = map_output(answer("partial", reason), top_k=5)
        assert bad.status == "failed" and reason in bad.error
    empty = map_output(answer("  ", "stop", [{1: Logprob(-0.1, 1, "  ")}]), top_k=5)
    assert empty.status == "empty" and not empty.ok
    nothing = failed("boom")
    assert nothing.status == "failed" and nothing.error == "boom" and nothing.tokens is None


def test_request_errors_are_told_from_engine_errors():
    assert is_request_error(ValueError("prompt too long"))
    assert not is_request_error(RuntimeError("CUDA out of memory"))


def test_backend_without_vllm_says_how_to_install_it():
    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("vllm is installed here")
    from judgebias.models.vllm_backend import VllmBackend

    with pytest.raises(ImportError, match=r"pip install judgebias\[vllm\]") as err:
        VllmBackend("some/model")
    assert str(err.value) == INSTALL_HINT


def test_jobs_share_gpu_locks_only_within_one_slurm_allocation(monkeypatch, tmp_path):
    """Slurm gives each allocation its own devices, numbered from 0 on every node: a lock
    folder shared by all would make jobs on different nodes wait for each other."""
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert job_lock_dir(tmp_path) == tmp_path / "gpu-locks"  # one machine, local jobs
    monkeypatch.setenv("SLURM_JOB_ID", "4711")
    assert job_lock_dir(tmp_path) == tmp_path / "gpu-locks" / "slurm-4711"


# ------------------------------------------- one device assignment for every GPU rule
# Issue 39: every rule that can compute on a GPU takes its devices through one path
# (judgebias.models.gpu.job_gpus, entered by the `judgebias plumbing step` dispatch for the torch
# steps and by the judging core for vllm), so no two jobs share a device unless
# JUDGEBIAS_GPU_SLOTS says they may. The new API is looked up at call time, so the
# tests above still run where it is missing.


def _gpu():  # the module, for the names issue 39 adds
    from judgebias.models import gpu

    return gpu


def test_a_job_given_no_gpu_sees_none_and_an_auto_job_falls_back_to_the_cpu(
        monkeypatch, tmp_path):
    """A GPU-capable step whose rule asked for no GPU must not compute on device 0 behind
    Snakemake's back: it sees none (torch's `auto` is then the CPU). One that asked for
    GPUs on a machine that has none computes on the CPU where its device is `auto`, and
    fails where it is `cuda`."""
    gpu = _gpu()
    monkeypatch.setenv(ENV, "0,1")
    with gpu.job_gpus(gpu.GpuNeed(0, "auto"), tmp_path) as chosen:
        assert chosen == [] and os.environ[ENV] == ""
    assert os.environ[ENV] == "0,1"
    monkeypatch.setenv(ENV, "")  # a machine without GPUs
    with gpu.job_gpus(gpu.GpuNeed(1, "auto"), tmp_path) as chosen:
        assert chosen == [] and os.environ[ENV] == ""
    with pytest.raises(GpuAssignmentError, match=r"needs 1 GPU"), \
            gpu.job_gpus(gpu.GpuNeed(1, "cuda"), tmp_path):
        pass
    assert gpu.GpuNeed.of("cpu", 2).gpus == 0  # a CPU step holds no device
    assert gpu.GpuNeed.of("auto", 2).gpus == 2


def test_jobs_share_a_device_only_where_the_user_allows_it(monkeypatch, tmp_path):
    """JUDGEBIAS_GPU_SLOTS=2 lets two jobs hold one device at once (and spreads jobs over
    the devices before it doubles up); by default the second job waits."""
    gpu = _gpu()
    monkeypatch.delenv(gpu.SLOTS_ENV, raising=False)
    monkeypatch.setenv(ENV, "0")
    need = gpu.GpuNeed(1, "cuda")
    with gpu.job_gpus(need, tmp_path) as first:
        assert first == ["0"]
        with pytest.raises(GpuAssignmentError, match="within"), \
                gpu.assign_gpus(1, job_lock_dir(tmp_path), timeout_s=0.2, poll_s=0.05):
            pass
    monkeypatch.setenv(gpu.SLOTS_ENV, "2")
    with gpu.job_gpus(need, tmp_path) as first, gpu.job_gpus(need, tmp_path) as second:
        assert first == second == ["0"]
        with pytest.raises(GpuAssignmentError, match="within"), \
                gpu.assign_gpus(1, job_lock_dir(tmp_path), timeout_s=0.2, poll_s=0.05,
                                slots=2):
            pass
    pair = {"devices": ["0", "1"], "slots": 2}  # (job_gpus narrows this process's devices)
    with gpu.assign_gpus(1, job_lock_dir(tmp_path), **pair) as first, \
            gpu.assign_gpus(1, job_lock_dir(tmp_path), **pair) as second:
        assert (first, second) == (["0"], ["1"])  # a free device before a shared one
    monkeypatch.setenv(gpu.SLOTS_ENV, "0")
    with pytest.raises(ValueError, match=gpu.SLOTS_ENV), gpu.job_gpus(need, tmp_path):
        pass


def test_the_step_dispatch_sets_the_devices_before_the_step_runs(monkeypatch, tmp_path,
                                                                  default_params):
    """`judgebias plumbing step mmb.embed` takes the GPUs mmb.embedding asks for before the step
    imports torch: CUDA_VISIBLE_DEVICES names the job's own device inside the step."""
    import copy

    from judgebias.config import validate_params
    from judgebias.studies.mmb import steps as mmb_steps
    from judgebias.workflow.step_dispatch import run_step

    params = copy.deepcopy(default_params)
    params["journal_dir"] = str(tmp_path / "journal")
    params["mmb"]["embedding"]["gpus"] = 1
    config = validate_params(params, data=False)
    seen: list[str | None] = []

    def embed(params: Any, *, pairs: Path, support: Path, embeddings: Path) -> None:
        seen.append(os.environ.get(ENV))

    monkeypatch.setattr(mmb_steps, "embed", embed)
    monkeypatch.setenv(ENV, "0,1")
    files = [["pairs", "p"], ["support", "s"]]
    lock_dir = job_lock_dir(tmp_path / "journal")
    lock_dir.mkdir(parents=True)
    with open(lock_path(lock_dir, "0"), "a") as other:  # another job holds device 0
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        run_step("mmb.embed", config, files, [["embeddings", "e"]], [])
    config["mmb"]["embedding"]["gpus"] = 0
    run_step("mmb.embed", config, files, [["embeddings", "e"]], [])
    assert seen == ["1", ""]
    assert os.environ[ENV] == "0,1"


FAKE_NVIDIA_SMI = "#!/bin/sh\nprintf '0\\n1\\n'\n"  # two GPUs, as `--query-gpu=index` lists them
_STAMP = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO judgebias\.models\.gpu: "


def _held(log: str) -> tuple[str, float, float]:
    """(device, from, to) of the one device a job's log says it held."""
    import datetime
    import re

    def when(stamp: str) -> float:
        return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()

    given = re.findall(_STAMP + rf"GPUs given to this job: {ENV}=(\S+)\n", log)
    back = re.findall(_STAMP + rf"GPUs given back: {ENV}=(\S+)", log)
    assert len(given) == len(back) == 1, log
    assert given[0][1] == back[0][1], log
    return given[0][1], when(given[0][0]), when(back[0][0])


@pytest.mark.slow
def test_two_gpu_rules_running_together_get_different_devices(tmp_path, default_params,
                                                              monkeypatch):
    """MMB's embeddings (open_clip) and FRAME's images (a tiny local diffusers pipeline),
    both asking for one GPU, run side by side with `--resources gpu=2` on a machine whose
    nvidia-smi lists two (fake) GPUs: each job holds a device of its own while the other
    runs. Before issue 39 neither took a device, and both would have computed on
    device 0 (`device: auto`)."""
    from helpers.project import BIN, make_project, run, small_all_studies, study_params
    from helpers.tiny_diffusers import build_tiny_text_to_image, use_tiny_diffusers

    from judgebias.studies.frame import tables as frame
    from judgebias.studies.mmb import tables as mmb

    pytest.importorskip("open_clip")
    pytest.importorskip("diffusers")
    fake = tmp_path / "fake-gpus"
    fake.mkdir()
    (fake / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (fake / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    params = study_params(default_params, "mmb", "frame")
    params["mmb"] = small_all_studies(default_params)["mmb"]
    params["mmb"]["instructions"]["grow"] = None
    params["mmb"]["embedding"]["gpus"] = 1
    params["frame"]["dataset"]["synthetic"].update(n_per_domain=2, domains=["people", "animal"])
    use_tiny_diffusers(params, build_tiny_text_to_image(tmp_path / "tiny-sd"),
                       tmp_path / "humans")
    params["frame"]["dataset"]["synthetic"]["images"]["gpus"] = 1
    (tmp_path / "project").mkdir()
    project = make_project(tmp_path / "project", params)
    snakemake = str(BIN / "snakemake")
    run([snakemake, "--cores", "2", mmb.PAIRS_PATH, mmb.SUPPORT_PATH,
         frame.INSTRUCTIONS_PATH], project)
    run([snakemake, mmb.EMBEDDINGS_PATH, frame.GENERATED_PATH, "--cores", "2",
         "--resources", "gpu=2"], project)

    embed = _held((project / "logs/mmb/embed.log").read_text())
    images = _held((project / "logs/frame/images.log").read_text())
    assert {embed[0], images[0]} <= {"0", "1"}
    overlap = min(embed[2], images[2]) - max(embed[1], images[1])
    assert overlap > 0, (embed, images)  # they ran at the same time ...
    assert embed[0] != images[0]  # ... each on its own device


def _dry_run_gpus(project: Path, *targets: str) -> dict[tuple[str, str], int]:
    """(rule, wildcards) -> the `gpu` resource of every job `snakemake -n` lists."""
    import re

    from helpers.project import BIN, run

    out = run([str(BIN / "snakemake"), "-n", "--cores", "1", *targets], project).stdout
    jobs: dict[tuple[str, str], int] = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", out):
        rule = re.match(r"(?:local)?rule (\w+):", block.strip())
        if rule is None:
            continue
        wildcards = re.search(r"^\s+wildcards: (.*)$", block, re.M)
        gpus = re.search(r"^\s+resources: .*\bgpu=(\d+)", block, re.M)
        jobs[(rule.group(1), wildcards.group(1) if wildcards else "")] = (
            int(gpus.group(1)) if gpus else 0)
    return jobs


def test_every_rule_that_can_compute_on_a_gpu_asks_for_it(tmp_path, default_params):
    """The `gpu` resource of each GPU-capable rule follows its device setting: MMB's
    embeddings, FRAME's GFPGAN renders, and FRAME's combinations, whose recipes pair the
    analysis judge's best ones (the GFPGAN beauty filter among them); a rule whose device
    is `cpu` asks for none; a grid without GFPGAN (the offline stand-in) none either."""
    from helpers.project import make_project, study_params

    from judgebias.studies.frame import tables as frame

    weights = tmp_path / "gfpgan.pth"
    weights.write_bytes(b"weights")
    faces = tmp_path / "facexlib"
    faces.mkdir()
    for name in ("detection_Resnet50_Final.pth", "parsing_parsenet.pth"):
        (faces / name).write_bytes(b"face model")
    params = study_params(default_params, "mmb", "frame")
    params["mmb"]["embedding"].update(gpus=1, device="cpu")
    params["frame"]["manipulations"] = {"brightness": [1.5], "padding": [10],
                                        "instruction_overlay": ["top-right"],
                                        "beauty_filter": ["gfpgan"]}
    params["frame"]["beauty"].update(weights=str(weights), face_models=str(faces), gpus=1)
    (tmp_path / "p").mkdir()
    project = make_project(tmp_path / "p", params)
    targets = ["data/mmb/embeddings.parquet", frame.renders_path(frame.COMBINED)]
    jobs = _dry_run_gpus(project, *targets)
    assert jobs[("frame_render", "manipulation=beauty_filter")] == 1
    assert jobs[("frame_render", "manipulation=padding")] == 0
    assert jobs[("frame_combine", "")] == 1
    assert jobs[("mmb_embed", "")] == 0  # device: cpu
    params["mmb"]["embedding"]["device"] = "auto"
    params["frame"]["manipulations"]["beauty_filter"] = ["smoothing"]
    (tmp_path / "q").mkdir()
    jobs = _dry_run_gpus(make_project(tmp_path / "q", params), *targets)
    assert jobs[("mmb_embed", "")] == 1
    assert jobs[("frame_render", "manipulation=beauty_filter")] == 0
    assert jobs[("frame_combine", "")] == 0


@pytest.mark.parametrize("block, where", [
    (("mmb", "embedding"), "mmb.embedding.gpus"),
    (("frame", "beauty"), "frame.beauty.gpus")])
def test_a_cuda_step_that_asks_for_no_gpu_is_an_error(default_params, block, where):
    """`device: cuda` with `gpus: 0` would compute on a device the job does not hold (or
    on none: it sees none); validate names the key instead."""
    import copy

    from judgebias.config import ConfigError, validate_params

    params = copy.deepcopy(default_params)
    study, name = block
    params[study][name].update(device="cuda", gpus=0)
    with pytest.raises(ConfigError, match=rf"{where}: 0, but device is 'cuda'"):
        validate_params(params, data=False)
    params[study][name]["gpus"] = 1
    validate_params(params, data=False)
