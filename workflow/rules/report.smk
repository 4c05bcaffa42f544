# The cross-study report: one self-contained HTML page that opens with the judge card
# (card.smk), then a section per active study, each reading the files its study's rules
# declared in REPORT_INPUTS.


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
        results=" ".join(f"{s.name}=results/{s.name}" for s in ACTIVE_STUDIES if s.report),
        data=" ".join(f"{study}.{name}={path}" for study, inputs in REPORT_INPUTS.items()
                      for name, path in inputs.data.items()),
    log:
        "logs/report.log",
    shell:
        JB + " --log {log} report --out {output} --card {input.card} --results {params.results}"
        " --data {params.data}"


TARGETS.append("results/report.html")
