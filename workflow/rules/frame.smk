# FRAME (seed 004): the benchmark (§4.1 stages, or an imported FRAME table); one render job
# per manipulation (its whole grid, cached per image); one score job per (judge, render
# set); each judge's best recipes; the analysis judge's follow-ups (mitigation prompts,
# combinations, pairwise); then the tables as pure computation.
from judgebias.studies.frame import tables as frame
from judgebias.studies.frame import presets as frame_presets
from judgebias.studies.frame.report import report_inputs as frame_report_inputs

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
FRAME_SCORE_KEYS = ["frame.prompts.standard"]
FRAME_RENDER_KEYS = ["frame.resize_back", "frame.beauty"]
FRAME_ALL_RENDERS = [frame.renders_path(m) for m in FRAME_MANIPULATIONS]
# frame.presets: paper adds one render set and one score set per judge (seed 004 Tables 9-10)
FRAME_PRESETS = frame_presets.enabled(FRAME)
FRAME_PRESET_KEYS = ["frame.presets", "frame.preset_judges"]

wildcard_constraints:
    frame_judge="|".join(FRAME_JUDGES),
    frame_set="|".join(FRAME_SETS + ([frame_presets.PRESETS] if FRAME_PRESETS else [])),
    manipulation="|".join(FRAME_MANIPULATIONS),


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


if FRAME_SYNTHETIC:

    rule frame_concepts:
        input:
            code=step_code("frame-concepts"),
        output:
            frame.CONCEPTS_PATH,
        params:
            dvc_params=["frame.dataset.synthetic.n_per_domain",
                        "frame.dataset.synthetic.domains",
                        "frame.dataset.synthetic.k_weights", "frame.dataset.synthetic.seed"],
            values=values_of(["frame.dataset.synthetic.n_per_domain",
                              "frame.dataset.synthetic.domains",
                              "frame.dataset.synthetic.k_weights",
                              "frame.dataset.synthetic.seed"]),
        log:
            "logs/frame/concepts.log",
        shell:
            JB + " --log {log} frame-concepts --out {output}"

    rule frame_instructions:
        input:
            concepts=frame.CONCEPTS_PATH,
            code=step_code("frame-instructions"),
            prompt=template("frame_instruction") if FRAME_WRITER else [],
        output:
            frame.INSTRUCTIONS_PATH,
        params:
            dvc_params=["frame.dataset.synthetic.writer",
                        *(model_keys(FRAME_WRITER, "writer") if FRAME_WRITER else [])],
            values=values_of(["frame.dataset.synthetic.writer",
                              *(model_keys(FRAME_WRITER, "writer") if FRAME_WRITER else [])]),
        resources:
            **(resources_of(FRAME_WRITER) if FRAME_WRITER else {}),
        log:
            "logs/frame/instructions.log",
        shell:
            JB + " --log {log} frame-instructions --concepts {input.concepts} --out {output}"

    rule frame_images:
        input:
            instructions=frame.INSTRUCTIONS_PATH,
            code=step_code("frame-images"),
        output:
            table=frame.GENERATED_PATH,
            images=directory(frame.IMAGES),
        params:
            dvc_params=["frame.dataset.synthetic.images"],
            values=values_of(["frame.dataset.synthetic.images"]),
        resources:
            gpu=FRAME_IMAGES.get("gpus", 0),
            api_openai=int(FRAME_IMAGES.get("backend") == "openai"),
        log:
            "logs/frame/images.log",
        shell:
            JB + " --log {log} frame-images --instructions {input.instructions} "
            "--out {output.table} --images {output.images}"


rule frame_items:
    input:
        generated=[frame.GENERATED_PATH] if FRAME_SYNTHETIC else [],
        source=[] if FRAME_SYNTHETIC else [FRAME["dataset"]["table"]["path"]],
        code=step_code("frame-items"),
    output:
        benchmark=frame.ITEMS_PATH,
        summary=frame.SUMMARY_PATH,
    params:
        dvc_params=["frame.dataset"],
        values=values_of(["frame.dataset"]),
        generated=f"--generated {frame.GENERATED_PATH}" if FRAME_SYNTHETIC else "",
    log:
        "logs/frame/items.log",
    shell:
        JB + " --log {log} frame-items {params.generated} --out {output.benchmark} "
        "--summary {output.summary}"


rule frame_render:
    input:
        benchmark=frame.ITEMS_PATH,
        images=FRAME_IMAGE_DIR,
        code=step_code("frame-render"),
    output:
        table=frame.renders_path("{manipulation}"),
        images=directory(frame.renders_dir("{manipulation}")),
    params:
        dvc_params=lambda w: [f"frame.manipulations.{w.manipulation}", *FRAME_RENDER_KEYS],
        values=lambda w: values_of([f"frame.manipulations.{w.manipulation}",
                                    *FRAME_RENDER_KEYS]),
    resources:
        gpu=lambda w: FRAME["beauty"]["gpus"] if w.manipulation == "beauty_filter" else 0,
    log:
        "logs/frame/render/{manipulation}.log",
    shell:
        JB + " --log {log} frame-render --manipulation {wildcards.manipulation} "
        "--items {input.benchmark} --out {output.table} --out-dir {output.images}"


rule frame_score:
    input:
        benchmark=frame.ITEMS_PATH,
        renders=frame_renders,
        after_grid=frame_after_grid,
        code=step_code("frame-score"),
        prompt=template(FRAME["prompts"]["standard"]) + template("frame_system"),
    output:
        frame.scores_path("{frame_judge}", "{frame_set}"),
    params:
        dvc_params=lambda w: model_keys(w.frame_judge, "judge", *FRAME_SCORE_KEYS),
        values=lambda w: values_of(model_keys(w.frame_judge, "judge", *FRAME_SCORE_KEYS)),
        renders=lambda w, input: f"--renders {input.renders}" if input.renders else "",
    resources:
        **model_resources("frame_judge"),
    log:
        "logs/frame/score/{frame_judge}/{frame_set}.log",
    shell:
        JB + " --log {log} frame-score --judge {wildcards.frame_judge} --items {input.benchmark} "
        "{params.renders} --out {output}"


rule frame_recipes:
    input:
        scores=expand(frame.scores_path("{{frame_judge}}", "{name}"), name=FRAME_SETS),
        code=step_code("frame-recipes"),
    output:
        frame.recipes_path("{frame_judge}"),
    params:
        dvc_params=[],  # the in-sample best of the judge's own scores: no params
        values=values_of([]),
    log:
        "logs/frame/recipes/{frame_judge}.log",
    shell:
        JB + " --log {log} frame-recipes --judge {wildcards.frame_judge} "
        "--scores {input.scores} --out {output}"


rule frame_combine:
    input:
        benchmark=frame.ITEMS_PATH,
        images=FRAME_IMAGE_DIR,
        recipes=frame.recipes_path(FRAME_ANALYST),
        code=step_code("frame-combine"),
    output:
        table=frame.renders_path(frame.COMBINED),
        images=directory(frame.renders_dir(frame.COMBINED)),
    params:
        dvc_params=["frame.combinations", *FRAME_RENDER_KEYS],
        values=values_of(["frame.combinations", *FRAME_RENDER_KEYS]),
    log:
        "logs/frame/combine.log",
    shell:
        JB + " --log {log} frame-combine --items {input.benchmark} --recipes {input.recipes} "
        "--out {output.table} --out-dir {output.images}"


rule frame_combinations:
    input:
        benchmark=frame.ITEMS_PATH,
        renders=frame.renders_path(frame.COMBINED),
        code=step_code("frame-score"),
        prompt=template(FRAME["prompts"]["standard"]) + template("frame_system"),
    output:
        frame.COMBINATIONS_PATH,
    params:
        dvc_params=model_keys(FRAME_ANALYST, "judge", *FRAME_SCORE_KEYS),
        values=values_of(model_keys(FRAME_ANALYST, "judge", *FRAME_SCORE_KEYS)),
    resources:
        **resources_of(FRAME_ANALYST),
    log:
        "logs/frame/combinations.log",
    shell:
        JB + " --log {log} frame-score --judge " + FRAME_ANALYST + " --items {input.benchmark} "
        "--renders {input.renders} --out {output}"


rule frame_mitigation:
    input:
        benchmark=frame.ITEMS_PATH,
        recipes=frame.recipes_path(FRAME_ANALYST),
        renders=FRAME_ALL_RENDERS,
        code=step_code("frame-mitigation"),
        prompt=[t for kind in FRAME["mitigation"] for t in template(FRAME["prompts"][kind])]
        + template("frame_system"),
    output:
        frame.MITIGATION_PATH,
    params:
        dvc_params=model_keys(FRAME_ANALYST, "judge", "frame.prompts", "frame.mitigation"),
        values=values_of(model_keys(FRAME_ANALYST, "judge", "frame.prompts",
                                    "frame.mitigation")),
    resources:
        **resources_of(FRAME_ANALYST),
    log:
        "logs/frame/mitigation.log",
    shell:
        JB + " --log {log} frame-mitigation --judge " + FRAME_ANALYST + " --items "
        "{input.benchmark} --recipes {input.recipes} --renders {input.renders} --out {output}"


rule frame_pairwise:
    input:
        benchmark=frame.ITEMS_PATH,
        recipes=frame.recipes_path(FRAME_ANALYST),
        renders=frame.renders_path(FRAME["pairwise"]["manipulation"]),
        code=step_code("frame-pairwise"),
        prompt=template(FRAME["pairwise"]["prompt"]) + template("frame_system"),
    output:
        frame.PAIRWISE_PATH,
    params:
        dvc_params=model_keys(FRAME_ANALYST, "judge", "frame.pairwise"),
        values=values_of(model_keys(FRAME_ANALYST, "judge", "frame.pairwise")),
    resources:
        **resources_of(FRAME_ANALYST),
    log:
        "logs/frame/pairwise.log",
    shell:
        JB + " --log {log} frame-pairwise --judge " + FRAME_ANALYST + " --items "
        "{input.benchmark} --recipes {input.recipes} --renders {input.renders} --out {output}"


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
        code=step_code("frame-analysis"),
    output:
        metrics=f"{frame.RESULTS}/metrics.json",
        tables=expand(f"{frame.RESULTS}/{{table}}.parquet", table=frame.TABLES),
        figures=expand(f"{frame.RESULTS}/figures/{{figure}}.png", figure=frame.FIGURES),
    params:
        dvc_params=["frame", *(f"panel.{j}" for j in FRAME_JUDGES)],
        values=values_of(["frame", *(f"panel.{j}" for j in FRAME_JUDGES)]),
    log:
        "logs/frame/analysis.log",
    shell:
        JB + " --log {log} frame-analysis --items {input.benchmark} --scores {input.scores} "
        "--recipes {input.recipes} --mitigation {input.mitigation} "
        "--combinations {input.combinations} --pairwise {input.pairwise} "
        "--renders {input.renders} --out-dir " + frame.RESULTS


if FRAME_PRESETS:

    rule frame_presets_render:
        input:
            benchmark=frame.ITEMS_PATH,
            images=FRAME_IMAGE_DIR,
            recipes=frame_presets.PAPER_RECIPES_INPUT,
            after_grid=FRAME_ALL_RENDERS,  # a preset in the grid: copied from the render cache
            code=step_code("frame-presets-render"),
        output:
            table=frame.renders_path(frame_presets.PRESETS),
            images=directory(frame.renders_dir(frame_presets.PRESETS)),
        params:
            dvc_params=[*FRAME_PRESET_KEYS, *FRAME_RENDER_KEYS],
            values=values_of([*FRAME_PRESET_KEYS, *FRAME_RENDER_KEYS]),
        log:
            "logs/frame/render/presets.log",
        shell:
            JB + " --log {log} frame-presets-render --items {input.benchmark} "
            "--out {output.table} --out-dir {output.images}"

    rule frame_presets:
        input:
            scores=expand(frame.scores_path("{judge}", "{name}"), judge=FRAME_JUDGES,
                          name=["original", frame_presets.PRESETS]),
            recipes=frame_presets.PAPER_RECIPES_INPUT,
            code=step_code("frame-presets"),
        output:
            f"{frame.RESULTS}/{frame_presets.RESULTS_NAME}",
        params:
            dvc_params=[*FRAME_PRESET_KEYS, "frame.models", "frame.analysis.n_permutations",
                        "frame.analysis.seed"],
            values=values_of([*FRAME_PRESET_KEYS, "frame.models",
                              "frame.analysis.n_permutations", "frame.analysis.seed"]),
        log:
            "logs/frame/presets.log",
        shell:
            JB + " --log {log} frame-presets --scores {input.scores} --out {output}"

    TARGETS.append(f"{frame.RESULTS}/{frame_presets.RESULTS_NAME}")


TARGETS.append(f"{frame.RESULTS}/metrics.json")
REPORT_INPUTS["frame"] = frame_report_inputs(PARAMS, frame.RESULTS)
