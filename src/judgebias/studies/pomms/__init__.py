"""Pomms (seed 000 §4.2, §6.3): an ensemble of the philautia panel's evaluators, chosen by
forward selection with an Elastic Net meta-learner against human judgements, that cancels
model-specific preference while keeping agreement with humans."""

from judgebias.study import Study

STUDY = Study(
    name="pomms",
    title="Pomms: an ensemble of evaluators against self-preference",
    package=__name__,
    rules="workflow/rules/pomms.smk",
    view="PommsParams",
    lacks=("power", "sim"),  # no sim tasks: its judges answer philautia's prompts
    has=("cli",),
    requires=("philautia",),
    saved=("estimator:Pomms",),  # results/pomms/ensemble.json, read by judgebias.load
)
