"""The philautia study's CLI steps, one per rule. Each handler imports only the step
module it runs: a rule's code dependencies are derived from these imports
(judgebias.workflow.codedeps), so keep every other import inside the handler."""

from __future__ import annotations

import argparse
from pathlib import Path

from judgebias.config import input_errors, load_config


def _dataset(args: argparse.Namespace) -> None:
    import logging

    from judgebias.artifacts import write_table
    from judgebias.studies.philautia.data import build_dataset
    from judgebias.studies.philautia.tables import IMAGES

    spec = load_config(args.params)["philautia"]["dataset"]
    with input_errors(f"philautia.dataset.{spec['name']}"):
        table = build_dataset(spec, Path(args.images))
    write_table(table, args.out, IMAGES)
    logging.getLogger(__name__).info("dataset: %d images -> %s", len(table), args.out)


def _caption(args: argparse.Namespace) -> None:
    from judgebias.artifacts import write_table
    from judgebias.studies.philautia.jobs import caption_images
    from judgebias.studies.philautia.tables import CAPTIONS

    table = caption_images(load_config(args.params), args.generator, args.images)
    write_table(table, args.out, CAPTIONS)


def _score(args: argparse.Namespace) -> None:
    from judgebias.artifacts import write_table
    from judgebias.studies.philautia.jobs import score_captions
    from judgebias.studies.philautia.tables import SCORES

    table = score_captions(load_config(args.params), args.evaluator, args.setting,
                           args.images, args.captions)
    write_table(table, args.out, SCORES)


def _phi(args: argparse.Namespace) -> None:
    from judgebias.artifacts import write_frame
    from judgebias.studies.philautia.phi import collect_scores

    long, phi, counts = collect_scores(load_config(args.params), args.scores)
    out = Path(args.out_dir)
    write_frame(long, out / "scores.parquet")
    write_frame(phi, out / "phi.parquet")
    write_frame(counts, out / "counts.parquet")


def _philautia(args: argparse.Namespace) -> None:
    from judgebias.artifacts import write_frame, write_json
    from judgebias.studies.philautia.phi import run_analysis
    from judgebias.studies.philautia.tables import ANALYSIS_TABLES

    result = run_analysis(load_config(args.params), args.scores)
    out, tables = Path(args.out_dir), result.tables()
    for name in ANALYSIS_TABLES:
        write_frame(tables[name], out / f"{name}.parquet")
    write_json(result.metrics(), out / "metrics.json")


def _selfpref(args: argparse.Namespace) -> None:
    from judgebias.artifacts import write_table
    from judgebias.studies.philautia.selfpref import run_selfpref
    from judgebias.studies.philautia.tables import SELFPREF

    write_table(run_selfpref(load_config(args.params), args.scores, args.philautia),
                args.out, SELFPREF)


def _heatmaps(args: argparse.Namespace) -> None:
    from judgebias.studies.philautia.figures import draw_figures

    draw_figures(load_config(args.params), args.setting, args.phi, args.phi_tilde,
                 args.philautia, Path(args.out_dir))


def register(add) -> None:
    """Add the philautia steps to the `judgebias` command."""
    p = add("dataset", _dataset, "build or import the image dataset")
    p.add_argument("--out", required=True)
    p.add_argument("--images", required=True)
    p = add("caption", _caption, "caption every image with one generator")
    for flag in ("--generator", "--images", "--out"):
        p.add_argument(flag, required=True)
    p = add("score", _score, "score one generator's captions with one evaluator")
    for flag in ("--evaluator", "--setting", "--images", "--captions", "--out"):
        p.add_argument(flag, required=True)
    p = add("phi", _phi, "collect a setting's scores into the Phi matrix")
    p.add_argument("--out-dir", required=True)
    p.add_argument("scores", nargs="+", help="score tables of the setting")
    p = add("philautia", _philautia, "Phi-tilde, philautia scores, tests, intervals")
    p.add_argument("--scores", required=True, help="the setting's long scores table")
    p.add_argument("--out-dir", required=True)
    p = add("selfpref", _selfpref,
            "self- and family-preference in score points (beyond the paper)")
    for flag in ("--scores", "--philautia", "--out"):
        p.add_argument(flag, required=True)
    p = add("heatmaps", _heatmaps, "figures of one setting")
    for flag in ("--setting", "--phi", "--phi-tilde", "--philautia", "--out-dir"):
        p.add_argument(flag, required=True)
