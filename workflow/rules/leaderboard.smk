# The leaderboard (src/judgebias/studies/leaderboard): per task, the images, the systems'
# captions (a model system's from its captioning job), the human labels, every judge's
# scores, then the leaderboard of every method. Each rule names its files once; the step
# of the same name receives them (judgebias.workflow.step_dispatch).
from judgebias.studies.leaderboard import tables as board
from judgebias.studies.leaderboard.params import method_judges, model_systems

BOARD = PARAMS["leaderboard"]
BOARD_TASKS = list(BOARD["tasks"])
BOARD_JUDGES = method_judges(PARAMS)
BOARD_POMMS = any(m["kind"] == "pomms" for m in BOARD["methods"].values())

wildcard_constraints:
    task="|".join(BOARD_TASKS),
    board_judge="|".join(BOARD_JUDGES) if BOARD_JUDGES else "none",
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
            "leaderboard.inference", *board_task(w, "systems"),
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
        **step_params([
            "leaderboard.methods", "leaderboard.baseline",
            *(f"panel.{m}.backend" for m in PARAMS["panel"])]),  # simulated ones are flagged
    log:
        "logs/leaderboard/{task}/figure.log",
    shell:
        step("leaderboard.figure")


TARGETS.extend(board.metrics_path(task) for task in BOARD_TASKS)
