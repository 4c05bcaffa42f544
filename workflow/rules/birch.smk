# BIRCH (seed 003): the pair table; the labeller's informativeness labels (both orders);
# each judge's preparatory texts (reference, caption, anchor); the lengthener's equalised
# pairs; one verdicts job per (judge, variant); then every measure as pure computation, so
# changing the labeller reruns labelling and the analysis, never a judge call.
from judgebias.studies.birch import tables as birch
from judgebias.studies.birch.jobs import JUDGE_PROMPTS, NEEDS
from judgebias.studies.birch.report import report_inputs as birch_report_inputs

BIRCH = PARAMS["birch"]
BIRCH_JUDGES = BIRCH["models"]
BIRCH_VARIANTS = BIRCH["variants"]
BIRCH_LABELLER = BIRCH["labeller"]
BIRCH_LENGTHENER = BIRCH["lengthener"]
BIRCH_STEPS = sorted({NEEDS[v] for v in BIRCH_VARIANTS if v in NEEDS})
BIRCH_STEP_PROMPTS = {"reference": "birch_reference", "anchor": "birch_anchor",
                      "caption": BIRCH["caption_prompt"]}
BIRCH_EQUALISE = "equalised" in BIRCH_VARIANTS
BIRCH_LABELS = birch.labels_path(BIRCH_LABELLER)
BIRCH_ANALYSIS_KEYS = ["birch", *(f"panel.{j}.backend" for j in BIRCH_JUDGES)]
BIRCH_DATA_KEYS = ["birch.dataset", "birch.overrides", "seed"]

wildcard_constraints:
    birch_judge="|".join(BIRCH_JUDGES),
    birch_variant="|".join(BIRCH_VARIANTS),
    birch_step="|".join(BIRCH_STEPS) if BIRCH_STEPS else "none",


def birch_judge_inputs(wildcards):
    """A variant's pairs (the equalised ones for `equalised`) and the text it needs."""
    variant = wildcards.birch_variant
    inputs = {"pairs": birch.EQUALISED_PATH if variant == "equalised" else birch.PAIRS_PATH}
    if variant in NEEDS:
        inputs["texts"] = birch.texts_path(wildcards.birch_judge, NEEDS[variant])
    return inputs


def birch_texts_flag(wildcards, input):
    return f"--texts {input.texts}" if "texts" in input.keys() else ""


rule birch_data:
    input:
        code=step_code("birch-data"),
    output:
        pairs=birch.PAIRS_PATH,
        images=directory(birch.IMAGES),
        summary=f"{birch.DATA}/summary.json",
    params:
        dvc_params=BIRCH_DATA_KEYS,
        values=values_of(BIRCH_DATA_KEYS),
    log:
        "logs/birch/data.log",
    shell:
        JB + " --log {log} birch-data --pairs {output.pairs} --images {output.images} "
        "--summary {output.summary}"


rule birch_label:
    input:
        pairs=birch.PAIRS_PATH,
        code=step_code("birch-label"),
        prompt=template("birch_informativeness"),
    output:
        BIRCH_LABELS,
    params:
        dvc_params=model_keys(BIRCH_LABELLER, "labeller"),
        values=values_of(model_keys(BIRCH_LABELLER, "labeller")),
    resources:
        **resources_of(BIRCH_LABELLER),
    log:
        f"logs/birch/label/{BIRCH_LABELLER}.log",
    shell:
        JB + " --log {log} birch-label --labeller " + BIRCH_LABELLER
        + " --pairs {input.pairs} --out {output}"


rule birch_prepare:
    input:
        pairs=birch.PAIRS_PATH,
        code=step_code("birch-prepare"),
        prompt=lambda w: template(BIRCH_STEP_PROMPTS[w.birch_step]),
    output:
        birch.texts_path("{birch_judge}", "{birch_step}"),
    params:
        dvc_params=lambda w: model_keys(w.birch_judge, w.birch_step, "birch.caption_prompt"),
        values=lambda w: values_of(model_keys(w.birch_judge, w.birch_step,
                                              "birch.caption_prompt")),
    resources:
        **model_resources("birch_judge"),
    log:
        "logs/birch/prepare/{birch_judge}/{birch_step}.log",
    shell:
        JB + " --log {log} birch-prepare --model {wildcards.birch_judge} "
        "--step {wildcards.birch_step} --pairs {input.pairs} --out {output}"


if BIRCH_EQUALISE:

    rule birch_equalise:
        input:
            pairs=birch.PAIRS_PATH,
            code=step_code("birch-equalise"),
            prompt=template("birch_lengthen"),
        output:
            texts=birch.texts_path(BIRCH_LENGTHENER, "lengthen"),
            equalised=birch.EQUALISED_PATH,
            summary=f"{birch.DATA}/equalised.json",
        params:
            dvc_params=model_keys(BIRCH_LENGTHENER, "lengthener",
                                  "birch.equalise_tolerance", "birch.lengthener"),
            values=values_of(model_keys(BIRCH_LENGTHENER, "lengthener",
                                        "birch.equalise_tolerance", "birch.lengthener")),
        resources:
            **resources_of(BIRCH_LENGTHENER),
        log:
            "logs/birch/equalise.log",
        shell:
            JB + " --log {log} birch-equalise --pairs {input.pairs} --texts {output.texts} "
            "--equalised {output.equalised} --summary {output.summary}"


rule birch_judge:
    input:
        unpack(birch_judge_inputs),
        code=step_code("birch-judge"),
        prompt=lambda w: template(JUDGE_PROMPTS[w.birch_variant]),
    output:
        birch.verdicts_path("{birch_judge}", "{birch_variant}"),
    params:
        dvc_params=lambda w: model_keys(w.birch_judge, "judge", "birch.swap_order"),
        values=lambda w: values_of(model_keys(w.birch_judge, "judge", "birch.swap_order")),
        texts=birch_texts_flag,
    resources:
        **model_resources("birch_judge"),
    log:
        "logs/birch/judge/{birch_judge}/{birch_variant}.log",
    shell:
        JB + " --log {log} birch-judge --judge {wildcards.birch_judge} "
        "--variant {wildcards.birch_variant} --pairs {input.pairs} {params.texts} "
        "--out {output}"


rule birch_analysis:
    input:
        pairs=birch.PAIRS_PATH,
        equalised=[birch.EQUALISED_PATH] if BIRCH_EQUALISE else [],
        labels=BIRCH_LABELS,
        verdicts=[birch.verdicts_path(j, v) for j in BIRCH_JUDGES for v in BIRCH_VARIANTS],
        reference_labels=[BIRCH["reference_labels"]] if BIRCH["reference_labels"] else [],
        code=step_code("birch-analysis"),
    output:
        metrics=f"{birch.RESULTS}/metrics.json",
        tables=expand(f"{birch.RESULTS}/{{table}}.parquet", table=birch.TABLES),
        figures=expand(f"{birch.RESULTS}/figures/{{figure}}.png", figure=birch.FIGURES),
    params:
        dvc_params=BIRCH_ANALYSIS_KEYS,
        values=values_of(BIRCH_ANALYSIS_KEYS),
        equalised=(f"--equalised {birch.EQUALISED_PATH}" if BIRCH_EQUALISE else ""),
    log:
        "logs/birch/analysis.log",
    shell:
        JB + " --log {log} birch-analysis --pairs {input.pairs} {params.equalised} "
        "--labels {input.labels} --verdicts {input.verdicts} --out-dir " + birch.RESULTS


TARGETS.append(f"{birch.RESULTS}/metrics.json")
REPORT_INPUTS["birch"] = birch_report_inputs(PARAMS, birch.RESULTS)
