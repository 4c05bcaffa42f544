# judgebias: one DAG, two front doors (docs/design.md principle 1).
# `snakemake --cores N` runs it; `dvc.yaml` is derived from it by `judgebias export-dvc`.
# All logic lives in the judgebias package; rules only name the files of study steps.
# Each study that params.yaml runs adds its rules (judgebias.study); the judge card and
# the report come last.

include: "workflow/rules/common.smk"

for study in ACTIVE_STUDIES:
    include: study.rules

include: "workflow/rules/card.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        TARGETS,
    default_target: True
