# Philautia-Eval (seed 000 §4.1, Algorithm 1): captions per generator, scores per
# evaluator x generator x setting, then Phi, Phi-tilde / philautia scores and figures.
from judgebias.studies.philautia.data import dataset_files
from judgebias.study import study_models
from judgebias.studies.philautia import tables as philautia
from judgebias.studies.philautia.report import report_inputs as philautia_report_inputs

PHILAUTIA_MODELS = study_models(PARAMS, "philautia")
SETTINGS = list(PARAMS["philautia"]["settings"])

wildcard_constraints:
    generator="|".join(PHILAUTIA_MODELS),
    evaluator="|".join(PARAMS["panel"]),
    setting="|".join(SETTINGS),


def setting_prompt(wildcards):
    """A score job depends on its setting's evaluator prompt only, not the others'."""
    return template(PARAMS["philautia"]["settings"][wildcards.setting]["prompt"])


MODELS_KEY = "philautia.models" if "models" in PARAMS["philautia"] else "panel"
PHI_KEYS = [MODELS_KEY, "philautia.score"]
FAMILY_KEYS = [
    *[f"panel.{m}.family" for m in PHILAUTIA_MODELS],
    # optional (no schema default): declared only where params.yaml states it
    *[f"panel.{m}.also_in" for m in PHILAUTIA_MODELS if "also_in" in PARAMS["panel"][m]],
]
ANALYSIS_KEYS = [
    MODELS_KEY, "philautia.ddof", "philautia.n_bootstrap",
    "philautia.n_permutations", "philautia.ci", "philautia.seed", *FAMILY_KEYS,
]
# the scores and the philautia scores it sits next to come from its inputs
SELFPREF_KEYS = [MODELS_KEY, "philautia.ci", *FAMILY_KEYS]
PHILAUTIA_FIGURE_KEYS = [MODELS_KEY, *figure_keys(PHILAUTIA_MODELS)]


rule dataset:
    input:
        code=step_code("dataset"),
        data=dataset_files(PARAMS["philautia"]["dataset"]),
    output:
        table=philautia.DATASET_TABLE,
        images=directory(philautia.DATASET_IMAGES),
    params:
        dvc_params=["philautia.dataset"],
        values=values_of(["philautia.dataset"]),
    log:
        "logs/dataset.log",
    shell:
        JB + " --log {log} dataset --out {output.table} --images {output.images}"


rule caption:
    input:
        images=philautia.DATASET_TABLE,
        code=step_code("caption") + template(PARAMS["philautia"]["caption_prompt"]),
    output:
        philautia.captions_path("{generator}"),
    params:
        dvc_params=lambda w: model_keys(w.generator, "generator", "philautia.caption_prompt"),
        values=lambda w: values_of(model_keys(w.generator, "generator", "philautia.caption_prompt")),
    resources:
        **model_resources("generator"),
    log:
        "logs/caption/{generator}.log",
    shell:
        JB + " --log {log} caption --generator {wildcards.generator} "
        "--images {input.images} --out {output}"


rule score:
    input:
        images=philautia.DATASET_TABLE,
        captions=philautia.captions_path("{generator}"),
        code=step_code("score"),
        prompt=setting_prompt,
    output:
        philautia.scores_path("{setting}", "{evaluator}", "{generator}"),
    params:
        dvc_params=lambda w: model_keys(w.evaluator, "evaluator",
                                        f"philautia.settings.{w.setting}"),
        values=lambda w: values_of(model_keys(w.evaluator, "evaluator",
                                              f"philautia.settings.{w.setting}")),
    resources:
        **model_resources("evaluator"),
    log:
        "logs/score/{setting}/{evaluator}/{generator}.log",
    shell:
        JB + " --log {log} score --evaluator {wildcards.evaluator} "
        "--setting {wildcards.setting} --images {input.images} "
        "--captions {input.captions} --out {output}"


rule phi:
    input:
        scores=expand(philautia.scores_path("{{setting}}", "{evaluator}", "{generator}"),
                      evaluator=PHILAUTIA_MODELS, generator=PHILAUTIA_MODELS),
        code=step_code("phi"),
    output:
        scores="results/philautia/{setting}/scores.parquet",
        phi="results/philautia/{setting}/phi.parquet",
        counts="results/philautia/{setting}/counts.parquet",
    params:
        dvc_params=PHI_KEYS,
        values=values_of(PHI_KEYS),
    log:
        "logs/phi/{setting}.log",
    shell:
        JB + " --log {log} phi --out-dir results/philautia/{wildcards.setting} {input.scores}"


rule philautia:
    input:
        scores="results/philautia/{setting}/scores.parquet",
        code=step_code("philautia"),
    output:
        metrics="results/philautia/{setting}/metrics.json",
        tables=expand("results/philautia/{{setting}}/{table}.parquet",
                      table=philautia.ANALYSIS_TABLES),
    params:
        dvc_params=ANALYSIS_KEYS,
        values=values_of(ANALYSIS_KEYS),
    log:
        "logs/philautia/{setting}.log",
    shell:
        JB + " --log {log} philautia --scores {input.scores} "
        "--out-dir results/philautia/{wildcards.setting}"


rule selfpref:
    input:
        scores="results/philautia/{setting}/scores.parquet",
        philautia="results/philautia/{setting}/philautia.parquet",
        code=step_code("selfpref"),
    output:
        "results/philautia/{setting}/" + philautia.SELFPREF_TABLE + ".parquet",
    params:
        dvc_params=SELFPREF_KEYS,
        values=values_of(SELFPREF_KEYS),
    log:
        "logs/selfpref/{setting}.log",
    shell:
        JB + " --log {log} selfpref --scores {input.scores} "
        "--philautia {input.philautia} --out {output}"


rule heatmaps:
    input:
        phi="results/philautia/{setting}/phi.parquet",
        phi_tilde="results/philautia/{setting}/phi_tilde.parquet",
        philautia="results/philautia/{setting}/philautia.parquet",
        code=step_code("heatmaps"),
    output:
        expand("results/philautia/{{setting}}/figures/{figure}.png",
               figure=philautia.FIGURES),
    params:
        dvc_params=PHILAUTIA_FIGURE_KEYS,
        values=values_of(PHILAUTIA_FIGURE_KEYS),
    log:
        "logs/heatmaps/{setting}.log",
    shell:
        JB + " --log {log} heatmaps --setting {wildcards.setting} --phi {input.phi} "
        "--phi-tilde {input.phi_tilde} --philautia {input.philautia} "
        "--out-dir results/philautia/{wildcards.setting}/figures"


TARGETS.extend(expand("results/philautia/{setting}/metrics.json", setting=SETTINGS))
TARGETS.extend(expand("results/philautia/{setting}/{table}.parquet", setting=SETTINGS,
                      table=philautia.SELFPREF_TABLE))
REPORT_INPUTS["philautia"] = philautia_report_inputs(PARAMS, philautia.RESULTS)
