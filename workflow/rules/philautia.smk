# Philautia-Eval (seed 000 §4.1, Algorithm 1): captions per generator, scores per
# evaluator x generator x setting, then Phi, Phi-tilde / philautia scores, figures, report.


rule dataset:
    input:
        code=code("data", "artifacts.py"),
    output:
        table=Paths.dataset_table,
        images=directory(Paths.dataset_images),
    params:
        dvc_params=["dataset"],
        values=values_of(["dataset"]),
    log:
        "logs/dataset.log",
    shell:
        JB + " --log {log} dataset --out {output.table} --images {output.images}"


rule caption:
    input:
        images=Paths.dataset_table,
        code=CODE_MODELS + template(PARAMS["prompts"]["caption"]),
    output:
        Paths.captions("{generator}"),
    params:
        dvc_params=caption_keys,
        values=lambda wildcards: values_of(caption_keys(wildcards)),
    resources:
        **model_resources("generator"),
    log:
        "logs/caption/{generator}.log",
    shell:
        JB + " --log {log} caption --generator {wildcards.generator} "
        "--images {input.images} --out {output}"


rule score:
    input:
        images=Paths.dataset_table,
        captions=Paths.captions("{generator}"),
        code=score_code,
    output:
        Paths.scores("{setting}", "{evaluator}", "{generator}"),
    params:
        dvc_params=score_keys,
        values=lambda wildcards: values_of(score_keys(wildcards)),
    resources:
        **model_resources("evaluator"),
    log:
        "logs/score/{setting}/{evaluator}/{generator}.log",
    shell:
        JB + " --log {log} score --evaluator {wildcards.evaluator} "
        "--generator {wildcards.generator} --setting {wildcards.setting} "
        "--images {input.images} --captions {input.captions} --out {output}"


rule phi:
    input:
        scores=expand(Paths.scores("{{setting}}", "{evaluator}", "{generator}"),
                      evaluator=PANEL, generator=PANEL),
        code=code("judging.py", "studies/philautia_steps.py"),
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
        code=code("studies/philautia.py", "studies/philautia_steps.py", "stats.py"),
    output:
        metrics="results/philautia/{setting}/metrics.json",
        tables=expand("results/philautia/{{setting}}/{table}.parquet",
                      table=ANALYSIS_TABLES),
    params:
        dvc_params=ANALYSIS_KEYS,
        values=values_of(ANALYSIS_KEYS),
    log:
        "logs/philautia/{setting}.log",
    shell:
        JB + " --log {log} philautia --out-dir results/philautia/{wildcards.setting}"


rule heatmaps:
    input:
        phi="results/philautia/{setting}/phi.parquet",
        metrics="results/philautia/{setting}/metrics.json",
        code=code("report/figures.py", "studies/philautia_steps.py"),
    output:
        expand("results/philautia/{{setting}}/figures/{figure}.png",
               figure=["phi", "phi_tilde", "philautia"]),
    params:
        dvc_params=FIGURE_KEYS,
        values=values_of(FIGURE_KEYS),
    log:
        "logs/heatmaps/{setting}.log",
    shell:
        JB + " --log {log} heatmaps --setting {wildcards.setting} "
        "--out-dir results/philautia/{wildcards.setting}/figures"


rule report:
    input:
        metrics=expand("results/philautia/{setting}/metrics.json", setting=SETTINGS),
        tables=expand("results/philautia/{setting}/{table}.parquet", setting=SETTINGS,
                      table=["phi", "counts", *ANALYSIS_TABLES]),
        figures=expand("results/philautia/{setting}/figures/{figure}.png",
                       setting=SETTINGS, figure=["phi", "phi_tilde", "philautia"]),
        pomms=POMMS_OUTPUTS,
        code=code("report"),
    output:
        Paths.report,
    params:
        dvc_params=REPORT_KEYS,
        values=values_of(REPORT_KEYS),
    log:
        "logs/report.log",
    shell:
        JB + " --log {log} report --out {output}"
