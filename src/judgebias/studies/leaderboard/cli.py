"""The leaderboard's command that is not a rule: `judgebias leaderboard` prints every
task's leaderboard from a finished run's results (each method's score per system with
its interval and rank interval, the order changes in words, and an images task's
triage). The rules' steps are in judgebias.studies.leaderboard.steps."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from judgebias.studies.leaderboard.tables import RESULTS


def leaderboard_text(results: Path) -> str:
    """Every task's leaderboard under `results` (a run's results/leaderboard), as text."""
    tasks = sorted(p.parent for p in results.glob("*/metrics.json"))
    if not tasks:
        raise SystemExit(f"{results}: no leaderboard results (run the pipeline first: "
                         "`make run`, or `snakemake results/leaderboard/<task>/metrics.json`)")
    blocks = []
    for folder in tasks:
        metrics = json.loads((folder / "metrics.json").read_text())
        systems = pd.read_parquet(folder / "systems.parquet")
        shown = systems.assign(
            score=[f"{m:.3g} [{lo:.3g}, {hi:.3g}]  rank {int(a)}-{int(b)}"
                   for m, lo, hi, a, b in zip(systems["mean"], systems["low"],
                                              systems["high"], systems["rank_low"],
                                              systems["rank_high"], strict=True)])
        table = shown.pivot(index="system", columns="method", values="score")
        units = ", ".join(f"{m}: {u}" for m, u in systems.drop_duplicates("method")[
            ["method", "unit"]].itertuples(index=False))
        lines = [f"== {folder.name} ({metrics.get('kind', 'captions')} task; baseline: "
                 f"{metrics['baseline']}, the plain judge) ==", table.to_string(),
                 f"units: {units}"]
        changes = metrics.get("order_changes") or []
        lines += ([f"- {text}" for text in changes] if changes
                  else ["every method orders the systems as the baseline does"])
        for method, triage in (metrics.get("triage") or {}).items():
            threshold = triage["threshold"]
            lines.append(
                f"triage ({method}): {triage['decided']} pairs decided by the judge, "
                f"{triage['for_humans']} left for humans "
                + (f"(confidence >= {threshold:.3g}, certified accuracy >= "
                   f"{triage['target_accuracy']} with probability "
                   f"{1 - triage['risk']:.2g})" if threshold is not None
                   else "(no threshold certified for the target accuracy)"))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _leaderboard(args: argparse.Namespace) -> None:
    print(leaderboard_text(Path(args.results)))


def register(add) -> None:
    """Add the leaderboard's commands that are not rules to the `judgebias` command."""
    p = add("leaderboard", _leaderboard,
            "print every task's leaderboard from a finished run's results")
    p.add_argument("--results", default=RESULTS,
                   help="the run's leaderboard results folder (default: %(default)s)")
