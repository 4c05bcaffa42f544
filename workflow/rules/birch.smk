# BIRCH (seed 003), per dataset of birch.datasets: the pair table; the labeller's
# informativeness labels (both orders); each judge's preparatory texts (reference, caption,
# anchor); the lengthener's equalised pairs; one verdicts job per (judge, variant); then
# every measure as pure computation, so changing the labeller reruns labelling and the
# analysis, never a judge call. Every path carries the dataset's name: adding a dataset
# reruns only its own jobs. Each key of the block a rule declares comes from the view
# (BirchParams): block_keys names them, so a renamed or removed key fails here.
from judgebias.paramsblock import block_keys
from judgebias.studies.birch import tables as birch
from judgebias.studies.birch.data.pairs import dataset_files as birch_dataset_files
from judgebias.studies.birch.jobs import JUDGE_PROMPTS, NEEDS
from judgebias.studies.birch.params import BirchParams

BIRCH = PARAMS["birch"]
BIRCH_JUDGES = BIRCH["models"]
BIRCH_VARIANTS = BIRCH["variants"]
BIRCH_LABELLER = BIRCH["labeller"]
BIRCH_LENGTHENER = BIRCH["lengthener"]
BIRCH_STEPS = sorted({NEEDS[v] for v in BIRCH_VARIANTS if v in NEEDS})
BIRCH_STEP_PROMPTS = {"reference": "birch_reference", "anchor": "birch_anchor",
                      "caption": BIRCH["caption_prompt"]}
BIRCH_EQUALISE = "equalised" in BIRCH_VARIANTS
BIRCH_DATASETS = list(BIRCH["datasets"])
BIRCH_REPEATS = BIRCH["repeats"]
# The analysis reads every birch key but the other datasets' blocks and the repeats
# (only the judge card reads those).
BIRCH_ANALYSIS_KEYS = [*block_keys(BirchParams, exclude=("datasets", "repeats")),
                       *(f"panel.{j}.backend" for j in BIRCH_JUDGES)]


def birch_data_keys(wildcards):
    return [f"birch.datasets.{wildcards.birch_dataset}", "seed"]


def birch_analysis_keys(wildcards):
    return [*BIRCH_ANALYSIS_KEYS, f"birch.datasets.{wildcards.birch_dataset}"]


def birch_reference_labels(wildcards):
    path = BIRCH["datasets"][wildcards.birch_dataset]["reference_labels"]
    return [path] if path else []


wildcard_constraints:
    birch_dataset="|".join(BIRCH_DATASETS),
    birch_judge="|".join(BIRCH_JUDGES),
    birch_variant="|".join(BIRCH_VARIANTS),
    birch_step="|".join(BIRCH_STEPS) if BIRCH_STEPS else "none",


def birch_judge_inputs(wildcards):
    """A variant's pairs (the equalised ones for `equalised`) and the text it needs."""
    variant = wildcards.birch_variant
    dataset = wildcards.birch_dataset
    inputs = {"pairs": (birch.equalised_path(dataset) if variant == "equalised"
                        else birch.pairs_path(dataset))}
    if variant in NEEDS:
        inputs["texts"] = birch.texts_path(dataset, wildcards.birch_judge, NEEDS[variant])
    return inputs


rule birch_data:
    input:
        # unnamed: the imported files, images included, are dependencies, read through
        # their params keys
        lambda w: birch_dataset_files(BIRCH["datasets"][w.birch_dataset]),
        code=step_code("birch.data"),
    output:
        pairs=birch.pairs_path("{birch_dataset}"),
        images=directory(birch.images_dir("{birch_dataset}")),
        summary=birch.summary_path("{birch_dataset}"),
    params:
        **step_params(birch_data_keys),
    log:
        "logs/birch/{birch_dataset}/data.log",
    shell:
        step("birch.data")


rule birch_label:
    input:
        pairs=birch.pairs_path("{birch_dataset}"),
        code=step_code("birch.label"),
        prompt=template("birch_informativeness"),
    output:
        labels=birch.labels_path("{birch_dataset}", BIRCH_LABELLER),
    params:
        **step_params(model_keys(BIRCH_LABELLER, "labeller",
                                 *block_keys(BirchParams, only=("labeller",)))),
    resources:
        **resources_of(BIRCH_LABELLER),
    log:
        "logs/birch/{birch_dataset}/label/" + BIRCH_LABELLER + ".log",
    shell:
        step("birch.label")


rule birch_prepare:
    input:
        pairs=birch.pairs_path("{birch_dataset}"),
        code=step_code("birch.prepare"),
        prompt=lambda w: template(BIRCH_STEP_PROMPTS[w.birch_step]),
    output:
        texts=birch.texts_path("{birch_dataset}", "{birch_judge}", "{birch_step}"),
    params:
        **step_params(lambda w: model_keys(
            w.birch_judge, w.birch_step, *block_keys(BirchParams, only=("caption_prompt",)))),
    resources:
        **model_resources("birch_judge"),
    log:
        "logs/birch/{birch_dataset}/prepare/{birch_judge}/{birch_step}.log",
    shell:
        step("birch.prepare")


if BIRCH_EQUALISE:

    rule birch_equalise:
        input:
            pairs=birch.pairs_path("{birch_dataset}"),
            code=step_code("birch.equalise"),
            prompt=template("birch_lengthen"),
        output:
            texts=birch.texts_path("{birch_dataset}", BIRCH_LENGTHENER, "lengthen"),
            equalised=birch.equalised_path("{birch_dataset}"),
            summary=birch.equalised_summary_path("{birch_dataset}"),
        params:
            **step_params(model_keys(BIRCH_LENGTHENER, "lengthener", *block_keys(
                BirchParams, only=("equalise_tolerance", "lengthener")))),
        resources:
            **resources_of(BIRCH_LENGTHENER),
        log:
            "logs/birch/{birch_dataset}/equalise.log",
        shell:
            step("birch.equalise")


rule birch_judge:
    input:
        unpack(birch_judge_inputs),
        code=step_code("birch.judge"),
        prompt=lambda w: template(JUDGE_PROMPTS[w.birch_variant]),
    output:
        verdicts=birch.verdicts_path("{birch_dataset}", "{birch_judge}", "{birch_variant}"),
    params:
        **step_params(lambda w: model_keys(w.birch_judge, "judge",
                                           *block_keys(BirchParams, only=("swap_order",)))),
    resources:
        **model_resources("birch_judge"),
    log:
        "logs/birch/{birch_dataset}/judge/{birch_judge}/{birch_variant}.log",
    shell:
        step("birch.judge")


if BIRCH_REPEATS > 1:

    # The Base judgement asked again (birch.repeats), for the judge card's repetition
    # stability only: no measure of the study reads it.
    rule birch_repeat:
        input:
            pairs=birch.pairs_path("{birch_dataset}"),
            code=step_code("birch.repeat"),
            prompt=template(JUDGE_PROMPTS["base"]),
        output:
            repeats=birch.repeats_path("{birch_dataset}", "{birch_judge}"),
        params:
            **step_params(lambda w: model_keys(w.birch_judge, "judge", *block_keys(
                BirchParams, only=("swap_order", "repeats")))),
        resources:
            **model_resources("birch_judge"),
        log:
            "logs/birch/{birch_dataset}/repeat/{birch_judge}.log",
        shell:
            step("birch.repeat")


rule birch_analysis:
    input:
        pairs=birch.pairs_path("{birch_dataset}"),
        equalised=[birch.equalised_path("{birch_dataset}")] if BIRCH_EQUALISE else [],
        labels=birch.labels_path("{birch_dataset}", BIRCH_LABELLER),
        verdicts=[birch.verdicts_path("{birch_dataset}", j, v)
                  for j in BIRCH_JUDGES for v in BIRCH_VARIANTS],
        reference_labels=birch_reference_labels,
        code=step_code("birch.analysis"),
    output:
        metrics=birch.metrics_path("{birch_dataset}"),
        tables=[birch.table_path("{birch_dataset}", t) for t in birch.TABLES],
        figures=[birch.figure_path("{birch_dataset}", f) for f in birch.FIGURES],
        curves=[birch.CURVES["cds_share"].output(
            birch.curve_path("{birch_dataset}", "cds_share", judge), judge)
            for judge in BIRCH_JUDGES],
    params:
        **step_params(birch_analysis_keys),
    log:
        "logs/birch/{birch_dataset}/analysis.log",
    shell:
        step("birch.analysis")


# Fig. 11, Table 5 and Table 6 (the step birch.supplement): the verdicts and
# every preparatory text of the dataset; their tokens are read from the journal by the
# request keys those tables hold, so the tables are the inputs.
BIRCH_PRICED = sorted({*BIRCH_JUDGES, *([BIRCH_LENGTHENER] if BIRCH_EQUALISE else [])})
# The prices are a run setting everywhere else; this table prices the tokens, so it names
# them (judgebias.config.answer_keys keeps a run setting a rule names itself).
BIRCH_SUPPLEMENT_KEYS = [
    *block_keys(BirchParams, only=("models", "variants", "lengthener")),
    *(f"panel.{m}.{k}" for m in BIRCH_PRICED for k in ("backend", "model_id", "pricing")
      if k in PARAMS["panel"][m])]


def birch_supplement_texts(wildcards):
    texts = [birch.texts_path(wildcards.birch_dataset, j, step)
             for j in BIRCH_JUDGES for step in BIRCH_STEPS]
    if BIRCH_EQUALISE:
        texts.append(birch.texts_path(wildcards.birch_dataset, BIRCH_LENGTHENER, "lengthen"))
    return texts


rule birch_supplement:
    input:
        pairs=birch.pairs_path("{birch_dataset}"),
        verdicts=[birch.verdicts_path("{birch_dataset}", j, v)
                  for j in BIRCH_JUDGES for v in BIRCH_VARIANTS],
        texts=birch_supplement_texts,
        code=step_code("birch.supplement"),
    output:
        tables=[birch.table_path("{birch_dataset}", t) for t in birch.SUPPLEMENT_TABLES],
        figure=birch.figure_path("{birch_dataset}", birch.SUPPLEMENT_FIGURE),
    params:
        **step_params(BIRCH_SUPPLEMENT_KEYS),
    log:
        "logs/birch/{birch_dataset}/supplement.log",
    shell:
        step("birch.supplement")


TARGETS.extend(birch.metrics_path(d) for d in BIRCH_DATASETS)
