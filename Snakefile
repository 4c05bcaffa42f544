# judgebias: one DAG, two front doors (DESIGN.md principle 1).
# `snakemake --cores N` runs it; `dvc.yaml` is derived from it by `judgebias export-dvc`.
# All logic lives in the judgebias package; rules only wire artifacts to CLI steps.

include: "workflow/rules/common.smk"
include: "workflow/rules/philautia.smk"
include: "workflow/rules/pomms.smk"


rule all:
    input:
        Paths.report,
        expand("results/philautia/{setting}/metrics.json", setting=SETTINGS),
    default_target: True
