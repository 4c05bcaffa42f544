# FRAME (seed 004): the benchmark (§4.1 stages, or an imported FRAME table); one render job
# per manipulation (its whole grid, cached per image); one score job per (judge, render
# set); each judge's best recipes; the analysis judge's follow-ups (mitigation prompts,
# combinations, pairwise); then the tables as pure computation.
# Each key of the block a rule declares comes from the view (FrameParams, block_keys: a
# dotted name goes into a nested part).
from judgebias.paramsblock import block_keys
from judgebias.studies.frame import tables as frame
from judgebias.studies.frame.data import dataset_files as frame_dataset_files
from judgebias.studies.frame import presets as frame_presets
from judgebias.studies.frame.params import FrameParams

FRAME = PARAMS["frame"]
FRAME_JUDGES = FRAME["models"]
FRAME_ANALYST = FRAME["analysis_judge"]
FRAME_MANIPULATIONS = list(FRAME["manipulations"])
FRAME_SETS = ["original", *FRAME_MANIPULATIONS]
FRAME_SYNTHETIC = FRAME["dataset"]["name"] == "synthetic"
FRAME_BUILD = FRAME["dataset"].get("synthetic") or {}
FRAME_WRITER = FRAME_BUILD.get("writer")
FRAME_IMAGES = FRAME_BUILD.get("images", {})
FRAME_IMAGE_DIR = [frame.IMAGES] if FRAME_SYNTHETIC else []
FRAME_SCORE_KEYS = block_keys(FrameParams, only=("prompts.standard",))
# the follow-ups' judge, read by their steps
FRAME_ANALYST_KEYS = block_keys(FrameParams, only=("analysis_judge",))
# not frame.render_cache: where the cache lies, a run setting (no rule declares one)
FRAME_RENDER_KEYS = block_keys(FrameParams, only=("resize_back", "beauty"))
FRAME_ALL_RENDERS = [frame.renders_path(m) for m in FRAME_MANIPULATIONS]
# frame.presets: paper adds one render set and one score set per judge (seed 004 Tables 9-10)
FRAME_PRESETS = frame_presets.enabled(FRAME)
FRAME_PRESET_KEYS = block_keys(FrameParams, only=("presets", "preset_judges"))

wildcard_constraints:
    frame_judge="|".join(FRAME_JUDGES),
    frame_set="|".join(FRAME_SETS + ([frame_presets.PRESETS] if FRAME_PRESETS else [])),
    manipulation="|".join(FRAME_MANIPULATIONS),


def frame_gpus(step_name, wildcards=None):
    """The `gpu` resource of a FRAME rule: the GPUs its step computes on, as many as the
    `judgebias plumbing step` dispatch gives the job (tables.gpu_need; 0 for a CPU step)."""
    need = frame.gpu_need(PARAMS, step_name, dict(wildcards.items()) if wildcards else {})
    return need.gpus if need else 0


def frame_renders(wildcards):
    if wildcards.frame_set == "original":
        return []
    return [frame.renders_path(wildcards.frame_set)]


def frame_after_grid(wildcards):
    """The presets are scored after the grid's scores of the same judge: a preset that is
    also a grid value is then a journal hit, never a second paid call."""
    if wildcards.frame_set != frame_presets.PRESETS:
        return []
    return [frame.scores_path(wildcards.frame_judge, m) for m in FRAME_MANIPULATIONS]


# Unnamed inputs are dependencies the step does not read: the item images (named by the
# item table), the imported table and its images, or the imported human scores (read
# where params.yaml names them), the paper's recipes (read by presets.preset_recipes) and
# the grid's outputs a job must come after.
if FRAME_SYNTHETIC:

    rule frame_concepts:
        input:
            code=step_code("frame.concepts"),
        output:
            concepts=frame.CONCEPTS_PATH,
        params:
            **step_params(block_keys(FrameParams, only=("dataset.synthetic.n_per_domain",
                                     "dataset.synthetic.domains",
                                     "dataset.synthetic.k_weights",
                                     "dataset.synthetic.seed"))),
        priority: LONG_CHAIN
        log:
            "logs/frame/concepts.log",
        shell:
            step("frame.concepts")

    rule frame_instructions:
        input:
            concepts=frame.CONCEPTS_PATH,
            code=step_code("frame.instructions"),
            prompt=template("frame_instruction") if FRAME_WRITER else [],
        output:
            instructions=frame.INSTRUCTIONS_PATH,
        params:
            **step_params([*block_keys(FrameParams, only=("dataset.synthetic.writer",)),
                           *(model_keys(FRAME_WRITER, "writer") if FRAME_WRITER else [])]),
        resources:
            **(resources_of(FRAME_WRITER) if FRAME_WRITER else {}),
        priority: LONG_CHAIN
        log:
            "logs/frame/instructions.log",
        shell:
            step("frame.instructions")

    rule frame_images:
        input:
            instructions=frame.INSTRUCTIONS_PATH,
            code=step_code("frame.images"),
        output:
            generated=frame.GENERATED_PATH,
            images=directory(frame.IMAGES),
        params:
            # the images block but its cache_dir, a run setting (judgebias.config.answer_keys)
            **step_params(block_keys(FrameParams, only=("dataset.synthetic.images",
                                                        "dataset.synthetic.seed"))),
        resources:
            gpu=frame_gpus("images"),
            # the OpenAI images API: a unit of the openai backend's slot
            **provider_slots(FRAME_IMAGES.get("backend")),
        priority: LONG_CHAIN
        log:
            "logs/frame/images.log",
        shell:
            step("frame.images")


rule frame_items:
    input:
        lambda w: frame_dataset_files(FRAME["dataset"]),
        generated=[frame.GENERATED_PATH] if FRAME_SYNTHETIC else [],
        code=step_code("frame.items"),
    output:
        benchmark=frame.ITEMS_PATH,
        summary=frame.SUMMARY_PATH,
    params:
        **step_params(block_keys(FrameParams, only=("dataset",))),
    priority: LONG_CHAIN
    log:
        "logs/frame/items.log",
    shell:
        step("frame.items")


rule frame_render:
    input:
        FRAME_IMAGE_DIR,
        benchmark=frame.ITEMS_PATH,
        code=step_code("frame.render_grid"),
    output:
        table=frame.renders_path("{manipulation}"),
        images=directory(frame.renders_dir("{manipulation}")),
    params:
        **step_params(lambda w: [f"frame.manipulations.{w.manipulation}",
                                 *FRAME_RENDER_KEYS]),
    resources:
        gpu=lambda w: frame_gpus("render_grid", w),
    priority: LONG_CHAIN
    log:
        "logs/frame/render/{manipulation}.log",
    shell:
        step("frame.render_grid")


rule frame_score:
    input:
        frame_after_grid,
        benchmark=frame.ITEMS_PATH,
        renders=frame_renders,
        code=step_code("frame.score"),
        prompt=template(FRAME["prompts"]["standard"]) + template("frame_system"),
    output:
        scores=frame.scores_path("{frame_judge}", "{frame_set}"),
    params:
        **step_params(lambda w: model_keys(w.frame_judge, "judge", *FRAME_SCORE_KEYS)),
    resources:
        **model_resources("frame_judge"),
    priority: lambda w: LONG_CHAIN if w.frame_judge == FRAME_ANALYST else 0
    log:
        "logs/frame/score/{frame_judge}/{frame_set}.log",
    shell:
        step("frame.score")


rule frame_recipes:
    input:
        scores=expand(frame.scores_path("{{frame_judge}}", "{name}"), name=FRAME_SETS),
        code=step_code("frame.recipes"),
    output:
        recipes=frame.recipes_path("{frame_judge}"),
    params:
        **step_params(),  # the in-sample best of the judge's own scores: no params
    priority: lambda w: LONG_CHAIN if w.frame_judge == FRAME_ANALYST else 0
    log:
        "logs/frame/recipes/{frame_judge}.log",
    shell:
        step("frame.recipes")


rule frame_combine:
    input:
        FRAME_IMAGE_DIR,
        benchmark=frame.ITEMS_PATH,
        recipes=frame.recipes_path(FRAME_ANALYST),
        code=step_code("frame.combine"),
    output:
        table=frame.renders_path(frame.COMBINED),
        images=directory(frame.renders_dir(frame.COMBINED)),
    params:
        **step_params([*block_keys(FrameParams, only=("combinations",)), *FRAME_RENDER_KEYS]),
    resources:
        gpu=frame_gpus("combine"),  # its recipes may hold the GFPGAN beauty filter
    priority: LONG_CHAIN
    log:
        "logs/frame/combine.log",
    shell:
        step("frame.combine")


rule frame_combinations:
    input:
        benchmark=frame.ITEMS_PATH,
        renders=frame.renders_path(frame.COMBINED),
        code=step_code("frame.combinations"),
        prompt=template(FRAME["prompts"]["standard"]) + template("frame_system"),
    output:
        scores=frame.COMBINATIONS_PATH,
    params:
        **step_params(model_keys(FRAME_ANALYST, "judge", *FRAME_ANALYST_KEYS,
                                 *FRAME_SCORE_KEYS)),
    resources:
        **resources_of(FRAME_ANALYST),
    priority: LONG_CHAIN
    log:
        "logs/frame/combinations.log",
    shell:
        step("frame.combinations")


rule frame_mitigation:
    input:
        benchmark=frame.ITEMS_PATH,
        recipes=frame.recipes_path(FRAME_ANALYST),
        renders=FRAME_ALL_RENDERS,
        code=step_code("frame.mitigation"),
        prompt=[t for kind in FRAME["mitigation"] for t in template(FRAME["prompts"][kind])]
        + template("frame_system"),
    output:
        scores=frame.MITIGATION_PATH,
    params:
        **step_params(model_keys(FRAME_ANALYST, "judge", *FRAME_ANALYST_KEYS,
                                 *block_keys(FrameParams, only=("prompts", "mitigation")))),
    resources:
        **resources_of(FRAME_ANALYST),
    log:
        "logs/frame/mitigation.log",
    shell:
        step("frame.mitigation")


rule frame_pairwise:
    input:
        benchmark=frame.ITEMS_PATH,
        recipes=frame.recipes_path(FRAME_ANALYST),
        renders=frame.renders_path(FRAME["pairwise"]["manipulation"]),
        code=step_code("frame.pairwise"),
        prompt=template(FRAME["pairwise"]["prompt"]) + template("frame_system"),
    output:
        verdicts=frame.PAIRWISE_PATH,
    params:
        **step_params(model_keys(FRAME_ANALYST, "judge", *FRAME_ANALYST_KEYS,
                                 *block_keys(FrameParams, only=("pairwise",)))),
    resources:
        **resources_of(FRAME_ANALYST),
    log:
        "logs/frame/pairwise.log",
    shell:
        step("frame.pairwise")


rule frame_analysis:
    input:
        benchmark=frame.ITEMS_PATH,
        scores=expand(frame.scores_path("{judge}", "{name}"), judge=FRAME_JUDGES,
                      name=FRAME_SETS),
        recipes=expand(frame.recipes_path("{judge}"), judge=FRAME_JUDGES),
        mitigation=frame.MITIGATION_PATH,
        combinations=frame.COMBINATIONS_PATH,
        pairwise=frame.PAIRWISE_PATH,
        renders=FRAME_ALL_RENDERS,
        code=step_code("frame.analysis"),
    output:
        metrics=frame.METRICS_PATH,
        tables=[frame.result_path(table) for table in frame.TABLES],
        figures=[frame.figure_path(figure) for figure in frame.FIGURES],
    params:
        # the whole block but its run settings (judgebias.config.answer_keys)
        **step_params([FrameParams.PARAMS_KEY, *(f"panel.{j}" for j in FRAME_JUDGES)]),
    log:
        "logs/frame/analysis.log",
    shell:
        step("frame.analysis")


if FRAME_PRESETS:

    rule frame_presets_render:
        input:
            FRAME_IMAGE_DIR,
            package_file(frame_presets.PAPER_RECIPES),
            FRAME_ALL_RENDERS,  # a preset in the grid: copied from the render cache
            benchmark=frame.ITEMS_PATH,
            code=step_code("frame.presets_render"),
        output:
            table=frame.renders_path(frame_presets.PRESETS),
            images=directory(frame.renders_dir(frame_presets.PRESETS)),
        params:
            **step_params([*FRAME_PRESET_KEYS, *FRAME_RENDER_KEYS]),
        log:
            "logs/frame/render/presets.log",
        shell:
            step("frame.presets_render")

    rule frame_presets:
        input:
            package_file(frame_presets.PAPER_RECIPES),
            scores=expand(frame.scores_path("{judge}", "{name}"), judge=FRAME_JUDGES,
                          name=["original", frame_presets.PRESETS]),
            code=step_code("frame.presets"),
        output:
            table=frame_presets.RESULTS_PATH,
        params:
            **step_params([*FRAME_PRESET_KEYS, *block_keys(FrameParams, only=(
                "models", "analysis.n_permutations", "analysis.seed",
                "analysis.alpha"))]),  # its log line's q < alpha
        log:
            "logs/frame/presets.log",
        shell:
            step("frame.presets")

    TARGETS.append(frame_presets.RESULTS_PATH)


TARGETS.append(frame.METRICS_PATH)
