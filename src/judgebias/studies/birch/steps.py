"""BIRCH's model steps: the labeller's labels, the judges' preparatory texts, the
length-equalised pairs and the verdicts. Each reads the files its rule declares and
writes its outputs atomically (the pair table is built by judgebias.studies.birch.dataset,
so no model job depends on the importers' code)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from judgebias.artifacts import read_table, write_json, write_table
from judgebias.studies.birch.tables import LABEL_ANSWERS, PAIRS, TEXTS, VERDICTS

log = logging.getLogger(__name__)


def label(config: Mapping[str, Any], labeller: str, pairs_path: str, out: str) -> None:
    """Fig. 18 in both orders by `labeller`."""
    from judgebias.studies.birch.jobs import label as label_pairs

    write_table(label_pairs(config, labeller, read_table(pairs_path, PAIRS)), out,
                LABEL_ANSWERS)


def prepare(config: Mapping[str, Any], model: str, step: str, pairs_path: str, out: str
            ) -> None:
    """One preparatory text per pair (reference, caption or anchor) by `model`."""
    from judgebias.studies.birch.jobs import prepare as prepare_texts

    texts = prepare_texts(config, model, step, read_table(pairs_path, PAIRS))
    write_table(texts, out, TEXTS)
    log.info("%s by %s: %s", step, model, texts["status"].value_counts().to_dict())


def equalise(config: Mapping[str, Any], pairs_path: str, texts_out: str, pairs_out: str,
             summary_out: str) -> None:
    """Appendix C.5: the lengthener's texts and the equalised pairs."""
    from judgebias.studies.birch.jobs import equalised_pairs, lengthen

    block = config["birch"]
    pairs = read_table(pairs_path, PAIRS)
    texts = lengthen(config, block["lengthener"], pairs)
    kept, counts = equalised_pairs(pairs, texts, block["equalise_tolerance"])
    write_table(texts, texts_out, TEXTS)
    write_table(kept, pairs_out, PAIRS)
    write_json(counts, summary_out)
    log.info("length equalisation: %s", counts)


def judge(config: Mapping[str, Any], judge_key: str, variant: str, pairs_path: str,
          texts_path: str | None, out: str) -> None:
    """Every pair judged by `judge_key` in `variant` (with its text where it needs one)."""
    from judgebias.studies.birch.jobs import judge as judge_pairs

    texts = read_table(texts_path, TEXTS) if texts_path else None
    verdicts = judge_pairs(config, judge_key, variant, read_table(pairs_path, PAIRS), texts)
    write_table(verdicts, out, VERDICTS)
    log.info("%s %s: %s", judge_key, variant, verdicts["status"].value_counts().to_dict())
