"""Pomms' command that is not a rule: `judgebias agreement`, Kendall tau of any score
column against a caption-judgement dataset's human ratings (Pomms' data type). The
rules' steps are in judgebias.studies.pomms.steps."""

from __future__ import annotations

import argparse


def _agreement(args: argparse.Namespace) -> None:
    from judgebias.io.artifacts import read_table
    from judgebias.stats.agreement import agreement, join_scores, read_scores
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


def register(add) -> None:
    """Add Pomms' commands that are not rules to the `judgebias` command."""
    p = add("agreement", _agreement,
            "Kendall tau-b/tau-c of any score column against a judgements dataset's humans")
    p.add_argument("--judgements", required=True, help="a judgements table (parquet)")
    p.add_argument("--scores", required=True,
                   help="item scores: a judge-items output or any CSV/Parquet with the key")
    p.add_argument("--column", required=True, help="the score column to compare")
    p.add_argument("--on", default="item_id", help="key column (default: %(default)s)")
