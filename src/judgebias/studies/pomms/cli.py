"""Pomms' CLI steps, one per rule. Each handler imports only the step module it runs: a
rule's code dependencies are derived from these imports (judgebias.workflow.codedeps)."""

from __future__ import annotations

import argparse
from pathlib import Path

from judgebias.config import input_errors, load_config


def _judgements(args: argparse.Namespace) -> None:
    import logging

    from judgebias.artifacts import write_table
    from judgebias.studies.pomms.data import build_judgements
    from judgebias.studies.pomms.tables import JUDGEMENTS

    config = load_config(args.params)
    with input_errors(f"pomms.datasets.{args.dataset}"):
        table = build_judgements(args.dataset, config["pomms"]["datasets"][args.dataset],
                                 Path(args.images))
    write_table(table, args.out, JUDGEMENTS)
    logging.getLogger(__name__).info("%s: %d ratings of %d items -> %s", args.dataset,
                                     len(table), table["item_id"].nunique(), args.out)


def _judge_items(args: argparse.Namespace) -> None:
    from judgebias.artifacts import write_table
    from judgebias.studies.pomms.jobs import score_items
    from judgebias.studies.pomms.tables import ITEM_SCORES

    table = score_items(load_config(args.params), args.evaluator, args.setting,
                        args.judgements)
    write_table(table, args.out, ITEM_SCORES)


def _pomms(args: argparse.Namespace) -> None:
    from judgebias.studies.pomms.steps import run_pomms

    run_pomms(load_config(args.params), args.judgements, args.item_scores, args.scores,
              Path(args.out_dir))


def _agreement(args: argparse.Namespace) -> None:
    from judgebias.agreement import agreement, join_scores, read_scores
    from judgebias.artifacts import read_table
    from judgebias.studies.pomms.tables import JUDGEMENTS

    judgements = read_table(args.judgements, JUDGEMENTS)
    scores = read_scores(args.scores, on=args.on)
    if "status" in scores.columns and args.column in scores.columns:
        # A judge-items output keeps the number of a truncated or out-of-range answer for
        # audit; only answers with status "ok" are scores.
        scores[args.column] = scores[args.column].where(scores["status"] == "ok")
    joined = join_scores(judgements, scores, on=args.on, score_column=args.column)
    counts = joined.attrs.get("join_scores", {})
    print(agreement(joined, args.column).to_string(index=False))
    for name, info in counts.items():
        print(f"{name}: {info['n_unmatched_rows']} of {info['n_rows']} ratings had no score; "
              f"{info['n_nan_scores']} scores were missing (excluded, never imputed)")


def _heatmap(args: argparse.Namespace) -> None:
    from judgebias.studies.pomms.figures import draw_heatmap

    draw_heatmap(load_config(args.params), args.phi_tilde, Path(args.out))


def register(add) -> None:
    """Add the Pomms steps to the `judgebias` command."""
    p = add("judgements", _judgements, "build or import a caption-judgement dataset")
    for flag in ("--dataset", "--out", "--images"):
        p.add_argument(flag, required=True)
    p = add("judge-items", _judge_items, "score a judgement dataset with one evaluator")
    for flag in ("--evaluator", "--setting", "--judgements", "--out"):
        p.add_argument(flag, required=True)
    p = add("pomms", _pomms, "fit Pomms; Table 1/2 analogues; Phi-tilde with Pomms")
    p.add_argument("--judgements", nargs="+", required=True)
    p.add_argument("--item-scores", nargs="+", required=True)
    p.add_argument("--scores", required=True, help="the philautia setting's scores table")
    p.add_argument("--out-dir", required=True)
    p = add("pomms-heatmap", _heatmap, "heat map of Phi-tilde with Pomms (Fig. D)")
    p.add_argument("--phi-tilde", required=True)
    p.add_argument("--out", required=True)
    p = add("agreement", _agreement,
            "Kendall tau-b/tau-c of any score column against a judgements dataset's humans")
    p.add_argument("--judgements", required=True, help="a judgements table (parquet)")
    p.add_argument("--scores", required=True,
                   help="item scores: a judge-items output or any CSV/Parquet with the key")
    p.add_argument("--column", required=True, help="the score column to compare")
    p.add_argument("--on", default="item_id", help="key column (default: %(default)s)")
