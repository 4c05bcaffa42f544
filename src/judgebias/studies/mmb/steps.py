"""MMB's steps, one per rule of workflow/rules/mmb.smk (judgebias.workflow.step_dispatch): each
reads the files its rule names, calls the study's functions and writes the files its rule names.

A step imports what only it uses inside its body, so its rule's code dependencies
(derived from those imports) stay its own. The data are judgebias.studies.mmb.data, the
model jobs .jobs and .embed, the formulas .measures, the estimators .estimator."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    import numpy as np
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
    from judgebias.studies.mmb.params import judge_prompt

    rows = judge_pairs(run, judge, str(pairs), str(pool),
                       prompt=judge_prompt(params.prompt, params.layout),
                       order=params.order, order_seed=params.order_seed,
                       how=params.probability.of(judge))
    write_table(rows, judgements, JUDGEMENTS)


def layout_check(params: MmbParams, run: RunContext, *, judge: str, pairs: Path, pool: Path,
                 judgements: Path, answers: Path, metrics: Path) -> None:
    """The layout's own effect for `judge` (issue 45; measures/layout.py): the layout
    check's items (``mmb.layout_check``: jobs.layout_sample) asked in the layout besides
    ``mmb.layout`` (a model job, journaled like any; written to `answers`), their answers
    in ``mmb.layout`` read from the judge job's `judgements` (asked there already, so
    never asked twice), and the paired differences between the layouts with their 95 %
    intervals over pairs (`metrics`)."""
    from judgebias.io.artifacts import read_columns, write_json, write_table
    from judgebias.studies.mmb.jobs import ask_pairs, judge_items, layout_sample
    from judgebias.studies.mmb.measures.layout import (
        CONFIDENCE,
        KEYS,
        layout_effect,
        paired_items,
    )
    from judgebias.studies.mmb.params import LAYOUTS, judge_prompt, other_layout

    check, asked = params.layout_check, params.layout
    other = other_layout(asked)
    items = layout_sample(judge_items(str(pairs), str(pool), params.order, params.order_seed),
                          check.n_pairs, check.n_instructions, check.seed)
    how = params.probability.of(judge)
    rows = ask_pairs(run, judge, items, prompt=judge_prompt(params.prompt, other), how=how)
    judged = read_columns(judgements, JUDGEMENTS, [*KEYS, "sample", "p_a", "status", "label"])
    mine = judged.merge(items[KEYS], on=KEYS)
    if len(mine) != len(rows):
        raise ValueError(f"{judgements}: {len(mine)} rows for the layout check's "
                         f"{len(items)} items, {len(rows)} expected: the judgements are not "
                         "the judge job's for this pair table and pool")
    paired = paired_items({asked: mine, other: rows})
    effect = layout_effect(paired)
    write_table(rows, answers, JUDGEMENTS)
    write_json({
        "judge": judge, "simulated": bool((rows["backend"] == "sim").all()),
        "layout": asked, "other": other,
        "templates": {layout: judge_prompt(params.prompt, layout) for layout in LAYOUTS},
        "difference": "shared_first - paper", "confidence": CONFIDENCE,
        "probability": "logprobs" if how is None else f"{how.n} samples",
        "sample": {"n_pairs": check.n_pairs, "n_instructions": check.n_instructions,
                   "seed": check.seed, "pairs": int(items["pair_id"].nunique()),
                   "items": len(items), "paired": len(paired)},
        "measures": effect,
    }, metrics)
    found = effect["p_first"]
    log.info("%s: p(first shown preferred), shared_first - paper: %s [%s, %s] over %d "
             "pairs (p = %s)", judge, found["difference"], found["low"], found["high"],
             found["n_pairs"], found["p_value"])


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


# The most a recomputed cosine may differ from the clustering step's (both float32; a
# renormalised unit vector moves by an ulp, ~1e-7): more means other centroids.
COSINE_TOLERANCE = 1e-5


def save(params: MmbParams, *, judge: str, pairs: Path, support: Path, summary: Path,
         pool: Path, judgements: Path, embeddings: Path, clusters: Path,
         debiaser: Path) -> None:
    """`judge`'s MMB at the report's cell, as an estimator for new image pairs
    (estimator.ClusteredBayesianEnsemble), saved with its model card in `debiaser` (JSON
    that `judgebias.load` reads without executing code: judgebias.io.saved).

    Which fit: the factorial's configuration (measures.factorial) at the cell
    ``mmb.report`` (n_prompts instructions, n_val validation pairs, K = k) in its first
    replicate (estimator.SAVED_REPLICATE): training seed 0 (D_val = the first n_val
    validation candidates in validation_order(0)), sampling seed 0 (the ensemble = the
    first n_prompts instructions of the pool in prompt_order(0):
    estimator.saved_instructions, which the leaderboard asks its judges) and clustering
    seed 0, on the
    HPSv2 protocol's pairs with an answer under every instruction (the factorial's usable
    pairs, measures.factorial_inputs). It is fitted on those D_val pairs and audited on
    every usable test pair: its predictions there, through its own path (embeddings ->
    p(z | pair) -> eq. 10), give `audit_confidence_`, `audit_correct_` and the card's
    accuracy and ECE (``mmb.design.calibration_bins`` bins, as the factorial's).

    The centroids are recomputed here (measures.cluster.spherical_kmeans on the same
    support images, seed 0) rather than written by the cluster step: FAISS k-means with
    a seed is deterministic, so the cluster rule keeps its one output (adding one would
    rerun it, and every factorial and analysis job after it, in every existing project),
    K-means for one (K, seed) is quick beside the rest, and the recomputed centroids are
    checked against the clustering step's stored cosines of every pair used (a mismatch
    stops the job rather than saving other clusters than the audit's)."""
    import json

    import numpy as np
    import pandas as pd

    from judgebias.io.artifacts import read_columns, read_table
    from judgebias.io.saved import save as save_estimator
    from judgebias.models.base import STATUS_FAILED
    from judgebias.studies.mmb.data.checks import support_images
    from judgebias.studies.mmb.estimator import (
        EMBEDDING_KEYS,
        SAVED_REPLICATE,
        ClusteredBayesianEnsemble,
        saved_instructions,
    )
    from judgebias.studies.mmb.measures.cluster import spherical_kmeans, support_size
    from judgebias.studies.mmb.measures.factorial import validation_order
    from judgebias.studies.mmb.measures.factorial_inputs import pair_probabilities
    from judgebias.studies.mmb.tables import read_pool

    report, clustering = params.report, params.clustering
    n_prompts, n_val, k = report.n_prompts, report.n_val, report.k
    pair_table, pool_table = read_table(pairs, PAIRS), read_pool(str(pool))
    judged = read_columns(judgements, JUDGEMENTS, [
        "pair_id", "instruction", "judge", "order", "p_a", "p_source", "status",
        "backend", "model_id", "revision", "prompt_id"])
    table = read_table(embeddings, EMBEDDINGS)
    vectors = dict(zip(table["image_path"], np.stack(table["embedding"].to_numpy()),
                       strict=True))

    # the factorial's usable pairs and its first replicate's draws (factorial_inputs,
    # factorial._weights and _subset_rows)
    ids = pool_table["id"].tolist()
    columns = saved_instructions(ids, params)
    wide = pair_probabilities(judged, ids)
    usable = pair_table[pair_table["pair_id"].isin(wide.dropna().index)]
    train = usable[usable["split"] == "train"]
    test = usable[usable["split"] == "test"]
    failed = int((judged["status"] == STATUS_FAILED).sum())
    if n_val > len(train):
        if not failed:
            raise ValueError(f"mmb.report.n_val: {n_val} validation pairs asked, but "
                             f"{judge} answered only {len(train)} validation pairs usably")
        log.warning("%s: %d failed calls left %d usable validation pairs of the %d the "
                    "report's cell asks; the de-biaser is fitted on them (its card says so)",
                    judge, failed, len(train), n_val)
    val = train.iloc[validation_order(SAVED_REPLICATE["train_seed"], len(train))[:n_val]]

    def images(rows: pd.DataFrame, side: str) -> np.ndarray:
        dims = len(next(iter(vectors.values())))
        return np.array([vectors[p] for p in rows[side]], dtype=np.float32).reshape(-1, dims)

    hps = support_images(clustering, read_table(support, SUPPORT))
    hps = hps[hps["fold"].isna()]
    sup = images(hps.head(support_size(k, clustering)), "image_path")
    centroids = spherical_kmeans(sup, k, seed=SAVED_REPLICATE["cluster_seed"],
                                 niter=clustering.niter)
    _check_centroids(centroids, clusters, k, pd.concat([val, test]), images)

    prompt = sorted(set(judged["prompt_id"]))
    if len(prompt) != 1:
        raise ValueError(f"{judgements}: the judgements name prompts {prompt}, not one")
    how = params.probability.of(judge)
    probability = ({"source": "logprobs"} if how is None else
                   {"source": "samples", "samples": how.n, "prior": how.prior})
    probability["order"] = params.order
    embedding = {key: getattr(params.embedding, key) for key in EMBEDDING_KEYS}
    texts = pool_table.set_index("id").loc[columns]
    estimator = ClusteredBayesianEnsemble(
        tau=clustering.tau, entropy=params.entropy, pair=clustering.pair, judge=judge,
        judge_prompt=prompt[0], probability=probability, embedding=embedding,
    ).fit(wide.loc[val["pair_id"], columns], val["preference"].to_numpy(int),
          embeddings_a=images(val, "image_a"), embeddings_b=images(val, "image_b"),
          centroids=centroids, instruction_texts=texts["text"].tolist())
    X_test, y_test = wide.loc[test["pair_id"], columns], (
        test["preference"].to_numpy() > 0.5).astype(int)
    seen = {"embeddings_a": images(test, "image_a"), "embeddings_b": images(test, "image_b")}
    estimator.audit(X_test, y_test, groups=test["group"].tolist(), **seen)
    p_test = estimator.predict_proba(X_test, **seen)[:, 1]
    card = debiaser_card(
        params, estimator, judged=judged, described=json.loads(Path(summary).read_text()),
        kinds=texts["kind"].tolist(), sizes={
            "validation_candidates": len(train), "test": len(test),
            "left_out_validation_candidates": int((pair_table["split"] == "train").sum())
            - len(train),
            "left_out_test": int((pair_table["split"] == "test").sum()) - len(test),
            "failed_answers": failed},
        validation=val["pair_id"].tolist(), support_images=len(sup),
        audit=(p_test, y_test, test["group"]))
    save_estimator(estimator, debiaser, card)
    log.info("%s: MMB at %d prompts, %d validation pairs, K = %d saved; test accuracy %s, "
             "ECE %s on %d pairs", judge, n_prompts, len(val), k,
             card["agreement_test"]["accuracy"], card["agreement_test"]["ece"], len(test))


def _check_centroids(centroids: np.ndarray, clusters: Path, k: int, used: pd.DataFrame,
                     images: Callable[[pd.DataFrame, str], np.ndarray]) -> None:
    """The recomputed `centroids` must give the clustering step's cosines (HPSv2 part,
    K = `k`, clustering seed 0) of every pair `used`, to float32 precision (`save`)."""
    import numpy as np
    import pandas as pd

    from judgebias.studies.mmb.estimator import SAVED_REPLICATE, unit_rows
    from judgebias.studies.mmb.tables import HPS

    stored = pd.read_parquet(clusters, columns=["part", "fold", "k", "cluster_seed",
                                                "pair_id", "cos_a", "cos_b"])
    stored = stored[(stored["part"] == HPS) & (stored["k"] == k)
                    & (stored["cluster_seed"] == SAVED_REPLICATE["cluster_seed"])]
    stored = stored.set_index("pair_id")
    missing = sorted(set(used["pair_id"]) - set(stored.index))
    if missing:
        raise ValueError(f"{clusters}: no cosines at K = {k} for pairs {missing[:5]}")
    g = unit_rows(centroids)
    for side in ("a", "b"):
        if not len(used):
            continue
        mine = unit_rows(images(used, f"image_{side}")) @ g.T
        theirs = np.stack(stored.loc[used["pair_id"], f"cos_{side}"].to_numpy())
        gap = float(np.abs(mine - theirs).max())
        if gap > COSINE_TOLERANCE:
            raise ValueError(f"the recomputed K = {k} centroids (clustering seed 0) give "
                             f"cosines up to {gap:.2g} away from {clusters}'s: the "
                             "clustering is not reproducible here; rerun the cluster rule")


def debiaser_card(params: MmbParams, estimator: Any, *, judged: pd.DataFrame,
                  described: dict[str, Any], kinds: list[str], sizes: dict[str, int],
                  validation: list[str], support_images: int,
                  audit: tuple[np.ndarray, np.ndarray, pd.Series]) -> dict[str, Any]:
    """The saved de-biaser's model card (debiaser.json's ``card``): the judge (backend,
    model id and revision as its answers recorded them; the prompt template; how p(y | x,
    a) was read), the dataset and what of it was usable, the fit (cell, K, tau, entropy,
    replicate, instructions with their weights' top clusters), the embedding, and the
    agreement with people on the test pairs (measures.metrics: accuracy, ECE, MCE, Brier,
    NLL, AUC-PR, with n and the test groups)."""
    import numpy as np

    from judgebias.studies.mmb.embed import EmbeddingSpec
    from judgebias.studies.mmb.estimator import SAVED_REPLICATE as replicate
    from judgebias.studies.mmb.measures.metrics import batch_metrics

    def recorded(column: str) -> str:
        return ", ".join(sorted(set(judged[column].dropna().astype(str))))

    bins = params.design.calibration_bins
    p, y, groups = audit
    agreement: dict[str, Any] = {name: None for name in
                                 ("accuracy", "ece", "mce", "brier", "nll", "auc_pr")}
    if len(y):
        found = batch_metrics(p[None, :], y, n_bins=bins)
        agreement = {name: float(found[name][0]) for name in agreement}
    report, clustering = params.report, params.clustering
    ids = [str(i) for i in estimator.instructions_]
    texts = [str(t) for t in estimator.instruction_texts_]
    tops = estimator.top_prompts_.tolist()
    backend = recorded("backend")
    probability = estimator.probability
    read = ("the softmax of the two answer tokens' log-probs"
            if probability["source"] == "logprobs" else
            f"(k + {probability['prior']}) / (n + {2 * probability['prior']}) of "
            f"n = {probability['samples']} sampled verdicts")
    return {
        "model": ("MMB: prompt ensemble weighted per image cluster, for a pairwise image "
                  "judge (seed 002 §4, eq. 9-10)"),
        "usage": ("judgebias.load(path).predict_proba(X, embeddings_a=..., "
                  "embeddings_b=...)"),
        "input": (f"X: one column per instruction of fit.instructions (ids, in that order): "
                  f"judge `{estimator.judge}`'s p(image A preferred) asked with prompt "
                  f"template `{estimator.judge_prompt}` and the instruction's text, read as "
                  f"{read} (order: {probability['order']}); embeddings_a and embeddings_b: "
                  f"each pair's images embedded as `embedding` says"),
        "output": "columns [p(B preferred), p(A preferred)] per pair (eq. 10)",
        "judge": {"model": estimator.judge, "backend": backend,
                  "model_id": recorded("model_id"), "revision": recorded("revision"),
                  "simulated": backend == "sim", "prompt": estimator.judge_prompt,
                  "probability": dict(probability),
                  "smoothed_answers": int((judged["p_source"] == "smoothed_choice").sum())},
        "simulated": backend == "sim",
        "dataset": {"name": described.get("dataset"),
                    "description": described.get("description"),
                    "pairs": described.get("pairs"),
                    "test_groups": described.get("test_groups"),
                    "training_groups": described.get("training_groups"),
                    "usable": sizes},
        "fit": {"cell": {"n_prompts": report.n_prompts, "n_val": report.n_val},
                "k": report.k, "tau": estimator.tau, "entropy": estimator.entropy,
                "pair": estimator.pair, "replicate": dict(replicate),
                "clustering": {"niter": clustering.niter, "support": clustering.support,
                               "support_images": support_images},
                "n_validation": int(estimator.n_validation_),
                "validation_pairs": validation,
                "instructions": [
                    {"id": i, "kind": kind, "text": text,
                     "top_in_clusters": [z for z, top in enumerate(tops) if top == a]}
                    for a, (i, kind, text) in enumerate(zip(ids, kinds, texts, strict=True))],
                "cluster_mass": [float(m) for m in estimator.cluster_mass_]},
        "embedding": {**estimator.embedding,
                      "description": EmbeddingSpec(**estimator.embedding).description()},
        "agreement_test": {
            "what": (f"the saved estimator's predictions on every usable test pair of the "
                     f"audit (HPSv2 protocol), against the human preference: accuracy "
                     f"(A where p >= 0.5), ECE and MCE over {bins} equal-width bins of "
                     "max(p, 1 - p), Brier, NLL (natural log) and AUC-PR "
                     "(judgebias.studies.mmb.measures.metrics)"),
            "n": len(y), "n_groups": int(groups.nunique()), "calibration_bins": bins,
            "a_preferred": float(np.mean(y)) if len(y) else None, **agreement},
    }


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


