"""`judgebias card`: one judge's card in the terminal, or two runs compared (its
arguments are declared in judgebias.commands, which must stay light to import)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import pandas as pd

from judgebias.card.text import card_json, card_text, estimate_text, number


def show_card(params: Mapping[str, Any], args: argparse.Namespace) -> str:
    from judgebias.card.compare import compare, load_card
    from judgebias.study import answer_sources

    if args.compare:
        changes = compare(*(load_card(run) for run in args.compare))
        if args.model:
            changes = changes[changes["model"] == args.model]
        if args.json:
            return changes.to_json(orient="records", indent=1) + "\n"
        return compare_text(changes)
    card = load_card(args.results)
    models = [args.model] if args.model else list(dict.fromkeys(card["model"]))
    if args.json:
        return "\n".join(card_json(card, m) for m in models) + "\n"
    sources = answer_sources(params, [m for m in models if m in params["panel"]])
    # a judge outside the panel is one a recorded table names (the recorded study)
    return "\n".join(card_text(card, m, sources.get(m, "recorded")) for m in models)


def compare_text(changes: pd.DataFrame) -> str:
    lines = []
    for model, group in changes.groupby("model", sort=False):
        lines.append(f"{model}:")
        for _, row in group.iterrows():
            name = f"{row['study']} {row['label']}" + (f" [{row['setting']}]"
                                                       if row["setting"] else "")
            if row["status"] != "both":
                lines.append(f"  {name}: {row['status']}")
                continue
            change = estimate_text(pd.Series({"estimate": row["change"],
                                              "ci_low": row["ci_low"],
                                              "ci_high": row["ci_high"]}))
            lines.append(f"  {name}: {number(row['estimate_a'])} -> "
                         f"{number(row['estimate_b'])} {row['unit']}, change {change}"
                         f"{'  moved' if row['moved'] else ''}")
    return "\n".join(lines) + "\n"
