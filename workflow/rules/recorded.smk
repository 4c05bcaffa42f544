# The recorded study (src/judgebias/studies/recorded): judgements recorded elsewhere, one
# job per table; no model is called. The table and its side files are the job's inputs, so
# an edited row reruns that table's measures and nothing else.
from judgebias.paramsblock import block_keys
from judgebias.studies.recorded import tables as recorded
from judgebias.studies.recorded.params import RecordedParams

RECORDED = PARAMS["recorded"]["tables"]


rule recorded_measure:
    input:
        recorded=lambda w: RECORDED[w.table]["path"],
        human=lambda w: [RECORDED[w.table]["human"]] if "human" in RECORDED[w.table] else [],
        informative=lambda w: [RECORDED[w.table]["informative"]]
        if "informative" in RECORDED[w.table] else [],
        code=step_code("recorded.measure"),
    output:
        measures=recorded.measures_path("{table}"),
        metrics=recorded.metrics_path("{table}"),
        figure=recorded.figure_path("{table}"),
    params:
        **step_params(lambda w: [f"recorded.tables.{w.table}",
                                 *block_keys(RecordedParams, only=("ci", "resamples", "seed"))]),
    log:
        "logs/recorded/{table}.log",
    shell:
        step("recorded.measure")


TARGETS.extend(recorded.metrics_path(name) for name in RECORDED)
