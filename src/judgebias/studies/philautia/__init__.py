"""Philautia-Eval (seed 000 §4.1, Algorithm 1): does a caption judge favour its own
captions, or its family's? Every panel model captions every image and scores every
caption; Phi is standardised per evaluator then per generator; the diagonal of
Phi-tilde is each model's philautia score."""

from judgebias.study import Study

STUDY = Study(
    name="philautia",
    title="Philautia: self- and family-preference of caption judges",
    package=__name__,
    rules="workflow/rules/philautia.smk",
    view="PhilautiaParams",
    sim_traits=False,  # its tasks read the core traits (judgebias.models.sim), no block
)
