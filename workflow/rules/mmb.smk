# MMB (seed 002): pairwise image preference data; an instruction pool; every (pair,
# instruction) judged once per judge (journaled); CLIP embeddings (cached per image) and
# FAISS clusters; then the factorial design and the tables as pure computation, so
# changing K, tau or the design reruns no judge call and no embedding.
from judgebias.studies.mmb import tables as mmb
from judgebias.studies.mmb.report import report_inputs as mmb_report_inputs

MMB_JUDGES = PARAMS["mmb"]["models"]
MMB_GROW = PARAMS["mmb"]["instructions"]["grow"]
MMB_EXTRA = PARAMS["mmb"]["instructions"]["extra"]
MMB_DATA_KEYS = ["mmb.dataset"]
MMB_POOL_KEYS = ["mmb.instructions",
                 *(model_keys(MMB_GROW["writer"], "writer") if MMB_GROW else [])]
MMB_EMBED_KEYS = ["mmb.embedding", "mmb.clustering.ks", "mmb.clustering.support_per_cluster"]
MMB_CLUSTER_KEYS = ["mmb.clustering.ks", "mmb.clustering.seeds", "mmb.clustering.niter",
                    "mmb.clustering.support_per_cluster", "mmb.clustering.support"]
MMB_FACTORIAL_KEYS = ["mmb.clustering", "mmb.entropy", "mmb.design"]
MMB_ANALYSIS_KEYS = ["mmb", *(f"panel.{j}" for j in MMB_JUDGES)]

wildcard_constraints:
    judge="|".join(MMB_JUDGES),


# The data step also checks mmb.design, mmb.clustering and the MJBench folds against the
# data (steps.data_errors) so that a shortfall stops the run before any judge call; these
# keys change no byte of its outputs, so they are not its params (a later edit is checked
# again by the steps that read them). The pool step checks n_prompts the same way.
rule mmb_data:
    input:
        code=step_code("mmb-data"),
    output:
        pairs=mmb.PAIRS_PATH,
        support=mmb.SUPPORT_PATH,
        images=directory(mmb.IMAGES),
        summary=f"{mmb.DATA}/summary.json",
    params:
        dvc_params=MMB_DATA_KEYS,
        values=values_of(MMB_DATA_KEYS),
    log:
        "logs/mmb/data.log",
    shell:
        JB + " --log {log} mmb-data --pairs {output.pairs} --support {output.support} "
        "--images {output.images} --summary {output.summary}"


rule mmb_pool:
    input:
        code=step_code("mmb-pool"),
        builtin="src/judgebias/studies/mmb/instructions.yaml",
        prompt=template("mmb_rephrase") if MMB_GROW else [],
        extra=[MMB_EXTRA] if MMB_EXTRA else [],
    output:
        mmb.INSTRUCTIONS_PATH,
    params:
        dvc_params=MMB_POOL_KEYS,
        values=values_of(MMB_POOL_KEYS),
    resources:
        **(resources_of(MMB_GROW["writer"]) if MMB_GROW else {}),
    log:
        "logs/mmb/pool.log",
    shell:
        JB + " --log {log} mmb-pool --out {output}"


rule mmb_judge:
    input:
        pairs=mmb.PAIRS_PATH,
        pool=mmb.INSTRUCTIONS_PATH,
        code=step_code("mmb-judge"),
        prompt=template(PARAMS["mmb"]["prompt"]),
    output:
        mmb.judgements_path("{judge}"),
    params:
        dvc_params=lambda w: model_keys(w.judge, "judge", "mmb.prompt", "mmb.order",
                                        "mmb.order_seed"),
        values=lambda w: values_of(model_keys(w.judge, "judge", "mmb.prompt", "mmb.order",
                                              "mmb.order_seed")),
    resources:
        **model_resources("judge"),
    log:
        "logs/mmb/judge/{judge}.log",
    shell:
        JB + " --log {log} mmb-judge --judge {wildcards.judge} --pairs {input.pairs} "
        "--pool {input.pool} --out {output}"


rule mmb_embed:
    input:
        pairs=mmb.PAIRS_PATH,
        support=mmb.SUPPORT_PATH,
        code=step_code("mmb-embed"),
    output:
        mmb.EMBEDDINGS_PATH,
    params:
        dvc_params=MMB_EMBED_KEYS,
        values=values_of(MMB_EMBED_KEYS),
    resources:
        gpu=PARAMS["mmb"]["embedding"]["gpus"],
    log:
        "logs/mmb/embed.log",
    shell:
        JB + " --log {log} mmb-embed --pairs {input.pairs} --support {input.support} "
        "--out {output}"


rule mmb_cluster:
    input:
        pairs=mmb.PAIRS_PATH,
        support=mmb.SUPPORT_PATH,
        embeddings=mmb.EMBEDDINGS_PATH,
        code=step_code("mmb-cluster"),
    output:
        mmb.CLUSTERS_PATH,
    params:
        dvc_params=MMB_CLUSTER_KEYS,
        values=values_of(MMB_CLUSTER_KEYS),
    log:
        "logs/mmb/cluster.log",
    shell:
        JB + " --log {log} mmb-cluster --pairs {input.pairs} --support {input.support} "
        "--embeddings {input.embeddings} --out {output}"


rule mmb_factorial:
    input:
        pairs=mmb.PAIRS_PATH,
        pool=mmb.INSTRUCTIONS_PATH,
        judgements=mmb.judgements_path("{judge}"),
        clusters=mmb.CLUSTERS_PATH,
        code=step_code("mmb-factorial"),
    output:
        factorial=mmb.factorial_path("{judge}"),
        nopref=mmb.nopref_path("{judge}"),
    params:
        dvc_params=MMB_FACTORIAL_KEYS,
        values=values_of(MMB_FACTORIAL_KEYS),
    log:
        "logs/mmb/factorial/{judge}.log",
    shell:
        JB + " --log {log} mmb-factorial --pairs {input.pairs} --pool {input.pool} "
        "--judgements {input.judgements} --clusters {input.clusters} "
        "--out-dir " + mmb.RESULTS + "/factorial/{wildcards.judge}"


rule mmb_analysis:
    input:
        pairs=mmb.PAIRS_PATH,
        pool=mmb.INSTRUCTIONS_PATH,
        clusters=mmb.CLUSTERS_PATH,
        judgements=expand(mmb.judgements_path("{judge}"), judge=MMB_JUDGES),
        factorial=expand(mmb.factorial_path("{judge}"), judge=MMB_JUDGES),
        nopref=expand(mmb.nopref_path("{judge}"), judge=MMB_JUDGES),
        code=step_code("mmb-analysis"),
    output:
        metrics=f"{mmb.RESULTS}/metrics.json",
        tables=expand(f"{mmb.RESULTS}/{{table}}.parquet", table=mmb.TABLES),
        figures=expand(f"{mmb.RESULTS}/figures/{{figure}}.png", figure=mmb.FIGURES),
    params:
        dvc_params=MMB_ANALYSIS_KEYS,
        values=values_of(MMB_ANALYSIS_KEYS),
    log:
        "logs/mmb/analysis.log",
    shell:
        JB + " --log {log} mmb-analysis --pairs {input.pairs} --pool {input.pool} "
        "--clusters {input.clusters} --judgements {input.judgements} "
        "--factorial {input.factorial} --out-dir " + mmb.RESULTS


TARGETS.append(f"{mmb.RESULTS}/metrics.json")
REPORT_INPUTS["mmb"] = mmb_report_inputs(PARAMS, mmb.RESULTS)
