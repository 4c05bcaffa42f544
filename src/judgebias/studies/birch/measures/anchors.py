"""Table 5 analogue: the quality of BIRCH's anchors against the two candidate answers
(seed 003 §6.4, Table 5: "GPT-5 quality scores for generated anchors and candidate
answers", one average per text: Answer 1, Answer 2, and the anchor of each judge).

The paper scores correctness with another model (GPT-5) on a scale it does not print. On
the synthetic data the planted truth scores a text exactly: the scene the image shows is
in the pair table (``scene``), every fact a text states is read back
(:func:`judgebias.studies.birch.vqa.read_facts`) and checked against it, so no model's
opinion enters. Per text kind (Answer 1 = the answer shown first, Answer 2, Anchor of a
judge) the table gives

* ``truthful``: the share of texts with no false fact (the analogue of the paper's
  correctness score: the anchor should contain fewer factual errors than the candidates);
* ``false_facts``: false facts per text; ``facts``: facts stated per text (§5.2: the
  anchor should stay as informative as the candidates);
* for anchors only, ``repaired``: among pairs where a candidate states a false fact, the
  share whose anchor states none (the false claim was removed or corrected, §5.2 step 1),
  and ``kept``: the share of the candidates' true facts the anchor still states.

A failed or unparseable anchor is never scored: it is counted in ``n_missing``. On real
benchmarks no truth is planted, and the table has no rows (the report says so).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgebias.data.scenes import scene_from_json
from judgebias.studies.birch.vqa import Fact, is_true, read_facts, true_facts

COLUMNS = ["text", "model", "n", "n_missing", "truthful", "false_facts", "facts", "repaired",
           "kept", "n_with_false_candidate"]


@dataclass(frozen=True)
class Scored:
    """One text's facts scored against its scene's truth."""

    facts: int
    false: int
    true_keys: frozenset[tuple[str, str, str]]


def score_text(text: str, truth: dict[tuple[str, str], Fact]) -> Scored:
    """The facts `text` states, how many are false in the scene (`truth`), and the true
    ones (subject, attribute, value). A fact about an empty slot counts as false; one the
    scene cannot settle (``is_true`` None) is neither false nor kept."""
    facts = read_facts(text)
    verdicts = [is_true(fact, truth) for fact in facts]
    return Scored(facts=len(facts), false=sum(v is False for v in verdicts),
                  true_keys=frozenset((f.subject, f.attribute, f.value)
                                      for f, v in zip(facts, verdicts, strict=True) if v))


def _summary(text: str, model: str, scored: list[Scored | None]) -> dict[str, object]:
    usable = [s for s in scored if s is not None]
    return {"text": text, "model": model, "n": len(usable),
            "n_missing": len(scored) - len(usable),
            "truthful": np.mean([s.false == 0 for s in usable]) if usable else np.nan,
            "false_facts": np.mean([s.false for s in usable]) if usable else np.nan,
            "facts": np.mean([s.facts for s in usable]) if usable else np.nan,
            "repaired": np.nan, "kept": np.nan, "n_with_false_candidate": 0}


def anchor_quality(pairs: pd.DataFrame, anchors: dict[str, pd.Series]) -> pd.DataFrame:
    """Table 5 analogue (COLUMNS): Answer 1, Answer 2 and each judge's anchor, scored
    against the planted scene (seed 003 §6.4, Table 5).

    `pairs` is the pair table (index pair_id, with ``scene``, ``answer_a``, ``answer_b``);
    `anchors` maps a judge to its anchor text per pair_id (None where the anchor call
    failed or had no ``Merged Response:``). Without planted scenes (a real benchmark)
    the result has no rows.
    """
    if pairs.empty or pairs["scene"].isna().any():
        return pd.DataFrame(columns=COLUMNS)
    truths = {pid: true_facts(scene_from_json(s)) for pid, s in pairs["scene"].items()}
    first = {pid: score_text(t, truths[pid]) for pid, t in pairs["answer_a"].items()}
    second = {pid: score_text(t, truths[pid]) for pid, t in pairs["answer_b"].items()}
    rows = [_summary("Answer 1", "", list(first.values())),
            _summary("Answer 2", "", list(second.values()))]
    flawed = [pid for pid in pairs.index if first[pid].false or second[pid].false]
    for judge, texts in anchors.items():
        texts = texts.reindex(pairs.index)
        scored = {pid: None if pd.isna(t) else score_text(t, truths[pid])
                  for pid, t in texts.items()}
        row = _summary("Anchor", judge, list(scored.values()))
        usable = {pid: s for pid, s in scored.items() if s is not None}
        repaired = [usable[pid].false == 0 for pid in flawed if pid in usable]
        kept = [len(usable[pid].true_keys & (first[pid].true_keys | second[pid].true_keys))
                / len(first[pid].true_keys | second[pid].true_keys)
                for pid in pairs.index
                if pid in usable and (first[pid].true_keys | second[pid].true_keys)]
        row |= {"repaired": np.mean(repaired) if repaired else np.nan,
                "kept": np.mean(kept) if kept else np.nan,
                "n_with_false_candidate": len(repaired)}
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
