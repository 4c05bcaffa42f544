"""Table 6 analogue: what each judging method costs per pair (seed 003 §6.5, Table 6:
"inference time per data point", Base 3.87 s vs BIRCH 7.47 s: BIRCH makes one extra pass).

Wall time depends on the machine and on what the journal already held, so we count what
a method asks of the models instead: calls, prompt and completion tokens, and, where the
panel model has ``pricing`` (USD per million tokens), the cost. Per (judge, method):

* the method's own verdicts (the variant's verdicts table), plus
* the preparatory pass it needs: Image Caption the judge's caption, Standard Ref its
  reference (Fig. 19), BIRCH its anchor (Fig. 20), the equalised ablation the
  lengthener's texts (Appendix C.5; priced as the lengthener's).

Every row of those tables that was asked (has a ``request_key``) is one call; its tokens
are the usage the backend reported, read from the model-call journal by that key (the
journal keeps each answer once, under its key, and never rewrites it, so the answer
tables this step declares as inputs pin exactly what it reads). A call whose answer is
not in the journal (a failed call: only successes are kept) is counted in
``calls_without_usage`` and adds no tokens: a failed call never becomes a number.
Per pair = over the pairs the verdicts table holds (shown orders counted as calls).
The labeller's calls serve the IB analysis, not judging, and belong to no method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from judgebias.models.entry import Pricing

COLUMNS = ["judge", "method", "n_pairs", "calls", "calls_without_usage", "prompt_tokens",
           "completion_tokens", "calls_per_pair", "prompt_tokens_per_pair",
           "completion_tokens_per_pair", "cost_per_pair"]


def _cost(prompt: float, completion: float, pricing: Pricing | None) -> float:
    """USD for the tokens at the panel model's `pricing` (NaN without one)."""
    if pricing is None:
        return np.nan
    return (prompt * pricing.input_per_mtok + completion * pricing.output_per_mtok) / 1e6


def method_cost(judge: str, method: str, parts: list[tuple[pd.DataFrame, Pricing | None]],
                n_pairs: int) -> dict[str, Any]:
    """One Table 6 row: `parts` are the method's answer rows with usage (see
    :func:`judgebias.studies.birch.steps.journal_usage`), each with the pricing of the
    model that answered them."""
    calls = without = 0
    prompt = completion = cost = 0.0
    for rows, pricing in parts:
        asked = rows[rows["request_key"].notna()]
        used = asked[asked["prompt_tokens"].notna()]
        calls += len(asked)
        without += len(asked) - len(used)
        p, c = float(used["prompt_tokens"].sum()), float(used["completion_tokens"].sum())
        prompt, completion = prompt + p, completion + c
        cost += _cost(p, c, pricing)
    per = n_pairs if n_pairs else np.nan
    return {"judge": judge, "method": method, "n_pairs": n_pairs, "calls": calls,
            "calls_without_usage": without, "prompt_tokens": prompt,
            "completion_tokens": completion, "calls_per_pair": calls / per,
            "prompt_tokens_per_pair": prompt / per,
            "completion_tokens_per_pair": completion / per, "cost_per_pair": cost / per}


def cost_table(verdicts: pd.DataFrame, texts: pd.DataFrame, *,
               pricing: Callable[[str], Pricing | None], lengthener: str) -> pd.DataFrame:
    """Table 6 analogue (COLUMNS) per (judge, method) from the verdicts and the
    preparatory texts (every step, the lengthener's included), each row with its usage
    from the journal (``prompt_tokens``, ``completion_tokens``; NaN: not journaled).
    `pricing` gives a panel model's prices (``panel.<key>.pricing``, None without
    any), asked only of the models whose calls are priced: each judge, and `lengthener`
    (``birch.lengthener``) for the equalised ablation."""
    from judgebias.studies.birch.jobs import NEEDS

    rows = []
    for (judge, method), own in verdicts.groupby(["judge", "variant"], sort=False):
        parts = [(own, pricing(str(judge)))]
        if method in NEEDS:
            step = texts[(texts["model"] == judge) & (texts["step"] == NEEDS[method])]
            parts.append((step, pricing(str(judge))))
        if method == "equalised":
            step = texts[(texts["model"] == lengthener)
                         & texts["step"].str.startswith("lengthen")]
            parts.append((step, pricing(lengthener)))
        rows.append(method_cost(str(judge), str(method), parts, own["pair_id"].nunique()))
    return pd.DataFrame(rows, columns=COLUMNS)
