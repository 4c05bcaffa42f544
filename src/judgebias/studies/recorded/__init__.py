"""The recorded study: the audits' measures on judgements you already have (issue 44).

A researcher with scores or verdicts from an earlier run, from lmms-eval's, VLMEvalKit's
or inspect_ai's logs (`judgebias recorded convert`), or from a paper's released files,
asks the audit's questions of them without paying again: the tables are the study's
inputs, in the two schemas of judgebias.recorded.schema, and no model is called.

* A **scores** table (item, output, generator, judge, score) gets philautia's measures
  (seed 000): each judge's self- and family-preference in score points
  (judgebias.studies.philautia.selfpref), the paper's philautia score on the models that
  are both generators and judges, and, with human ratings, each judge's agreement
  (Kendall tau-b, judgebias.stats.agreement).
* A **pairwise** table (item, the two outputs in the order shown, verdict) gets the
  position measures of the judge card (judgebias.stats.position: PC, PF, first-slot rate,
  after Shi et al.) and, with human preferences, accuracy and, with informativeness
  labels, BIRCH's informativeness bias IB (seed 003 §3.4).

Each table is one DVC-tracked input of its own jobs (a changed row reruns that table's
analysis and nothing else), validated before anything is computed.
"""

from judgebias.study import Study

STUDY = Study(
    name="recorded",
    title="Recorded judgements: the audit on judgements you already have",
    package=__name__,
    rules="workflow/rules/recorded.smk",
    view="RecordedParams",
    lacks=("sim", "needs", "power"),
    sim_traits=False,
    judges_in_data=True,
)
