# Shared helpers of the rules: the validated params, the panel, declared params per job,
# the project code each rule depends on, and per-model resources.
import json
from pathlib import Path

from judgebias.artifacts import Paths
from judgebias.config import get_key, load_config, result_keys
from judgebias.models.registry import world_params

# `snakemake --config params=other.yaml` selects another params file; dvc.yaml always
# uses params.yaml (DVC's own default), so the default adds no flag to the commands.
PARAMS_FILE = config.get("params", "params.yaml")
PARAMS = load_config(PARAMS_FILE)  # validated before any job is scheduled
JB = "judgebias" if PARAMS_FILE == "params.yaml" else f"judgebias --params {PARAMS_FILE}"

PANEL = PARAMS["philautia"]["models"]
SETTINGS = list(PARAMS["philautia"]["settings"])
POMMS = PARAMS.get("pomms")
POMMS_DATASETS = list(POMMS["datasets"]) if POMMS else []
POMMS_SETTING = POMMS["setting"] if POMMS else None
SRC = Path(workflow.basedir) / "src" / "judgebias"

wildcard_constraints:
    generator="|".join(PANEL),
    evaluator="|".join(PANEL),
    setting="|".join(SETTINGS),
    dataset="|".join(POMMS_DATASETS) or "no-dataset",


def code(*parts):
    """Project source files a rule depends on, so editing them reruns the rule."""
    files = []
    for part in parts:
        path = SRC / part
        found = sorted(path.rglob("*.py")) + sorted(path.rglob("*.txt")) if path.is_dir() else [path]
        files += [str(f.relative_to(workflow.basedir)) for f in found]
    return files


CODE_MODELS = code("models", "prompts/__init__.py", "data/scenes.py", "judging.py",
                   "artifacts.py")


def template(prompt_id):
    return code(f"prompts/templates/{prompt_id}.txt")


def score_code(wildcards):
    """A score job depends on its setting's evaluator prompt only, not the others'."""
    prompt_id = PARAMS["philautia"]["settings"][wildcards.setting]["prompt"]
    return CODE_MODELS + code("scoring.py") + template(prompt_id)


# Params each job reads. A rule lists them under `params: dvc_params=` (dotted params.yaml keys,
# exported to dvc.yaml) and `values=` (their values, Snakemake's params rerun trigger).
def values_of(keys):
    return json.dumps({k: get_key(PARAMS, k) for k in keys}, sort_keys=True)


def caption_keys(wildcards):
    return [*world_params(PARAMS, wildcards.generator, "generator"), "prompts.caption"]


def score_keys(wildcards):
    return [*world_params(PARAMS, wildcards.evaluator, "evaluator"),
            f"philautia.settings.{wildcards.setting}"]


PHI_KEYS = ["philautia.models", "philautia.score"]
ANALYSIS_KEYS = [
    "philautia.models", "philautia.ddof", "philautia.n_bootstrap",
    "philautia.n_permutations", "philautia.ci", "philautia.seed",
    *[f"models.{m}.family" for m in PANEL],
]
ANALYSIS_TABLES = ["phi_tilde", "philautia", "loo", "families"]
POMMS_TABLES = ["steps", "table1", "table2", "phi_tilde", "agreement"]
POMMS_OUTPUTS = ([f"results/pomms/{t}.parquet" for t in POMMS_TABLES]
                 + ["results/pomms/metrics.json", "results/pomms/figures/phi_tilde_pomms.png"]
                 if POMMS else [])
POMMS_KEYS = ["pomms", "philautia.models", "philautia.score", "philautia.ddof",
              *[f"models.{m}.family" for m in PANEL]]

# The report's provenance fingerprints every params key that can change a result.
REPORT_KEYS = result_keys(PARAMS)
FIGURE_KEYS = ["philautia.models", *[f"models.{m}.backend" for m in PANEL]]


def model_resources(role):
    """Resources of a job run by the model named in wildcard `role`: GPUs for vllm
    (Snakemake caps the total; judgebias assigns devices), one unit of its provider's
    concurrency resource for API backends, nothing for sim. Memory where given."""

    def resource(name):
        def value(wildcards):
            model = PARAMS["models"][wildcards[role]]
            backend, spec = model["backend"], model.get("resources", {})
            return {
                "gpu": spec.get("gpus", 0) if backend == "vllm" else 0,
                "api_openai": int(backend == "openai"),
                "api_gemini": int(backend == "gemini"),
                "mem_mb": spec.get("mem_mb", 4000),
            }[name]
        return value

    return {name: resource(name) for name in ("gpu", "api_openai", "api_gemini", "mem_mb")}
