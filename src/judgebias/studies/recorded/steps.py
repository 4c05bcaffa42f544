"""The recorded study's step, one per rule of workflow/rules/recorded.smk
(judgebias.workflow.step_dispatch): read one recorded table and its side files, check
them, and write every measure they allow."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judgebias.studies.recorded.params import RecordedParams


def measure(params: RecordedParams, *, table: str, recorded: Path, human: Sequence[Path],
            informative: Sequence[Path], measures: Path, metrics: Path,
            figure: Path) -> None:
    """The measures of recorded table `table` (judgebias.studies.recorded.measures), with
    its human judgements and informativeness labels where the table names them (`human`,
    `informative`: one file or none)."""
    import pandas as pd

    from judgebias.io.artifacts import write_frame, write_json
    from judgebias.recorded.tables import read_recorded
    from judgebias.studies.recorded.data import (
        HUMAN_PAIRS,
        INFORMATIVE,
        human_ratings,
        pair_id,
        pair_labels,
    )
    from judgebias.studies.recorded.figures import draw_headline
    from judgebias.studies.recorded.measures import pairwise_measures, score_measures

    spec = params.tables[table]
    if spec.kind == "scores":
        assert spec.scale is not None  # params.validate requires it
        frame = read_recorded(recorded, "scores", spec.scale)
        ratings = [human_ratings(path, set(zip(frame["item"], frame["output_id"],
                                               strict=True))) for path in human]
        tables, numbers = score_measures(frame, spec.scale, spec.families,
                                         human=ratings[0] if ratings else None,
                                         ci=params.ci, resamples=params.resamples,
                                         seed=params.seed)
    else:
        frame = read_recorded(recorded, "pairwise")
        pairs = {pair_id(i, a, b) for i, a, b in zip(frame["item"], frame["first"],
                                                     frame["second"], strict=True)}
        preferred = [pair_labels(p, HUMAN_PAIRS, pairs, allow_empty=False) for p in human]
        labels = [pair_labels(p, INFORMATIVE, pairs, allow_empty=True) for p in informative]
        tables, numbers = pairwise_measures(frame, randomised=spec.randomised,
                                            preferred=preferred[0] if preferred else None,
                                            more_informative=labels[0] if labels else None,
                                            ci=params.ci, resamples=params.resamples,
                                            seed=params.seed)
    combined = pd.concat([t.assign(table=name) for name, t in tables.items()],
                         ignore_index=True)
    write_frame(combined, measures)
    draw_headline(combined, spec.kind, f"{table} (recorded)", figure)
    write_json({"kind": spec.kind, "source": "recorded", **numbers}, metrics)
