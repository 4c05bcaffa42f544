# The leaderboard (src/judgebias/studies/leaderboard). A captions task: the images, the
# systems' captions (a model system's from its captioning job), the human labels, every
# judge's scores, then the leaderboard of every method. An images task: the prompts and
# every system's image, their embeddings (for the MMB fit's clusters), every judge's
# pairwise comparisons, then the leaderboard and the triage. Each rule names its files
# once; the step of the same name receives them (judgebias.workflow.step_dispatch).
from judgebias.paramsblock import block_keys
from judgebias.studies.leaderboard import tables as board
from judgebias.studies.leaderboard.data import labels_files, outputs_files
from judgebias.studies.leaderboard.params import method_judges, model_systems, tasks_of
from judgebias.studies.mmb import tables as mmb_tables
from judgebias.studies.mmb.params import MmbParams, judge_prompt

BOARD = PARAMS["leaderboard"]
BOARD_TASKS = list(BOARD["tasks"])
BOARD_CAPTION_TASKS = tasks_of(PARAMS, "captions")
BOARD_IMAGE_TASKS = tasks_of(PARAMS, "images")
BOARD_JUDGES = method_judges(PARAMS)
BOARD_COMPARERS = method_judges(PARAMS, "images")
BOARD_POMMS = any(m["kind"] == "pomms" for m in BOARD["methods"].values())
BOARD_MMB = list(dict.fromkeys(m["judge"] for m in BOARD["methods"].values()
                               if m["kind"] == "mmb"))


def one_of(names):
    """A wildcard pattern matching exactly `names` (none: nothing)."""
    return "|".join(names) if names else "(?!)"


wildcard_constraints:
    task=one_of(BOARD_TASKS),
    board_judge=one_of(sorted({m for kind in ("captions", "images", "vqa", "scored_images")
                               for m in method_judges(PARAMS, kind)})),
    board_model="|".join(PARAMS["panel"]),


def board_task(wildcards, *keys):
    """Dotted keys of the task's block."""
    return [f"leaderboard.tasks.{wildcards.task}.{key}" for key in keys]


def board_generated(wildcards):
    """The captions of the task's model systems, by panel model."""
    return [board.generated_path(wildcards.task, model)
            for model in model_systems(BOARD["tasks"][wildcards.task]).values()]


def board_outputs_keys(wildcards):
    """What the outputs step reads: the systems, the seed of the synthetic captioners and
    the openers of the families they write like."""
    systems = BOARD["tasks"][wildcards.task]["systems"].values()
    styles = sorted({s["synthetic"]["style_of"] for s in systems
                     if (s.get("synthetic") or {}).get("style_of")})
    return [*board_task(wildcards, "systems", "images.synthetic.seed"),
            *(f"families.{family}.sim.opener" for family in styles)]


def board_families_keys(wildcards):
    """The families of the judges and of the task's model systems (self-exclusion)."""
    systems = BOARD["tasks"][wildcards.task]["systems"].values()
    models = sorted({*BOARD_JUDGES, *(s["model"] for s in systems if "model" in s)})
    return [*(f"panel.{m}.family" for m in models),
            *(f"panel.{m}.also_in" for m in models if "also_in" in PARAMS["panel"][m])]


def board_rank_inputs(wildcards):
    """The human labels where the task has them, and the fitted Pomms ensemble where a
    method applies it."""
    extra = {}
    if "human_labels" in BOARD["tasks"][wildcards.task]:
        extra["labels"] = board.labels_path(wildcards.task)
    if BOARD_POMMS:
        from judgebias.studies.pomms import tables as pomms_tables

        extra["ensemble"] = pomms_tables.ENSEMBLE
    return extra


rule leaderboard_images:
    input:
        code=step_code("leaderboard.images"),
    output:
        table=board.images_table("{task}"),
        images=directory(board.images_dir("{task}")),
    params:
        **step_params(lambda w: board_task(w, "images")),
    log:
        "logs/leaderboard/{task}/images.log",
    shell:
        step("leaderboard.images")


rule leaderboard_caption:
    input:
        images=board.images_table("{task}"),
        code=step_code("leaderboard.caption"),
        prompt=lambda w: template(BOARD["tasks"][w.task]["caption_prompt"]),
    output:
        captions=board.generated_path("{task}", "{board_model}"),
    params:
        **step_params(lambda w: model_keys(w.board_model, "generator",
                                           *board_task(w, "caption_prompt"))),
    resources:
        **model_resources("board_model"),
    log:
        "logs/leaderboard/{task}/caption/{board_model}.log",
    shell:
        step("leaderboard.caption")


rule leaderboard_outputs:
    input:
        # unnamed: the user's files, read through their params keys
        lambda w: outputs_files(BOARD["tasks"][w.task]),
        images=board.images_table("{task}"),
        generated=board_generated,
        code=step_code("leaderboard.outputs"),
    output:
        outputs=board.outputs_path("{task}"),
    params:
        **step_params(board_outputs_keys),
    log:
        "logs/leaderboard/{task}/outputs.log",
    shell:
        step("leaderboard.outputs")


rule leaderboard_labels:
    input:
        lambda w: labels_files(BOARD["tasks"][w.task]),
        outputs=board.outputs_path("{task}"),
        code=step_code("leaderboard.labels"),
    output:
        labels=board.labels_path("{task}"),
    params:
        **step_params(lambda w: board_task(w, "human_labels")),
    log:
        "logs/leaderboard/{task}/labels.log",
    shell:
        step("leaderboard.labels")


rule leaderboard_judge:
    input:
        images=board.images_table("{task}"),
        outputs=board.outputs_path("{task}"),
        code=step_code("leaderboard.judge"),
        prompt=lambda w: template(BOARD["tasks"][w.task]["prompt"]),
    output:
        scores=board.scores_path("{task}", "{board_judge}"),
    params:
        **step_params(lambda w: model_keys(w.board_judge, "judge",
                                           *board_task(w, "prompt", "references"))),
    resources:
        **model_resources("board_judge"),
    log:
        "logs/leaderboard/{task}/judge/{board_judge}.log",
    shell:
        step("leaderboard.judge")


rule leaderboard_rank:
    wildcard_constraints:
        task=one_of(BOARD_CAPTION_TASKS),
    input:
        unpack(board_rank_inputs),
        outputs=board.outputs_path("{task}"),
        scores=lambda w: [board.scores_path(w.task, j) for j in BOARD_JUDGES],
        code=step_code("leaderboard.rank"),
    output:
        tables=[board.result_path("{task}", t) for t in board.RESULT_TABLES],
        metrics=board.metrics_path("{task}"),
    params:
        **step_params(lambda w: [
            "leaderboard.methods", "leaderboard.baseline", "leaderboard.score",
            "leaderboard.inference", *board_task(w, "systems", "kind"),
            *(board_task(w, "human_labels.scale")
              if "human_labels" in BOARD["tasks"][w.task] else []),
            *board_families_keys(w)]),
    log:
        "logs/leaderboard/{task}/rank.log",
    shell:
        step("leaderboard.rank")


rule leaderboard_figure:
    input:
        systems=board.result_path("{task}", "systems"),
        code=step_code("leaderboard.figure"),
    output:
        figure=board.figure_path("{task}"),
    params:
        **step_params(lambda w: [
            "leaderboard.methods", "leaderboard.baseline", *board_task(w, "kind"),
            *(f"panel.{m}.backend" for m in PARAMS["panel"])]),  # simulated ones are flagged
    log:
        "logs/leaderboard/{task}/figure.log",
    shell:
        step("leaderboard.figure")


def board_files(wildcards):
    """The files an images task imports (its prompts, its systems' image tables): read
    through their params keys, dependencies here."""
    task = BOARD["tasks"][wildcards.task]
    return [*([task["prompts"]["path"]] if "path" in task.get("prompts", {}) else []),
            *(s["outputs"] for s in task["systems"].values() if "outputs" in s)]


def board_pictures_keys(wildcards):
    """What the pictures step reads: the prompts and the systems."""
    return board_task(wildcards, "prompts", "systems")


def board_compare_keys(wildcards):
    """What a comparison reads: the judge's answers' params, the task's order, MMB's
    prompt and layout, how it reads the judge's probabilities, and which instructions the methods
    of the judge ask (a single method's own; an mmb method's: the report cell's
    ensemble, drawn as the factorial draws it). It looks through every method for the
    judge's, so it declares them all: an edit of another judge's method reruns the job,
    whose every answer then comes from the journal."""
    methods = [m for m in BOARD["methods"].values() if m.get("judge") == wildcards.board_judge]
    keys = [*model_keys(wildcards.board_judge, "judge",
                        *board_task(wildcards, "order", "order_seed", "systems")),
            *block_keys(MmbParams, only=("prompt", "layout", "probability")),
            "leaderboard.methods"]
    if any(m["kind"] == "mmb" for m in methods):
        keys += block_keys(MmbParams, only=("report.n_prompts",))
    return keys


def board_rank_pairs_inputs(wildcards):
    """The image embeddings and the saved MMB fits where an mmb method applies them."""
    if not BOARD_MMB:
        return {}
    return {"embeddings": board.embeddings_path(wildcards.task),
            "debiasers": [mmb_tables.saved_path(judge) for judge in BOARD_MMB]}


rule leaderboard_pictures:
    input:
        board_files,
        code=step_code("leaderboard.pictures"),
    output:
        prompts=board.prompts_path("{task}"),
        pictures=board.pictures_path("{task}"),
        images=directory(board.pictures_dir("{task}")),
    params:
        **step_params(board_pictures_keys),
    log:
        "logs/leaderboard/{task}/pictures.log",
    shell:
        step("leaderboard.pictures")


rule leaderboard_embed:
    input:
        pictures=board.pictures_path("{task}"),
        code=step_code("leaderboard.embed"),
    output:
        embeddings=board.embeddings_path("{task}"),
    params:
        **step_params(lambda w: block_keys(MmbParams, only=("embedding",))),
    log:
        "logs/leaderboard/{task}/embed.log",
    shell:
        step("leaderboard.embed")


rule leaderboard_compare:
    input:
        prompts=board.prompts_path("{task}"),
        pictures=board.pictures_path("{task}"),
        pool=mmb_tables.INSTRUCTIONS_PATH,
        code=step_code("leaderboard.compare"),
        prompt=(template(judge_prompt(PARAMS["mmb"]["prompt"], PARAMS["mmb"]["layout"]))
                if BOARD_IMAGE_TASKS else []),
    output:
        verdicts=board.verdicts_path("{task}", "{board_judge}"),
    params:
        **step_params(board_compare_keys),
    resources:
        **model_resources("board_judge"),
    log:
        "logs/leaderboard/{task}/compare/{board_judge}.log",
    shell:
        step("leaderboard.compare")


rule leaderboard_rank_pairs:
    wildcard_constraints:
        task=one_of(BOARD_IMAGE_TASKS),
    input:
        unpack(board_rank_pairs_inputs),
        prompts=board.prompts_path("{task}"),
        pictures=board.pictures_path("{task}"),
        pool=mmb_tables.INSTRUCTIONS_PATH,
        verdicts=lambda w: [board.verdicts_path(w.task, j) for j in BOARD_COMPARERS],
        code=step_code("leaderboard.rank_pairs"),
    output:
        tables=[board.result_path("{task}", t) for t in board.result_tables("images")],
        metrics=board.metrics_path("{task}"),
    params:
        **step_params(lambda w: [
            "leaderboard.methods", "leaderboard.baseline", "leaderboard.inference",
            *board_task(w, "systems", "kind"),
            *block_keys(MmbParams, only=("dataset.synthetic.gamma",))]),
    log:
        "logs/leaderboard/{task}/rank_pairs.log",
    shell:
        step("leaderboard.rank_pairs")


TARGETS.extend(board.metrics_path(task) for task in BOARD_TASKS)
include: "leaderboard_scored.smk"
include: "leaderboard_vqa.smk"
