# Pomms (seed 000 §4.2, §6.3): every philautia evaluator scores the caption-judgement
# datasets with the same prompt and setting, through the same journal; an Elastic Net over
# forward-selected evaluators is fitted to the human judgements; Phi-tilde is recomputed
# with the ensemble as an extra evaluator.
from judgebias.studies.pomms.data import judgement_files
from judgebias.study import study_models
from judgebias.studies.pomms import tables as pomms
from judgebias.studies.pomms.params import judgement_setting
from judgebias.studies.pomms.report import report_inputs as pomms_report_inputs

POMMS_MODELS = study_models(PARAMS, "philautia")
POMMS_DATASETS = list(PARAMS["pomms"]["datasets"])
POMMS_SETTING = PARAMS["pomms"]["setting"]  # Phi-tilde and philautia scores (Table 1)
POMMS_JUDGEMENT_SETTING = judgement_setting(PARAMS["pomms"])  # tau on the judgement data
POMMS_KEYS = ["pomms", MODELS_KEY, "philautia.score", "philautia.ddof",
              *[f"panel.{m}.family" for m in POMMS_MODELS]]
POMMS_FIGURE_KEYS = [MODELS_KEY, *figure_keys(POMMS_MODELS)]

wildcard_constraints:
    dataset="|".join(POMMS_DATASETS),


rule judgements:
    input:
        code=step_code("judgements"),
        data=lambda w: judgement_files(PARAMS["pomms"]["datasets"][w.dataset]),
    output:
        table=pomms.judgements_path("{dataset}"),
        images=directory(pomms.judgement_images("{dataset}")),
    params:
        dvc_params=lambda w: [f"pomms.datasets.{w.dataset}"],
        values=lambda w: values_of([f"pomms.datasets.{w.dataset}"]),
    log:
        "logs/judgements/{dataset}.log",
    shell:
        JB + " --log {log} judgements --dataset {wildcards.dataset} --out {output.table} "
        "--images {output.images}"


rule judge_items:
    input:
        judgements=pomms.judgements_path("{dataset}"),
        code=step_code("judge-items"),
        prompt=setting_prompt,
    output:
        pomms.item_scores_path("{setting}", "{dataset}", "{evaluator}"),
    params:
        dvc_params=lambda w: model_keys(w.evaluator, "evaluator",
                                        f"philautia.settings.{w.setting}"),
        values=lambda w: values_of(model_keys(w.evaluator, "evaluator",
                                              f"philautia.settings.{w.setting}")),
    resources:
        **model_resources("evaluator"),
    log:
        "logs/judge_items/{setting}/{dataset}/{evaluator}.log",
    shell:
        JB + " --log {log} judge-items --evaluator {wildcards.evaluator} "
        "--setting {wildcards.setting} --judgements {input.judgements} --out {output}"


rule pomms:
    input:
        judgements=expand(pomms.judgements_path("{dataset}"), dataset=POMMS_DATASETS),
        item_scores=expand(pomms.item_scores_path(POMMS_JUDGEMENT_SETTING, "{dataset}",
                                                  "{evaluator}"),
                           dataset=POMMS_DATASETS, evaluator=POMMS_MODELS),
        scores=f"results/philautia/{POMMS_SETTING}/scores.parquet",
        code=step_code("pomms"),
    output:
        metrics=f"{pomms.RESULTS}/metrics.json",
        tables=expand(f"{pomms.RESULTS}/{{table}}.parquet", table=pomms.TABLES),
    params:
        dvc_params=POMMS_KEYS,
        values=values_of(POMMS_KEYS),
    log:
        "logs/pomms.log",
    shell:
        JB + " --log {log} pomms --judgements {input.judgements} "
        "--item-scores {input.item_scores} --scores {input.scores} --out-dir " + pomms.RESULTS


rule pomms_heatmap:
    input:
        phi_tilde=f"{pomms.RESULTS}/phi_tilde.parquet",
        code=step_code("pomms-heatmap"),
    output:
        pomms.HEATMAP,
    params:
        dvc_params=POMMS_FIGURE_KEYS,
        values=values_of(POMMS_FIGURE_KEYS),
    log:
        "logs/pomms_heatmap.log",
    shell:
        JB + " --log {log} pomms-heatmap --phi-tilde {input.phi_tilde} --out {output}"


TARGETS.append(f"{pomms.RESULTS}/metrics.json")
REPORT_INPUTS["pomms"] = pomms_report_inputs(PARAMS, pomms.RESULTS)
