"""Pomms (seed 000 §4.2, §6.3): an ensemble of the philautia panel's evaluators, chosen by
forward selection with an Elastic Net meta-learner against human judgements, that cancels
model-specific preference while keeping agreement with humans."""

from judgebias.study import Study

STUDY = Study(
    name="pomms",
    title="Pomms: an ensemble of evaluators against self-preference",
    package=__name__,
    rules="workflow/rules/pomms.smk",
    cli=f"{__name__}.cli:register",
    validate=f"{__name__}.params:validate",
    needs=f"{__name__}.params:needs",
    plan=f"{__name__}.plan:planned_calls",
    report=f"{__name__}.report:report_section",
    card=f"{__name__}.card:rows",
    card_inputs=f"{__name__}.card:inputs",
    requires=("philautia",),
)
