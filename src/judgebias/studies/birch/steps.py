"""BIRCH's steps, one per rule of workflow/rules/birch.smk (judgebias.workflow.step_dispatch): each
reads the files its rule names, calls the study's functions and writes the files its rule names.

A step imports what only it uses inside its body, so its rule's code dependencies
(derived from those imports) stay its own: the model jobs are .jobs, every measure
.measures. Every step also depends on .params (the typed view `BirchParams`), and so on
what its checks import (the importers, which read a reference-labels file). A step that
runs a model job takes the run context (`RunContext`: the journal, the panel models and
their limits) beside the typed view, never the params mapping."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebias.models.context import RunContext
from judgebias.studies.birch.params import BirchParams
from judgebias.studies.birch.tables import (
    FIGURES,
    LABEL_ANSWERS,
    PAIRS,
    REPEATS,
    SUPPLEMENT_TABLES,
    TABLES,
    TEXTS,
    VERDICTS,
)

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


def _read_all(paths: Sequence[Path], schema: Any) -> pd.DataFrame:
    import pandas as pd

    from judgebias.io.artifacts import read_table

    return pd.concat([read_table(p, schema) for p in paths], ignore_index=True)


def data(params: BirchParams, *, birch_dataset: str, pairs: Path, images: Path,
         summary: Path) -> None:
    """The pair table of dataset `birch_dataset` (``birch.datasets``) and a summary of it
    (preferences, ties, domains, overrides)."""
    from dataclasses import asdict

    from judgebias.io.artifacts import write_json, write_table
    from judgebias.studies.birch.data.pairs import load_pairs

    images.mkdir(parents=True, exist_ok=True)
    dataset = params.datasets[birch_dataset]
    table = load_pairs(birch_dataset, asdict(dataset), images, params.seed)
    write_table(table, pairs, PAIRS)
    counts = {"pairs": len(table),
              "preference": table["preference"].value_counts().to_dict(),
              "domains": table["domain"].value_counts().to_dict(),
              "overridden": int(table["overridden"].sum()),
              "dataset": birch_dataset, "source": dataset.format}
    write_json(counts, summary)
    log.info("%s: %d pairs, preferences %s", birch_dataset, len(table), counts["preference"])


def label(params: BirchParams, run: RunContext, *, pairs: Path, labels: Path) -> None:
    """Fig. 18 in both orders by ``birch.labeller``."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.birch.jobs import label as label_pairs

    write_table(label_pairs(run, params.labeller, read_table(pairs, PAIRS)),
                labels, LABEL_ANSWERS)


def prepare(params: BirchParams, run: RunContext, *, birch_judge: str, birch_step: str,
            pairs: Path, texts: Path) -> None:
    """One preparatory text per pair (reference, caption or anchor) by `birch_judge`."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.birch.jobs import prepare as prepare_texts

    written = prepare_texts(run, birch_judge, birch_step, read_table(pairs, PAIRS),
                            caption_prompt=params.caption_prompt)
    write_table(written, texts, TEXTS)
    log.info("%s by %s: %s", birch_step, birch_judge,
             written["status"].value_counts().to_dict())


def equalise(params: BirchParams, run: RunContext, *, pairs: Path, texts: Path,
             equalised: Path, summary: Path) -> None:
    """Appendix C.5: the lengthener's texts and the equalised pairs."""
    from judgebias.io.artifacts import read_table, write_json, write_table
    from judgebias.studies.birch.jobs import equalised_pairs, lengthen

    table = read_table(pairs, PAIRS)
    lengthened = lengthen(run, params.lengthener, table)
    kept, counts = equalised_pairs(table, lengthened, params.equalise_tolerance)
    write_table(lengthened, texts, TEXTS)
    write_table(kept, equalised, PAIRS)
    write_json(counts, summary)
    log.info("length equalisation: %s", counts)


def judge(params: BirchParams, run: RunContext, *, birch_judge: str, birch_variant: str,
          pairs: Path, verdicts: Path, texts: Path | None = None) -> None:
    """Every pair judged by `birch_judge` in `birch_variant`, with the judge's preparatory
    `texts` where the variant needs them (jobs.NEEDS)."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.birch.jobs import judge as judge_pairs

    prepared = read_table(texts, TEXTS) if texts else None
    judged = judge_pairs(run, birch_judge, birch_variant, read_table(pairs, PAIRS),
                         prepared, swap_order=params.swap_order).drop(columns="repeat")
    write_table(judged, verdicts, VERDICTS)
    log.info("%s %s: %s", birch_judge, birch_variant,
             judged["status"].value_counts().to_dict())


def repeat(params: BirchParams, run: RunContext, *, birch_judge: str, pairs: Path,
           repeats: Path) -> None:
    """The Base judgement of every pair asked again, repeats 1..``birch.repeats`` - 1
    (jobs.judge with `repeats`, all in one run), for the judge card's repetition
    stability."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.birch.jobs import judge as judge_pairs

    asked = range(1, params.repeats)
    if not asked:
        raise ValueError(f"{repeats}: birch.repeats is {params.repeats}; the "
                         "repeats job runs only with 2 or more")
    judged = judge_pairs(run, birch_judge, "base", read_table(pairs, PAIRS),
                         repeats=asked, swap_order=params.swap_order)
    write_table(judged[list(REPEATS.names)], repeats, REPEATS)
    log.info("%s base, repeats 1-%d: %s", birch_judge, params.repeats - 1,
             judged["status"].value_counts().to_dict())


def analysis(params: BirchParams, *, pairs: Path, labels: Path,
             verdicts: Sequence[Path], metrics: Path, tables: Sequence[Path],
             figures: Sequence[Path], curves: Sequence[Path], equalised: Path | None = None,
             reference_labels: Path | None = None) -> None:
    """IRS, IB, LB, down-sampling, Tables 1-4, 7, 8 and their figures of one dataset:
    `tables` and `figures` are the rule's outputs, one per name of tables.TABLES and
    tables.FIGURES (by file stem), `curves` one per curve of tables.CURVES and judge
    (tables.curve_path); `equalised` the equalised pairs (with that variant),
    `reference_labels` the dataset's human informativeness labels (where given)."""
    from judgebias.io.artifacts import by_stem, read_table, write_frame, write_json
    from judgebias.studies.birch.data.importers import read_reference_labels
    from judgebias.studies.birch.figures import draw_all, write_curves
    from judgebias.studies.birch.measures.results import dataset_results

    table_paths = by_stem(tables, TABLES, "birch tables")
    figure_paths = by_stem(figures, FIGURES, "birch figures")
    curve_paths = by_stem(curves, params.models, "birch curves")
    result, numbers = dataset_results(
        params, read_table(pairs, PAIRS).set_index("pair_id", drop=False),
        read_table(labels, LABEL_ANSWERS), _read_all(verdicts, VERDICTS),
        read_table(equalised, PAIRS) if equalised else None,
        read_reference_labels(reference_labels) if reference_labels else None)
    for name in TABLES:
        write_frame(result[name].reset_index(drop=True), table_paths[name])
    draw_all(result, numbers["cds_ratio"], set(params.simulated), figure_paths)
    write_curves(result, curve_paths)
    write_json(numbers, metrics)


def journal_usage(journal_dir: str | Path, calls: pd.DataFrame) -> pd.DataFrame:
    """`calls` (rows of an answer table: ``backend``, ``model_id``, ``request_key``) with
    ``prompt_tokens`` and ``completion_tokens`` from the journal (NaN: not journaled)."""
    import numpy as np

    from judgebias.models.journal import Journal, journal_path

    out = calls.assign(prompt_tokens=np.nan, completion_tokens=np.nan)
    for (backend, model_id), rows in calls.groupby(["backend", "model_id"]):
        path = journal_path(journal_dir, str(backend), str(model_id))
        if not path.exists():
            continue
        with Journal(path) as journal:
            found = journal.lookup(rows["request_key"])
        for name in ("prompt_tokens", "completion_tokens"):
            out.loc[rows.index, name] = [
                found[k].usage.get(name, np.nan) if k in found else np.nan
                for k in rows["request_key"]]
    return out


def supplement(params: BirchParams, run: RunContext, *, pairs: Path,
               verdicts: Sequence[Path], texts: Sequence[Path], tables: Sequence[Path],
               figure: Path) -> None:
    """Fig. 11's table and `figure`, Table 5 and Table 6 of one dataset: `tables` are the
    rule's outputs, one per name of tables.SUPPLEMENT_TABLES (by file stem); `texts`
    every preparatory text of the dataset, whose tokens (Table 6) are read from the
    journal (`run`'s) by their request keys and priced at each panel model's
    ``pricing``."""
    import pandas as pd

    from judgebias.io.artifacts import by_stem, read_table, write_frame
    from judgebias.studies.birch.figures import fig11
    from judgebias.studies.birch.measures.anchors import anchor_quality
    from judgebias.studies.birch.measures.cost import cost_table
    from judgebias.studies.birch.measures.formulas import (
        RELIANCE_COLUMNS,
        correct_of,
        domain_reliance,
    )

    table_paths = by_stem(tables, SUPPLEMENT_TABLES, "birch supplement tables")
    table = read_table(pairs, PAIRS).set_index("pair_id", drop=False)
    judged = _read_all(verdicts, VERDICTS)
    written = _read_all(texts, TEXTS) if texts else pd.DataFrame(columns=TEXTS.names)
    domains = []
    if "no_image" in params.variants:
        for judge_key in params.models:
            mine = judged[judged["judge"] == judge_key]
            domains.append(domain_reliance(
                judge_key, correct_of(mine, "base", table["preference"]),
                correct_of(mine, "no_image", table["preference"]), table["domain"]))
    anchors = {model: rows.set_index("pair_id")["text"]
               for model, rows in written[written["step"] == "anchor"].groupby("model")}
    journal = run.journal_dir
    result = {"fig11": (pd.concat(domains, ignore_index=True) if domains
                        else pd.DataFrame(columns=RELIANCE_COLUMNS)),
              "table5": anchor_quality(table, anchors),
              "table6": cost_table(journal_usage(journal, judged),
                                   journal_usage(journal, written),
                                   pricing=lambda model: run.model(model).pricing,
                                   lengthener=params.lengthener)}
    for name in SUPPLEMENT_TABLES:
        write_frame(result[name].reset_index(drop=True), table_paths[name])
    fig11(result["fig11"], set(params.simulated), figure)
    log.info("Table 6: %s", result["table6"][["judge", "method", "calls_per_pair"]]
             .to_dict("records"))
