# The judge card (judgebias.card): every active study's card rows, FDR-adjusted together,
# as results/judges.parquet, and its headline cells as DVC metrics: results/card/, one
# file per headline measure, one number per judge (judgebias.card.build.write_headline).
# It reads only the files each study's card module names, so a new study result reruns
# the card and the report, nothing else.
from judgebias.workflow.dvcviews import dvc_metric

CARD_HEADLINE = "results/card"

CARD_INPUTS = {s.name: s.load("card_inputs")(PARAMS) for s in ACTIVE_STUDIES if s.card}
# a study without card rows (the leaderboard) is read by no card job: its keys rerun nothing
CARD_KEYS = [k for k in REPORT_KEYS
             if k.split(".")[0] not in {s.name for s in ACTIVE_STUDIES if not s.card}]


rule card:
    input:
        files=[path for named in CARD_INPUTS.values() for path in named.values()],
        code=step_code("card-build", [s.card.partition(":")[0] for s in ACTIVE_STUDIES
                                      if s.card]),
    output:
        table="results/judges.parquet",
        metrics=dvc_metric(directory(CARD_HEADLINE)),
    params:
        dvc_params=CARD_KEYS,
        values=values_of(CARD_KEYS),
        files=" ".join(f"{study}.{name}={path}" for study, named in CARD_INPUTS.items()
                       for name, path in named.items()),
    log:
        "logs/card.log",
    shell:
        JB + " --log {log} plumbing card-build --table {output.table}"
        " --metrics {output.metrics} --in {params.files}"


TARGETS.append(CARD_HEADLINE)
