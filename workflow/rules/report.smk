# The cross-study report: one self-contained HTML page that opens with the judge card
# (card.smk), then a section per active study, each reading the files its study's
# report_inputs hook names (judgebias.study): those in its results folder (Study.results)
# and, by name, any outside it (a data summary).

REPORT_INPUTS = {s.name: s.load("report_inputs")(PARAMS) for s in ACTIVE_STUDIES if s.report}


rule report:
    input:
        results=[f for inputs in REPORT_INPUTS.values() for f in inputs.files()],
        card="results/judges.parquet",
        code=step_code("report", [s.report.partition(":")[0] for s in ACTIVE_STUDIES
                                  if s.report]),
    output:
        "results/report.html",
    params:
        dvc_params=REPORT_KEYS,
        values=values_of(REPORT_KEYS),
        results=" ".join(f"{s.name}={s.results}" for s in ACTIVE_STUDIES if s.report),
        data=" ".join(f"{study}.{name}={path}" for study, inputs in REPORT_INPUTS.items()
                      for name, path in inputs.data.items()),
    log:
        "logs/report.log",
    shell:
        JB + " --log {log} report --out {output} --card {input.card} --results {params.results}"
        " --data {params.data}"


TARGETS.append("results/report.html")
