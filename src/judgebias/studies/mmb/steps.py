"""MMB's steps, one per rule of workflow/rules/mmb.smk (judgebias.workflow.step_dispatch): each
reads the files its rule names, calls the study's functions and writes the files its rule names.

A step imports what only it uses inside its body, so its rule's code dependencies
(derived from those imports) stay its own. The data are judgebias.studies.mmb.data, the
model jobs .jobs and .embed, the formulas .measures, the estimators .estimator."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from judgebias.models.context import RunContext
from judgebias.studies.mmb.params import MmbParams
from judgebias.studies.mmb.tables import (
    EMBEDDINGS,
    FIGURES,
    JUDGEMENTS,
    PAIRS,
    SUPPORT,
    TABLES,
)

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


def data(params: MmbParams, *, pairs: Path, support: Path, images: Path,
         summary: Path) -> None:
    """The pair and support tables (and their images) from ``mmb.dataset``. The data must
    carry the design (data_errors) before anything is written: this is the first job, so
    a shortfall stops the run before any judge call is paid."""
    from dataclasses import asdict

    from judgebias.config import ConfigError
    from judgebias.io.artifacts import write_json, write_table
    from judgebias.studies.mmb.data.checks import data_errors
    from judgebias.studies.mmb.data.pairs import build_dataset

    built, support_table, described = build_dataset(asdict(params.dataset), images,
                                                    seed=params.dataset.seed)
    errors = data_errors(params, built, support_table, described)
    if errors:
        raise ConfigError("\n".join(errors))
    write_table(built, pairs, PAIRS)
    write_table(support_table, support, SUPPORT)
    write_json(described, summary)
    log.info("%d pairs (%s), %d support images", len(built),
             built["split"].value_counts().to_dict(), len(support_table))


def pool(params: MmbParams, run: RunContext, *, builtin: Path, pool: Path,
         extra: Path | None = None) -> None:
    """The instruction pool: the built-in one, the `extra` file's, and, with `grow`, the
    writer model's rephrasings (seed 002 §5; a model job: `run` calls the writer). Ids
    must be unique; texts are kept verbatim."""
    import pandas as pd
    import yaml

    from judgebias.config import ConfigError
    from judgebias.io.artifacts import write_text
    from judgebias.studies.mmb.data.instructions import base_pool
    from judgebias.studies.mmb.jobs import grow_pool

    grow = params.instructions.grow
    instructions = base_pool(builtin, extra)
    if grow:
        grown = grow_pool(run, grow.writer, grow.n, grow.seed, instructions)
        log.info("writer %s added %d of %d asked instructions", grow.writer, len(grown),
                 grow.n)
        instructions = pd.concat([instructions, grown[["id", "kind", "text"]]],
                                 ignore_index=True)
    duplicated = instructions["id"][instructions["id"].duplicated()].tolist()
    if duplicated:
        raise ConfigError(f"mmb.instructions: duplicate instruction ids {duplicated}")
    # The pool must hold the largest ensemble. Without a writer, `validate` counts it
    # exactly (params._design_errors: the built-in and the extra file's instructions);
    # the writer may add fewer than grow.n, so a grown pool is counted here (the rule
    # then declares mmb.design.n_prompts), before any judge call is paid.
    if grow and (largest := max(params.design.n_prompts)) > len(instructions):
        raise ConfigError(f"mmb.design.n_prompts: {largest} prompts per ensemble, but the "
                          f"pool has {len(instructions)} instructions")
    write_text(yaml.safe_dump(instructions.to_dict("records"), sort_keys=False, width=1000),
               pool)


def judge(params: MmbParams, run: RunContext, *, judge: str, pairs: Path, pool: Path,
          judgements: Path) -> None:
    """Every (pair, instruction) judged once by `judge` (journaled: seed 002 §5), or n
    times where it is read from samples (``mmb.probability``)."""
    from judgebias.io.artifacts import write_table
    from judgebias.studies.mmb.jobs import judge_pairs

    rows = judge_pairs(run, judge, str(pairs), str(pool), prompt=params.prompt,
                       order=params.order, order_seed=params.order_seed,
                       how=params.probability.of(judge))
    write_table(rows, judgements, JUDGEMENTS)


def embed(params: MmbParams, *, pairs: Path, support: Path,
          embeddings: Path) -> None:
    """CLIP embeddings of every image a pair shows and of D_sup, cached per image hash."""
    from dataclasses import asdict

    import numpy as np
    import pandas as pd

    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.mmb.data.checks import support_images
    from judgebias.studies.mmb.embed import EmbeddingSpec, embed_images

    pair_table = read_table(pairs, PAIRS)
    support_table = support_images(params.clustering, read_table(support, SUPPORT))
    paths = list(dict.fromkeys([*pair_table["image_a"], *pair_table["image_b"],
                                *support_table["image_path"]]))
    spec = EmbeddingSpec.from_params(asdict(params.embedding))
    hashes, vectors, stats = embed_images(paths, spec, Path(params.embedding.cache_dir))
    log.info("embedded %d images with %s: %s", len(paths), spec.description(), stats)
    write_table(pd.DataFrame({"image_path": paths, "image_sha256": hashes,
                              "embedding": list(vectors.astype(np.float32))}),
                embeddings, EMBEDDINGS)


def cluster(params: MmbParams, *, pairs: Path, support: Path, embeddings: Path,
            clusters: Path) -> None:
    """Seed 002 §4-5: the image clusters of every (K, clustering seed) and each pair
    image's cosine to every centroid (measures.cluster.pair_cosines)."""
    import numpy as np

    from judgebias.io.artifacts import read_table, write_frame
    from judgebias.studies.mmb.data.checks import support_images
    from judgebias.studies.mmb.measures.cluster import pair_cosines

    table = read_table(embeddings, EMBEDDINGS)
    vectors = dict(zip(table["image_path"], np.stack(table["embedding"].to_numpy()),
                       strict=True))
    write_frame(pair_cosines(params.clustering, read_table(pairs, PAIRS),
                             support_images(params.clustering, read_table(support, SUPPORT)),
                             vectors),
                clusters)


def factorial(params: MmbParams, *, pairs: Path, pool: Path, judgements: Path,
              clusters: Path, configurations: Path, nopref: Path) -> None:
    """Every configuration of the design for one judge (seed 002 §5) and the MJBench
    no-preference protocol (Table 4). Pairs without a usable answer for every instruction
    are left out of both (counted by the analysis), never imputed."""
    import pandas as pd

    from judgebias.io.artifacts import read_table, write_frame
    from judgebias.studies.mmb.measures.factorial import run_factorial, run_nopref
    from judgebias.studies.mmb.measures.factorial_inputs import (
        factorial_inputs,
        validation_shortfalls,
    )

    pair_table, pool_table, cluster_table = _shared_frames(pairs, pool, clusters)
    inputs = factorial_inputs(params, pair_table, pool_table,
                              read_table(judgements, JUDGEMENTS), cluster_table)
    short, largest = validation_shortfalls(inputs), max(inputs.design.n_val)
    if short and inputs.failed_answers:
        # Accepted failed calls (max_failures) left too few usable pairs: the judge is left
        # out of the analysis, which says so, instead of stopping every other judge's.
        log.warning("%s: %d failed calls left too few usable validation pairs (%s) for the "
                    "%d that mmb.design.n_val asks; the judge is left out", inputs.judge,
                    inputs.failed_answers, ", ".join(f"{n}: {k}" for n, k in short), largest)
        write_frame(pd.DataFrame(), configurations)
        write_frame(pd.DataFrame(), nopref)
        return
    if short:
        name, usable = short[0]
        raise ValueError(f"mmb.design.n_val: {largest} validation pairs asked, but "
                         f"{inputs.judge} answered only {usable} {name} validation pairs "
                         "usably")
    if max(inputs.design.n_prompts) > len(inputs.pool):
        raise ValueError(f"mmb.design.n_prompts: {max(inputs.design.n_prompts)} prompts "
                         f"asked, but the pool has {len(inputs.pool)}")
    runs = run_factorial(inputs.hps, inputs.design)
    no_preference = run_nopref(inputs.mjb, inputs.design) if inputs.mjb else pd.DataFrame()
    write_frame(runs, configurations)
    write_frame(no_preference, nopref)
    log.info("%s: %d configurations, %d no-preference rows; %d pairs used, %d left out",
             inputs.judge, len(runs), len(no_preference), inputs.pairs_used,
             inputs.pairs_dropped)


def analyse(params: MmbParams, *, pairs: Path, pool: Path, clusters: Path,
            judgements: Sequence[Path], configurations: Sequence[Path],
            nopref: Sequence[Path], metrics: Path, tables: Sequence[Path],
            figures: Sequence[Path], curves: Sequence[Path]) -> None:
    """Every table and figure of the MMB section, for every judge (seed 002 §6;
    measures.paper_tables). `judgements`, `configurations` and `nopref` are in the order
    of ``mmb.models``; `tables` and `figures` one per name of tables.TABLES and FIGURES,
    `curves` one per curve of tables.CURVES and judge (tables.curve_path)."""
    import pandas as pd

    from judgebias.io.artifacts import by_stem, read_table, write_frame, write_json
    from judgebias.studies.mmb.figures import draw_all, write_curves
    from judgebias.studies.mmb.measures.paper_tables import section_tables

    def by_judge(paths: Sequence[Path], read: Callable[[Path], pd.DataFrame]
                 ) -> dict[str, pd.DataFrame]:
        return {j: read(p) for j, p in zip(params.models, paths, strict=True)}

    frames, summary = section_tables(
        params, *_shared_frames(pairs, pool, clusters),
        judged=by_judge(judgements, lambda p: read_table(p, JUDGEMENTS)),
        configurations=by_judge(configurations, pd.read_parquet),
        nopref=by_judge(nopref, pd.read_parquet))
    for name, path in by_stem(tables, TABLES, "mmb tables").items():
        write_frame(frames[name], path)
    draw_all(params, frames, by_stem(figures, FIGURES, "mmb figures"))
    write_curves(params, frames, _curve_paths(params, curves))
    write_json(summary, metrics)


def _shared_frames(pairs: Path, pool: Path, clusters: Path
                   ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The pair table, the instruction pool and the clusters table every judge shares."""
    import pandas as pd

    from judgebias.io.artifacts import read_table
    from judgebias.studies.mmb.tables import read_pool

    return read_table(pairs, PAIRS), read_pool(str(pool)), pd.read_parquet(clusters)


def _curve_paths(params: MmbParams, paths: Sequence[Path]) -> dict[tuple[str, str], Path]:
    """The rule's curve outputs by (curve, judge), which must be every one of them."""
    from judgebias.studies.mmb.tables import CURVES, curve_path

    named = {Path(curve_path(name, judge)): (name, judge) for name in CURVES
             for judge in params.models}
    if set(named) != set(map(Path, paths)):
        raise ValueError(f"mmb curve outputs {sorted(map(str, paths))} are not "
                         f"{sorted(map(str, named))}")
    return {key: path for path, key in named.items()}


