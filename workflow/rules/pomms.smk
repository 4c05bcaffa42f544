# Pomms (seed 000 §4.2, §6.3): every philautia evaluator scores the caption-judgement
# datasets with the same prompt and setting, through the same journal; an Elastic Net over
# forward-selected evaluators is fitted to the human judgements; Phi-tilde is recomputed
# with the ensemble as an extra evaluator.
from judgebias.paramsblock import block_keys
from judgebias.studies.pomms.data import judgement_files
from judgebias.study import study_models
from judgebias.studies.philautia import tables as philautia_tables
from judgebias.studies.philautia.params import PhilautiaParams, models_key, setting_prompt_id
from judgebias.studies.pomms import tables as pomms
from judgebias.studies.pomms.params import PommsParams, judgement_setting

POMMS_MODELS = study_models(PARAMS, "philautia")
POMMS_DATASETS = list(PARAMS["pomms"]["datasets"])
POMMS_SETTING = PARAMS["pomms"]["setting"]  # Phi-tilde and philautia scores (Table 1)
POMMS_JUDGEMENT_SETTING = judgement_setting(PARAMS["pomms"])  # tau on the judgement data
# the whole pomms block (every key of PommsParams), and the philautia keys it builds on
POMMS_KEYS = [PommsParams.PARAMS_KEY, models_key(PARAMS),
              *block_keys(PhilautiaParams, only=("score", "ddof")),
              *[f"panel.{m}.family" for m in POMMS_MODELS]]
POMMS_FIGURE_KEYS = [models_key(PARAMS), *figure_keys(POMMS_MODELS)]

wildcard_constraints:
    dataset="|".join(POMMS_DATASETS),


rule judgements:
    input:
        # unnamed: the imported files, images included, are dependencies, read through
        # their params keys
        lambda w: judgement_files(PARAMS["pomms"]["datasets"][w.dataset]),
        code=step_code("pomms.judgements"),
    output:
        table=pomms.judgements_path("{dataset}"),
        images=directory(pomms.judgement_images("{dataset}")),
    params:
        **step_params(lambda w: [f"pomms.datasets.{w.dataset}"]),
    log:
        "logs/judgements/{dataset}.log",
    shell:
        step("pomms.judgements")


rule judge_items:
    input:
        judgements=pomms.judgements_path("{dataset}"),
        code=step_code("pomms.judge_items"),
        prompt=lambda w: template(setting_prompt_id(PARAMS, w.setting)),
    output:
        item_scores=pomms.item_scores_path("{setting}", "{dataset}", "{evaluator}"),
    params:
        **step_params(lambda w: model_keys(w.evaluator, "evaluator",
                                           f"philautia.settings.{w.setting}")),
    resources:
        **model_resources("evaluator"),
    log:
        "logs/judge_items/{setting}/{dataset}/{evaluator}.log",
    shell:
        step("pomms.judge_items")


rule pomms:
    input:
        judgements=expand(pomms.judgements_path("{dataset}"), dataset=POMMS_DATASETS),
        item_scores=expand(pomms.item_scores_path(POMMS_JUDGEMENT_SETTING, "{dataset}",
                                                  "{evaluator}"),
                           dataset=POMMS_DATASETS, evaluator=POMMS_MODELS),
        scores=philautia_tables.setting_file(POMMS_SETTING, "scores"),
        code=step_code("pomms.fit"),
    output:
        metrics=pomms.METRICS,
        tables=[pomms.table_path(t) for t in pomms.TABLES],
        ensemble=pomms.ENSEMBLE,
        model_card=pomms.ENSEMBLE_CARD,
    params:
        **step_params(POMMS_KEYS),
    log:
        "logs/pomms.log",
    shell:
        step("pomms.fit")


rule pomms_heatmap:
    input:
        phi_tilde=pomms.table_path("phi_tilde"),
        code=step_code("pomms.heatmap"),
    output:
        figure=pomms.HEATMAP,
    params:
        **step_params([*POMMS_FIGURE_KEYS,
                       *block_keys(PommsParams, only=("setting",))]),  # the figure's title
    log:
        "logs/pomms_heatmap.log",
    shell:
        step("pomms.heatmap")


TARGETS.append(pomms.METRICS)
