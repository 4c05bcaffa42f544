# Shared helpers of the rules: the validated params, the active studies, declared params
# per job, each rule's code dependencies (derived from its step's imports), resources.
import json
import os
from pathlib import Path

from judgebias.config import (PARAMS_ENV, answer_keys, get_key, load_config, params_path,
                              result_keys)
from judgebias.models.backends import backend_spec, concurrency_slots, registered_backends
from judgebias.models.registry import world_params
from judgebias.skeleton import package_file
from judgebias.workflow.step_dispatch import command_arguments
from judgebias.study import active
from judgebias.workflow.codedeps import step_files

# `snakemake --config params=other.yaml` (or $JUDGEBIAS_PARAMS) selects another params
# file. Where the file lies is not part of any job's identity: the jobs find it in the
# environment (judgebias.commands), so their commands are the same for every path and the same
# content under another path plans nothing. dvc.yaml always uses params.yaml.
PARAMS_FILE = config.get("params") or params_path()
PARAMS = load_config(PARAMS_FILE)  # validated before any job is scheduled
os.environ[PARAMS_ENV] = PARAMS_FILE  # the jobs' `judgebias` reads it (warm ones too)
JB = "judgebias"
ACTIVE_STUDIES = active(PARAMS)

# Each study's rules add what `all` builds.
TARGETS = []


def step_code(command, extra=()):
    """The project source files `judgebias <command>` runs, or study step "study.step"
    (judgebias.workflow.codedeps): editing any of them reruns the rule, editing anything
    else does not."""
    return step_files(command, extra)


# A rule running a study step (judgebias.workflow.step_dispatch) declares its files once, by name, under
# `input:` and `output:`; `step()` is its shell command and `step_params()` its params:
# the rule's named files and wildcards as the step's arguments, and the params keys it
# reads (exported to dvc.yaml; their values are Snakemake's rerun trigger). Named inputs
# the step does not read itself are dependencies only and are not passed.
DEPENDENCIES_ONLY = ("code", "prompt")


def step(target):
    return JB + " --log {log} plumbing step " + target + " {params.arguments}"


def step_params(keys=()):
    """`keys`: dotted params.yaml keys, or a function of the wildcards returning them.
    A block holding run settings (a panel model's: its budget, prices, endpoint) is
    declared as its other keys (judgebias.config.answer_keys): changing a run setting
    reruns nothing."""
    if callable(keys):
        declared = {"dvc_params": lambda w: answer_keys(PARAMS, keys(w)),
                    "values": lambda w: values_of(answer_keys(PARAMS, keys(w)))}
    else:
        keys = answer_keys(PARAMS, keys)
        declared = {"dvc_params": keys, "values": values_of(keys)} if keys else {}
    return {"arguments": _step_arguments, **declared}


def _step_arguments(wildcards, input, output):
    return command_arguments(
        {k: v for k, v in input.items() if k not in DEPENDENCIES_ONLY},
        dict(output.items()), dict(wildcards.items()))


def template(prompt_id):
    """A prompt template file: a model job depends on the prompts it sends."""
    return [package_file(f"prompts/templates/{prompt_id}.txt")]


# Params each job reads. A rule lists them under `params: dvc_params=` (dotted params.yaml
# keys, exported to dvc.yaml) and `values=` (their values, Snakemake's rerun trigger).
def values_of(keys):
    return json.dumps({k: get_key(PARAMS, k) for k in keys}, sort_keys=True)


def model_keys(model, role, *extra):
    """The params that determine `model`'s answers in `role`, plus `extra` keys."""
    return [*world_params(PARAMS, model, role), *extra]


# The report's provenance fingerprints every params key that can change a result.
REPORT_KEYS = result_keys(PARAMS)


def figure_keys(models):
    return [*(f"panel.{m}.backend" for m in models)]


def model_resources(role):
    """Resources of a job run by the model named in wildcard `role`: GPUs for a backend
    whose jobs take them (vllm; Snakemake caps the total, judgebias assigns devices), one
    unit of its backend's concurrency slot for an online API job (api_openai, ...),
    nothing for sim. Memory where given. Which backend takes what is the backend
    registry's (judgebias.models.backends)."""
    return {name: (lambda wildcards, name=name: _resource(wildcards[role], name))
            for name in RESOURCE_NAMES}


def resources_of(model):
    """The same resources for a job whose model is fixed by params, not a wildcard."""
    return {name: _resource(model, name) for name in RESOURCE_NAMES}


# Every registered backend's concurrency slot (the profiles cap each per run; a test
# checks that they name every built-in backend's).
SLOTS = concurrency_slots()
RESOURCE_NAMES = ("gpu", *SLOTS, "mem_mb")


def _resource(model_key, name):
    model = PARAMS["panel"][model_key]
    backend, wanted = backend_spec(model["backend"]), model.get("resources", {})
    if name == "gpu":
        return wanted.get("gpus", 0) if backend.gpus else 0
    if name == "mem_mb":
        return wanted.get("mem_mb", 4000)
    # a batch-mode job only polls: it holds none of the provider's API slots
    return int(name == backend.concurrency and not model.get("batch", False))


def provider_slots(backend):
    """The slots of a job that calls the provider of backend `backend` without a panel
    model (FRAME's images through the OpenAI images API): one unit of that backend's
    slot, none of the others' (none at all for a name no backend has)."""
    slot = backend_spec(backend).concurrency if backend in registered_backends() else None
    return {name: int(name == slot) for name in SLOTS}


# When several jobs are ready, those on the run's longest chains of dependent jobs go
# first: FRAME's (the renders, the analysis judge's scores and recipes, the renders of
# their combinations and the judge's look at them) and MMB's (pool, embeddings, clusters,
# the factorial). The many short judge jobs then fill the other cores instead of a long
# chain running alone at the end (93 s of the default run on one core; issue 24). The
# order never changes a result.
LONG_CHAIN = 10

# Snakemake's command line always rate-limits job starts (`--max-jobs-per-timespan`,
# default 100/1s), and with a limit every scheduling round ends by starting a 1-s timer
# that triggers another round, busy or not. A finished job's round starts one more such
# chain, and none ever ends: near the end of the default run a few hundred rounds run
# every second, each stat()ing every input of every ready job (our jobs declare their
# code files). Snakemake's own process took 183 of the default run's 797 CPU-seconds on
# 2 cores, 41 without the limit (issue 24; snakemake PR #3744 describes the same loop). A local run starts jobs as
# cores free up and needs no rate limit, so it is lifted once the scheduler exists;
# cluster executors keep theirs (it spaces their submissions). `--no-hooks` keeps it.
onstart:
    if workflow.local_exec:
        workflow.scheduler.job_rate_limiter = None


# The stamps dvc.yaml's `code` and `params` stages write (judgebias.workflow.dvc_export),
# written as `dvc repro` would after every successful run of the default params file:
# Snakemake's rules keep the source files and values themselves and need no stamp, but
# without them `dvc status` and `dvc repro --dry` after a Snakemake run stop at the first
# job stage ("No such file or directory: .judgebias/code/<rule>.json"). About 0.5 s;
# each stamp is rewritten only where its content changed.
onsuccess:
    if PARAMS_FILE == "params.yaml" and Path("dvc.yaml").is_file():
        from judgebias.workflow.dvcsync import write_stamps

        write_stamps(Path("."))


# `judgebias validate`'s warnings (what runs but quietly falls back to defaults, or cannot
# act) reach a plain `snakemake` run too, once: only the main process says them, not the
# Snakemake a Slurm job starts, which reads this file again (issue 39).
if workflow.is_main_process:
    from snakemake.logging import logger as _logger

    from judgebias.config import params_warnings

    for _line in params_warnings(PARAMS):
        _logger.warning(f"WARNING {PARAMS_FILE}: {_line}")
    # A concurrency slot no profile or --resources caps lets every online job of that
    # backend call its provider at once (a backend from another package has no line in
    # our profiles; a plain `snakemake` run uses no profile).
    _uncapped = dict.fromkeys(
        backend_spec(m["backend"]).concurrency for m in PARAMS["panel"].values()
        if not m.get("batch", False))
    for _slot in [s for s in _uncapped if s is not None
                  and s not in workflow.resource_settings.resources]:
        _logger.warning(f"WARNING: no limit on the resource {_slot}: every job holding it "
                        f"may call its provider at once; cap it with `--resources "
                        f"{_slot}=N` or a profile (workflow/profiles/local)")
