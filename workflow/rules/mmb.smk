# MMB (seed 002): pairwise image preference data; an instruction pool; every (pair,
# instruction) judged once per judge (journaled); CLIP embeddings (cached per image) and
# FAISS clusters; then the factorial design and the tables as pure computation, so
# changing K, tau or the design reruns no judge call and no embedding (the judge and
# embedding jobs a change of the data job reruns find every answer in the journal and
# every embedding in the cache). With mmb.layout_check, each judge's sample of items is
# asked in the other layout too (issue 45: what the cache-friendly layout changes).
#
# Each key of the block a rule declares comes from the view (MmbParams, block_keys: a
# dotted name goes into a nested part). A declared block that
# holds a run setting (mmb.embedding.cache_dir, and so the whole block `mmb`) is declared
# as its other keys (step_params: judgebias.config.answer_keys).
from judgebias.paramsblock import block_keys
from judgebias.studies.mmb import tables as mmb
from judgebias.studies.mmb.data.pairs import dataset_files as mmb_dataset_files
from judgebias.studies.mmb.params import (
    LAYOUTS,
    MmbParams,
    judge_prompt,
    probability_keys,
)

MMB_JUDGES = PARAMS["mmb"]["models"]
MMB_GROW = PARAMS["mmb"]["instructions"]["grow"]
MMB_EXTRA = PARAMS["mmb"]["instructions"]["extra"]
# The data step checks the data carry the design before anything is written
# (data.checks.data_errors: the largest D_val against the validation pairs, D_sup and K
# against the training images and each MJBench fold), so that a shortfall stops the run
# before any judge call is paid: the job fails or not by these keys, so it declares them.
MMB_DATA_KEYS = block_keys(MmbParams, only=("dataset", "clustering.ks",
                                            "clustering.support_per_cluster", "design.n_val"))
# A grown pool is checked to hold the largest ensemble (the writer may add fewer than
# asked); without a writer `validate` counts the pool exactly, and the step reads no
# n_prompts (steps.pool).
MMB_POOL_KEYS = [*block_keys(MmbParams, only=("instructions",
                                              *(("design.n_prompts",) if MMB_GROW else ()))),
                 *(model_keys(MMB_GROW["writer"], "writer") if MMB_GROW else [])]
MMB_JUDGE_KEYS = block_keys(MmbParams, only=("prompt", "order", "order_seed", "layout"))
# The layout check (issue 45): the judge job's keys, and the sample's
MMB_LAYOUT_KEYS = block_keys(MmbParams, only=("prompt", "order", "order_seed", "layout",
                                              "layout_check"))
MMB_EMBED_KEYS = block_keys(MmbParams, only=("embedding", "clustering.ks",
                                             "clustering.support_per_cluster"))
MMB_CLUSTER_KEYS = block_keys(MmbParams, only=(
    "clustering.ks", "clustering.seeds", "clustering.niter", "clustering.support_per_cluster",
    "clustering.support"))
MMB_FACTORIAL_KEYS = block_keys(MmbParams, only=("clustering", "entropy", "design"))
MMB_ANALYSIS_KEYS = [MmbParams.PARAMS_KEY, *(f"panel.{j}" for j in MMB_JUDGES)]
# The saved de-biaser (steps.save): the report's cell, the clustering it recomputes at that
# K and seed 0, how a pair is assigned, the ECE's bins, and what it records of the inputs
# it expects (the order shown, the embedding function; how p(y | x, a) is read is the
# judge's probability_keys)
MMB_SAVE_KEYS = block_keys(MmbParams, only=(
    "report.n_prompts", "report.n_val", "report.k", "clustering.ks",
    "clustering.support_per_cluster", "clustering.support", "clustering.niter",
    "clustering.tau", "clustering.pair", "entropy", "order", "design.calibration_bins",
    "embedding.architecture", "embedding.pretrained", "embedding.checkpoint",
    "embedding.init_seed", "embedding.image_size"))

wildcard_constraints:
    judge="|".join(MMB_JUDGES),


rule mmb_data:
    input:
        # unnamed: the imported files, images included, are dependencies, read through
        # their params keys
        lambda w: mmb_dataset_files(PARAMS["mmb"]["dataset"]),
        code=step_code("mmb.data"),
    output:
        pairs=mmb.PAIRS_PATH,
        support=mmb.SUPPORT_PATH,
        images=directory(mmb.IMAGES),
        summary=mmb.SUMMARY_PATH,
    params:
        **step_params(MMB_DATA_KEYS),
    priority: LONG_CHAIN
    log:
        "logs/mmb/data.log",
    shell:
        step("mmb.data")


rule mmb_pool:
    input:
        code=step_code("mmb.pool"),
        builtin=package_file("studies/mmb/instructions.yaml"),
        prompt=template("mmb_rephrase") if MMB_GROW else [],
        extra=[MMB_EXTRA] if MMB_EXTRA else [],
    output:
        pool=mmb.INSTRUCTIONS_PATH,
    params:
        **step_params(MMB_POOL_KEYS),
    resources:
        **(resources_of(MMB_GROW["writer"]) if MMB_GROW else {}),
    priority: LONG_CHAIN
    log:
        "logs/mmb/pool.log",
    shell:
        step("mmb.pool")


rule mmb_judge:
    input:
        pairs=mmb.PAIRS_PATH,
        pool=mmb.INSTRUCTIONS_PATH,
        code=step_code("mmb.judge"),
        prompt=template(judge_prompt(PARAMS["mmb"]["prompt"], PARAMS["mmb"]["layout"])),
    output:
        judgements=mmb.judgements_path("{judge}"),
    params:
        **step_params(lambda w: model_keys(w.judge, "judge", *MMB_JUDGE_KEYS,
                                           *probability_keys(PARAMS, w.judge))),
    resources:
        **model_resources("judge"),
    log:
        "logs/mmb/judge/{judge}.log",
    shell:
        step("mmb.judge")


rule mmb_embed:
    input:
        pairs=mmb.PAIRS_PATH,
        support=mmb.SUPPORT_PATH,
        code=step_code("mmb.embed"),
    output:
        embeddings=mmb.EMBEDDINGS_PATH,
    params:
        **step_params(MMB_EMBED_KEYS),
    resources:
        gpu=mmb.gpu_need(PARAMS, "embed").gpus,  # the dispatch takes as many (Study.gpus)
    priority: LONG_CHAIN
    log:
        "logs/mmb/embed.log",
    shell:
        step("mmb.embed")


rule mmb_cluster:
    input:
        pairs=mmb.PAIRS_PATH,
        support=mmb.SUPPORT_PATH,
        embeddings=mmb.EMBEDDINGS_PATH,
        code=step_code("mmb.cluster"),
    output:
        clusters=mmb.CLUSTERS_PATH,
    params:
        **step_params(MMB_CLUSTER_KEYS),
    priority: LONG_CHAIN
    log:
        "logs/mmb/cluster.log",
    shell:
        step("mmb.cluster")


rule mmb_factorial:
    input:
        pairs=mmb.PAIRS_PATH,
        pool=mmb.INSTRUCTIONS_PATH,
        judgements=mmb.judgements_path("{judge}"),
        clusters=mmb.CLUSTERS_PATH,
        code=step_code("mmb.factorial"),
    output:
        configurations=mmb.factorial_path("{judge}"),
        nopref=mmb.nopref_path("{judge}"),
    params:
        **step_params(MMB_FACTORIAL_KEYS),
    priority: LONG_CHAIN
    log:
        "logs/mmb/factorial/{judge}.log",
    shell:
        step("mmb.factorial")


rule mmb_analysis:
    input:
        pairs=mmb.PAIRS_PATH,
        pool=mmb.INSTRUCTIONS_PATH,
        clusters=mmb.CLUSTERS_PATH,
        judgements=expand(mmb.judgements_path("{judge}"), judge=MMB_JUDGES),
        configurations=expand(mmb.factorial_path("{judge}"), judge=MMB_JUDGES),
        nopref=expand(mmb.nopref_path("{judge}"), judge=MMB_JUDGES),
        code=step_code("mmb.analyse"),
    output:
        metrics=mmb.METRICS_PATH,
        tables=expand(mmb.table_path("{table}"), table=mmb.TABLES),
        figures=expand(mmb.figure_path("{figure}"), figure=mmb.FIGURES),
        curves=[curve.output(mmb.curve_path(name, judge), judge)
                for name, curve in mmb.CURVES.items() for judge in MMB_JUDGES],
    params:
        **step_params(MMB_ANALYSIS_KEYS),
    log:
        "logs/mmb/analysis.log",
    shell:
        step("mmb.analyse")


rule mmb_save:
    input:
        pairs=mmb.PAIRS_PATH,
        support=mmb.SUPPORT_PATH,
        summary=mmb.SUMMARY_PATH,
        pool=mmb.INSTRUCTIONS_PATH,
        judgements=mmb.judgements_path("{judge}"),
        embeddings=mmb.EMBEDDINGS_PATH,
        clusters=mmb.CLUSTERS_PATH,
        code=step_code("mmb.save"),
    output:
        debiaser=mmb.saved_path("{judge}"),
    params:
        **step_params(lambda w: [*MMB_SAVE_KEYS, *probability_keys(PARAMS, w.judge)]),
    log:
        "logs/mmb/save/{judge}.log",
    shell:
        step("mmb.save")


if mmb.layout_check_on(PARAMS):

    rule mmb_layout_check:
        input:
            pairs=mmb.PAIRS_PATH,
            pool=mmb.INSTRUCTIONS_PATH,
            # the items' answers in mmb.layout are the judge job's: asked there, never twice
            judgements=mmb.judgements_path("{judge}"),
            code=step_code("mmb.layout_check"),
            prompt=[t for layout in LAYOUTS
                    for t in template(judge_prompt(PARAMS["mmb"]["prompt"], layout))],
        output:
            answers=mmb.layout_answers_path("{judge}"),
            metrics=mmb.layout_metrics_path("{judge}"),
        params:
            **step_params(lambda w: model_keys(w.judge, "judge", *MMB_LAYOUT_KEYS,
                                               *probability_keys(PARAMS, w.judge))),
        resources:
            **model_resources("judge"),
        log:
            "logs/mmb/layout_check/{judge}.log",
        shell:
            step("mmb.layout_check")

    TARGETS.extend(mmb.layout_metrics_path(judge) for judge in MMB_JUDGES)


TARGETS.append(mmb.METRICS_PATH)
TARGETS.extend(mmb.saved_path(judge) for judge in MMB_JUDGES)
