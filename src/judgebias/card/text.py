"""The judge card in words: each judge's one-line reading, and `judgebias card MODEL`.

The reading is generated from the numbers only: the `reading` phrase of every row that
is significant after the card's FDR adjustment, in the card's order (headline measures
first), and the fixes that helped it significantly. A judge with no significant row reads
"no bias found", with the number of tests behind that statement.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from judgebias.card.build import card_metrics, metric_key


def number(value: Any) -> str:
    """A card number, short: three significant digits, "n/a" where missing."""
    if value is None or pd.isna(value):
        return "n/a"
    value = float(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return "0" if abs(value) < 5e-4 else f"{value:.3g}"


def estimate_text(row: pd.Series) -> str:
    """"4.27 [1.57, 6.97]", or the estimate alone where there is no interval."""
    if pd.isna(row["ci_low"]) or pd.isna(row["ci_high"]):
        return number(row["estimate"])
    return f"{number(row['estimate'])} [{number(row['ci_low'])}, {number(row['ci_high'])}]"


def signed_phrase(estimate: float, ci_low: float, ci_high: float, up: str, down: str) -> str:
    """`up` or `down` (each with one "{}") filled with the estimate's size and interval,
    so a negative effect reads "takes 2.1 [0.4, 3.9] points off", not "adds -2.1"."""
    if estimate < 0:
        return down.format(estimate_text(pd.Series({"estimate": -estimate,
                                                    "ci_low": -ci_high,
                                                    "ci_high": -ci_low})))
    return up.format(estimate_text(pd.Series({"estimate": estimate, "ci_low": ci_low,
                                              "ci_high": ci_high})))


def judge_rows(card: pd.DataFrame, model: str) -> pd.DataFrame:
    rows = card[card["model"] == model]
    if rows.empty:
        known = ", ".join(dict.fromkeys(card["model"])) or "none"
        raise KeyError(f"no card rows for model {model!r} (models on the card: {known})")
    return rows


def reading(card: pd.DataFrame, model: str) -> str:
    """The judge's line: its significant findings (headline first), then its fixes."""
    rows = judge_rows(card, model)
    found = rows[rows["significant"] & (rows["reading"] != "")]
    found = pd.concat([found[found["headline"]], found[~found["headline"]]])
    fixes = rows[rows["significant"] & (rows["recommendation"] != "")]
    n_tests = int(rows["p_value"].notna().sum())
    if found.empty and not n_tests:
        text = "no test of bias could be run on this panel"
    elif found.empty:
        text = (f"no bias found in {n_tests} test{'s' if n_tests != 1 else ''} "
                f"(FDR 5% over the card)")
    else:
        text = "; ".join(found["reading"])
    if not fixes.empty:
        text += ". Helps: " + "; ".join(fixes["recommendation"])
    return text + "."


SOURCE_NOTES = {"simulated": " (simulated)",
                "imported": " (answers imported: judged outside judgebias)",
                "recorded": " (recorded judgements: judged outside judgebias)"}


def card_text(card: pd.DataFrame, model: str, source: str = "called") -> str:
    """`judgebias card MODEL`: the reading, then every row of the judge, study by study.
    `source` says where the judge's answers came from (judgebias.study.answer_sources):
    a simulated or an imported judge is named so."""
    rows = judge_rows(card, model)
    lines = [f"{model}{SOURCE_NOTES.get(source, '')}", reading(card, model), ""]
    for study, group in rows.groupby("study", sort=False):
        lines.append(f"{study}:")
        for _, row in group.iterrows():
            label = row["label"] + (f" [{row['setting']}]" if row["setting"] else "")
            p = ("" if pd.isna(row["p_adjusted"])
                 else f"  p_adj {number(row['p_adjusted'])}{' *' if row['significant'] else ''}")
            chance = "" if pd.isna(row["chance"]) else f"  (chance {number(row['chance'])})"
            note = f"  -- {row['note']}" if row["note"] else ""
            lines.append(f"  {label}: {estimate_text(row)} {row['unit']}{chance}{p}"
                         f"  n={row['n']}{note}")
    return "\n".join(lines) + "\n"


def card_json(card: pd.DataFrame, model: str) -> str:
    """`judgebias card MODEL --json`: the reading and every row, numbers null where
    missing (build.card_metrics' keys, plus each row's full record)."""
    rows = judge_rows(card, model)
    records = [{**{k: (None if not isinstance(v, str) and pd.isna(v) else v)
                   for k, v in row.items()}, "key": metric_key(row)}
               for row in rows.to_dict("records")]
    return json.dumps({"model": model, "reading": reading(card, model),
                       "metrics": card_metrics(rows).get(model, {}), "rows": records},
                      indent=1, default=_plain)


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON: {value!r}")
