# Pomms (seed 000 §4.2, §6.3): every panel evaluator scores the caption-judgement datasets
# with the same prompt and setting as the philautia study, through the same journal; an
# Elastic Net over forward-selected evaluators is fitted to the human judgements; Phi-tilde
# is recomputed with the ensemble as an extra evaluator.


rule judgements:
    input:
        code=code("data", "artifacts.py"),
    output:
        table=Paths.judgements("{dataset}"),
        images=directory(Paths.judgement_images("{dataset}")),
    params:
        dvc_params=lambda wildcards: [f"pomms.datasets.{wildcards.dataset}"],
        values=lambda wildcards: values_of([f"pomms.datasets.{wildcards.dataset}"]),
    log:
        "logs/judgements/{dataset}.log",
    shell:
        JB + " --log {log} judgements --dataset {wildcards.dataset} --out {output.table} "
        "--images {output.images}"


rule judge_items:
    input:
        judgements=Paths.judgements("{dataset}"),
        code=score_code,
    output:
        Paths.item_scores("{setting}", "{dataset}", "{evaluator}"),
    params:
        dvc_params=score_keys,
        values=lambda wildcards: values_of(score_keys(wildcards)),
    resources:
        **model_resources("evaluator"),
    log:
        "logs/judge_items/{setting}/{dataset}/{evaluator}.log",
    shell:
        JB + " --log {log} judge-items --evaluator {wildcards.evaluator} "
        "--dataset {wildcards.dataset} --setting {wildcards.setting} "
        "--judgements {input.judgements} --out {output}"


rule pomms:
    input:
        judgements=expand(Paths.judgements("{dataset}"), dataset=POMMS_DATASETS),
        item_scores=expand(Paths.item_scores(POMMS_SETTING, "{dataset}", "{evaluator}"),
                           dataset=POMMS_DATASETS, evaluator=PANEL),
        scores=f"results/philautia/{POMMS_SETTING}/scores.parquet",
        code=code("studies/pomms.py", "studies/pomms_steps.py", "agreement.py",
                  "studies/philautia.py"),
    output:
        metrics=f"{Paths.pomms_dir}/metrics.json",
        tables=expand(f"{Paths.pomms_dir}/{{table}}.parquet", table=POMMS_TABLES),
    params:
        dvc_params=POMMS_KEYS,
        values=values_of(POMMS_KEYS),
    log:
        "logs/pomms.log",
    shell:
        JB + " --log {log} pomms --out-dir " + Paths.pomms_dir


rule pomms_heatmap:
    input:
        tables=expand(f"{Paths.pomms_dir}/{{table}}.parquet", table=POMMS_TABLES),
        code=code("report/figures.py", "studies/pomms_steps.py"),
    output:
        f"{Paths.pomms_dir}/figures/phi_tilde_pomms.png",
    params:
        dvc_params=FIGURE_KEYS,
        values=values_of(FIGURE_KEYS),
    log:
        "logs/pomms_heatmap.log",
    shell:
        JB + " --log {log} pomms-heatmap --out {output}"
