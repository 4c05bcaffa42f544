"""MMB's CLI steps, one per rule. Each handler imports only the step module it runs: a
rule's code dependencies are derived from these imports (judgebias.workflow.codedeps)."""

from __future__ import annotations

import argparse
from pathlib import Path

from judgebias.config import load_config


def _data(args: argparse.Namespace) -> None:
    from judgebias.studies.mmb.steps import build_data

    build_data(load_config(args.params), args.pairs, args.support, Path(args.images),
               args.summary)


def _pool(args: argparse.Namespace) -> None:
    from judgebias.studies.mmb.steps import build_pool

    build_pool(load_config(args.params), args.out)


def _judge(args: argparse.Namespace) -> None:
    from judgebias.artifacts import write_table
    from judgebias.studies.mmb.jobs import judge_pairs
    from judgebias.studies.mmb.tables import JUDGEMENTS

    table = judge_pairs(load_config(args.params), args.judge, args.pairs, args.pool)
    write_table(table, args.out, JUDGEMENTS)


def _embed(args: argparse.Namespace) -> None:
    from judgebias.studies.mmb.steps import embed

    embed(load_config(args.params), args.pairs, args.support, args.out)


def _cluster(args: argparse.Namespace) -> None:
    from judgebias.studies.mmb.steps import cluster

    cluster(load_config(args.params), args.pairs, args.support, args.embeddings, args.out)


def _factorial(args: argparse.Namespace) -> None:
    from judgebias.studies.mmb.experiment import factorial

    factorial(load_config(args.params), args.pairs, args.pool, args.judgements,
              args.clusters, Path(args.out_dir))


def _analysis(args: argparse.Namespace) -> None:
    from judgebias.studies.mmb.analysis import analyse

    analyse(load_config(args.params), args.pairs, args.pool, args.clusters, args.judgements,
            args.factorial, Path(args.out_dir))


def register(add) -> None:
    """Add the MMB steps to the `judgebias` command."""
    p = add("mmb-data", _data, "build or import the pairwise preference data (MMB)")
    for flag in ("--pairs", "--support", "--images", "--summary"):
        p.add_argument(flag, required=True)
    p = add("mmb-pool", _pool, "the instruction pool: built-in, extra file, grown by a writer")
    p.add_argument("--out", required=True)
    p = add("mmb-judge", _judge, "judge every (pair, instruction) with one judge")
    for flag in ("--judge", "--pairs", "--pool", "--out"):
        p.add_argument(flag, required=True)
    p = add("mmb-embed", _embed, "CLIP embeddings of every pair and support image (cached)")
    for flag in ("--pairs", "--support", "--out"):
        p.add_argument(flag, required=True)
    p = add("mmb-cluster", _cluster, "spherical k-means per (K, seed); image-centroid cosines")
    for flag in ("--pairs", "--support", "--embeddings", "--out"):
        p.add_argument(flag, required=True)
    p = add("mmb-factorial", _factorial, "every configuration of the factorial design")
    for flag in ("--pairs", "--pool", "--judgements", "--clusters", "--out-dir"):
        p.add_argument(flag, required=True)
    p = add("mmb-analysis", _analysis, "Tables 1-4, Figs. 1, 3, 4 analogues, significance")
    p.add_argument("--judgements", nargs="+", required=True)
    p.add_argument("--factorial", nargs="+", required=True)
    for flag in ("--pairs", "--pool", "--clusters", "--out-dir"):
        p.add_argument(flag, required=True)
