# The template study (src/judgebias/studies/_template): synthetic answers, every judge
# scores them, one length slope per judge. Each rule names its files once; the step of
# the same name receives them (judgebias.workflow.step_dispatch).
from judgebias.paramsblock import block_keys
from judgebias.study import study_models
from judgebias.studies._template import tables as _template
from judgebias.studies._template.params import TemplateParams

_TEMPLATE_JUDGES = study_models(PARAMS, "_template")


rule _template_answers:
    input:
        code=step_code("_template.answers"),
    output:
        answers=_template.ANSWERS_PATH,
    params:
        **step_params(block_keys(TemplateParams, only=("n_items", "max_words", "seed"))),
    log:
        "logs/_template/answers.log",
    shell:
        step("_template.answers")


rule _template_judge:
    input:
        answers=_template.ANSWERS_PATH,
        code=step_code("_template.judge"),
        prompt=template("_template_score"),
    output:
        scores=_template.scores_path("{judge}"),
    params:
        **step_params(lambda w: model_keys(w.judge, "judge")),
    resources:
        **model_resources("judge"),
    log:
        "logs/_template/judge/{judge}.log",
    shell:
        step("_template.judge")


rule _template_measure:
    input:
        answers=_template.ANSWERS_PATH,
        scores=[_template.scores_path(j) for j in _TEMPLATE_JUDGES],
        code=step_code("_template.measure"),
    output:
        slopes=_template.SLOPES,
        metrics=_template.METRICS,
    params:
        **step_params(block_keys(TemplateParams, only=("ci",))),
    log:
        "logs/_template/measure.log",
    shell:
        step("_template.measure")


TARGETS.append(_template.METRICS)
