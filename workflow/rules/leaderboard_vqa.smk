# The leaderboard's vqa tasks (src/judgebias/studies/leaderboard/vqa.py; seed 003): the
# questions and every system's answer (BIRCH's synthetic scenes and simulated answers, or
# the user's files), each birch method's judge's anchors (Fig. 20), every (judge, BIRCH
# variant) verdicts job on every pair of answers in both orders (base: a single method's;
# birch: against the anchors, Fig. 21), then the leaderboard. Included by leaderboard.smk,
# whose helpers (one_of, board_task) and wildcard constraints (task, board_judge) it uses.
# Its files lie apart from the other kinds' (data/leaderboard/{task}/questions, answers,
# scenes, anchors, answer_verdicts), and every rule takes a vqa task only. A (judge,
# variant) is a wildcard, as in birch.smk, so a job reads no method: adding a birch method
# adds its anchor and verdicts jobs and reruns no other.
from judgebias.studies.birch.jobs import JUDGE_PROMPTS
from judgebias.studies.leaderboard import vqa as board_vqa

BOARD_VQA_TASKS = tasks_of(PARAMS, "vqa")
BOARD_VQA_JUDGEMENTS = board_vqa.judgements(PARAMS)  # (judge, variant) the methods ask


def board_vqa_judge_inputs(wildcards):
    """The anchors a BIRCH verdict is judged against (its own judge's)."""
    if wildcards.board_variant != "birch":
        return {}
    return {"anchors": board_vqa.anchors_path(wildcards.task, wildcards.board_judge)}


rule leaderboard_vqa_answers:
    wildcard_constraints:
        task=one_of(BOARD_VQA_TASKS),
    input:
        # unnamed: the user's files (questions, answers), read through their params keys
        lambda w: board_vqa.answers_files(BOARD["tasks"][w.task]),
        code=step_code("leaderboard.vqa_answers"),
    output:
        questions=board_vqa.questions_path("{task}"),
        answers=board_vqa.answers_path("{task}"),
        scenes=directory(board_vqa.scenes_dir("{task}")),
    params:
        **step_params(lambda w: board_task(w, "questions", "systems")),
    log:
        "logs/leaderboard/{task}/vqa_answers.log",
    shell:
        step("leaderboard.vqa_answers")


rule leaderboard_vqa_anchor:
    wildcard_constraints:
        task=one_of(BOARD_VQA_TASKS),
    input:
        questions=board_vqa.questions_path("{task}"),
        answers=board_vqa.answers_path("{task}"),
        code=step_code("leaderboard.vqa_anchor"),
        prompt=template("birch_anchor"),
    output:
        anchors=board_vqa.anchors_path("{task}", "{board_judge}"),
    params:
        **step_params(lambda w: model_keys(w.board_judge, "anchor")),
    resources:
        **model_resources("board_judge"),
    log:
        "logs/leaderboard/{task}/vqa_anchor/{board_judge}.log",
    shell:
        step("leaderboard.vqa_anchor")


rule leaderboard_vqa_judge:
    wildcard_constraints:
        task=one_of(BOARD_VQA_TASKS),
        board_variant=one_of(sorted(set(board_vqa.VARIANTS.values()))),
    input:
        unpack(board_vqa_judge_inputs),
        questions=board_vqa.questions_path("{task}"),
        answers=board_vqa.answers_path("{task}"),
        code=step_code("leaderboard.vqa_judge"),
        prompt=lambda w: template(JUDGE_PROMPTS[w.board_variant]),
    output:
        verdicts=board_vqa.answer_verdicts_path("{task}", "{board_judge}", "{board_variant}"),
    params:
        **step_params(lambda w: model_keys(w.board_judge, "judge")),
    resources:
        **model_resources("board_judge"),
    log:
        "logs/leaderboard/{task}/vqa_judge/{board_judge}/{board_variant}.log",
    shell:
        step("leaderboard.vqa_judge")


rule leaderboard_vqa_rank:
    wildcard_constraints:
        task=one_of(BOARD_VQA_TASKS),
    input:
        questions=board_vqa.questions_path("{task}"),
        answers=board_vqa.answers_path("{task}"),
        verdicts=lambda w: [board_vqa.answer_verdicts_path(w.task, judge, variant)
                            for judge, variant in BOARD_VQA_JUDGEMENTS],
        code=step_code("leaderboard.vqa_rank"),
    output:
        tables=[board.result_path("{task}", t) for t in board.result_tables("vqa")],
        metrics=board.metrics_path("{task}"),
    params:
        **step_params(lambda w: [
            "leaderboard.methods", "leaderboard.baseline", "leaderboard.inference",
            *board_task(w, "kind")]),
    log:
        "logs/leaderboard/{task}/vqa_rank.log",
    shell:
        step("leaderboard.vqa_rank")
