# The leaderboard's scored_images tasks (src/judgebias/studies/leaderboard/scored.py):
# the instructions and every system's image (FRAME's renderer and the system's edit, or
# the user's files), every judge's 0.0-5.0 scores under the FRAME prompts its methods ask
# (seed 004 Figs. 4-7), then the leaderboard. Included by leaderboard.smk, whose
# helpers (one_of, board_task, board_files) and wildcard constraints it uses. Its files
# lie apart from an images task's (data/leaderboard/{task}/instructions, drawn,
# frame_scores), and every rule takes a scored_images task only.
from judgebias.studies.leaderboard import scored as board_scored

BOARD_SCORED_TASKS = tasks_of(PARAMS, "scored_images")
BOARD_SCORERS = method_judges(PARAMS, "scored_images")


def board_judge_methods(wildcards):
    """The methods the judge of the job judges with, by name."""
    return {name: m for name, m in BOARD["methods"].items()
            if m.get("judge") == wildcards.board_judge}


def board_score_keys(wildcards):
    """What a judge's scores read: its answers' params, which methods judge the task
    (every method's kind and judge, the baseline, the task's kind) and, of the judge's
    own methods, everything (their prompt and the manipulation it names)."""
    methods = BOARD["methods"]
    return [*model_keys(wildcards.board_judge, "judge", *board_task(wildcards, "kind")),
            "leaderboard.baseline",
            *(f"leaderboard.methods.{name}.kind" for name in methods),
            *(f"leaderboard.methods.{name}.judge" for name, m in methods.items()
              if "judge" in m),
            *(f"leaderboard.methods.{name}" for name in board_judge_methods(wildcards))]


def board_score_prompts(wildcards):
    """The FRAME templates the judge is asked with: its methods' prompts and FRAME's
    system prompt."""
    kinds = sorted({"standard" if m["kind"] == "single" else m["mitigation"]
                    for m in board_judge_methods(wildcards).values()
                    if m["kind"] in ("single", "frame_mitigated")})
    return [t for kind in kinds for t in template(board_scored.PROMPTS.of(kind))] \
        + template("frame_system")


rule leaderboard_renders:
    wildcard_constraints:
        task=one_of(BOARD_SCORED_TASKS),
    input:
        board_files,
        code=step_code("leaderboard.renders"),
    output:
        instructions=board_scored.instructions_path("{task}"),
        drawn=board_scored.drawn_path("{task}"),
        images=directory(board_scored.drawn_dir("{task}")),
    params:
        **step_params(lambda w: board_task(w, "prompts", "systems")),
    log:
        "logs/leaderboard/{task}/renders.log",
    shell:
        step("leaderboard.renders")


rule leaderboard_score:
    wildcard_constraints:
        task=one_of(BOARD_SCORED_TASKS),
    input:
        instructions=board_scored.instructions_path("{task}"),
        drawn=board_scored.drawn_path("{task}"),
        code=step_code("leaderboard.score"),
        prompt=board_score_prompts,
    output:
        scores=board_scored.frame_scores_path("{task}", "{board_judge}"),
    params:
        **step_params(board_score_keys),
    resources:
        **model_resources("board_judge"),
    log:
        "logs/leaderboard/{task}/score/{board_judge}.log",
    shell:
        step("leaderboard.score")


rule leaderboard_rank_scores:
    wildcard_constraints:
        task=one_of(BOARD_SCORED_TASKS),
    input:
        instructions=board_scored.instructions_path("{task}"),
        drawn=board_scored.drawn_path("{task}"),
        scores=lambda w: [board_scored.frame_scores_path(w.task, j) for j in BOARD_SCORERS],
        code=step_code("leaderboard.rank_scores"),
    output:
        tables=[board.result_path("{task}", t) for t in board.result_tables("scored_images")],
        metrics=board.metrics_path("{task}"),
    params:
        **step_params(lambda w: [
            "leaderboard.methods", "leaderboard.baseline", "leaderboard.inference",
            *board_task(w, "systems", "kind")]),
    log:
        "logs/leaderboard/{task}/rank_scores.log",
    shell:
        step("leaderboard.rank_scores")
