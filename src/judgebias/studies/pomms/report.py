"""Pomms' part of the HTML report (seed 000 §6.3, Tables 1-2, Fig. D). It reads the files
`tables.report_inputs` lists, which the report rule declares."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.judging.values import failed_note
from judgebias.report.html import Figure, Section, Table

AGREEMENT_COLUMNS = {"metric": "evaluator", "tau_b": "τ_b", "tau_b_low": "τ_b low",
                     "tau_b_high": "τ_b high", "tau_b_p": "p (τ_b = 0)", "tau_c": "τ_c",
                     "tau_c_low": "τ_c low", "tau_c_high": "τ_c high",
                     "tau_c_p": "p (τ_c = 0)", "n": "ratings", "n_missing": "missing",
                     "n_clusters": "images",
                     # tau(Pomms) - tau(this evaluator), paired over images
                     **{f"{v}_diff{suffix}": f"Pomms gain {name}{label}"
                        for v, name in (("tau_b", "τ_b"), ("tau_c", "τ_c"))
                        for suffix, label in (("", ""), ("_low", " low"), ("_high", " high"),
                                         ("_p", " p"))}}


SELECT_RULES = {
    "min_philautia": "the smallest absolute philautia score (seed 000 §6.3: Table 2's "
                     "Pomms (iv), \"the mixture with the smallest absolute philautia score\")",
    "best_validation": "the best validation τ",
}
STEP_COLUMNS = {"added": "evaluator added", "members": "members",
                "validation_tau_b": "validation τ_b", "validation_tau_c": "validation τ_c",
                "n_validation": "validation ratings", "philautia": "ensemble philautia score",
                "selected": "chosen"}


FORMAT_NAMES = {"flickr8k_expert": "Flickr8k-Expert", "nebula": "Nebula",
                "table": "a judgement table"}


def datasets_note(params: Mapping[str, Any]) -> str:
    """What each judgement dataset is, read from params: the report says plainly when the
    "human" ratings are simulated raters (docs/design.md principle 7)."""
    parts = []
    for name, spec in params["pomms"]["datasets"].items():
        if spec["format"] == "synthetic":
            parts.append(f"`{name}`: SIMULATED raters of {spec['n_items']} synthetic items "
                         f"(seed {spec['seed']}), not people")
        else:
            split = f" ({spec['split']} split)" if spec["format"] == "nebula" else ""
            parts.append(f"`{name}`: {FORMAT_NAMES[spec['format']]}{split}, "
                         f"{Path(spec['path']).name}")
    return "Judgement datasets: " + "; ".join(parts) + "."


def _tau_header(column: str) -> str:
    """"synthetic/val/tau_b" -> "τ_b synthetic val": the statistic, then where."""
    *where, statistic = column.split("/")
    return f"{AGREEMENT_COLUMNS.get(statistic, statistic)} {' '.join(where)}"


def _agreement(table: pd.DataFrame) -> pd.DataFrame:
    """The long agreement table indexed by what each row is about (dataset, split,
    evaluator), not by row number."""
    keys = [c for c in ("dataset", "split", "metric") if c in table.columns]
    return (table.set_index(keys).rename_axis(index={"metric": "evaluator"})
            .rename(columns=AGREEMENT_COLUMNS))


def report_section(params: Mapping[str, Any], out: Path, data: Mapping[str, Path]) -> Section:
    """Pomms' part of the HTML report: Table 1 and Table 2 analogues and Fig. D. It reads
    its results folder `out` only (`data` is empty: tables.report_inputs names no other
    file)."""
    metrics = json.loads((out / "metrics.json").read_text())
    first = pd.read_parquet(out / "table1.parquet").set_index("label")
    tau_columns = [c for c in first.columns if c.endswith(("/tau_b", "/tau_c"))]
    second = pd.read_parquet(out / "table2.parquet").set_index("generator")
    agreement_table = pd.read_parquet(out / "agreement.parquet")
    return Section(
        title="Pomms: an ensemble of evaluators against self-preference",
        intro=(f"Seed 000 §4.2/§6.3. Forward sequential selection over the panel's evaluators "
               f"with an Elastic Net meta-learner, fitted on the train split of "
               f"`{params['pomms']['train_dataset']}` and scored on its val split; the "
               f"judgement datasets are scored with the `{metrics['judgement_setting']}` "
               f"setting, Φ̃ and the philautia scores come from the `{metrics['setting']}` "
               f"setting. Ensemble size chosen by {SELECT_RULES[metrics['select']]} among "
               f"the steps with at least {metrics['min_members']} members: "
               f"{metrics['k']} members, {', '.join(metrics['members'])}."),
        figures=[Figure(out / "figures/phi_tilde_pomms.png",
                        "Φ̃ with Pomms as an extra evaluator (Fig. D)")],
        tables=[
            Table(second[["self", "pomms", "abs_pomms_below_self"]].rename(columns={
                      "self": "self Φ̃_i(i)", "pomms": "Pomms Φ̃_Pomms(G(i))",
                      "abs_pomms_below_self": "|Pomms| < |self|"}),
                  "Table 2 analogue: each model's philautia score Φ̃_i(i) and Pomms' "
                  "score of its captions Φ̃_Pomms(G(i)). Point estimates with no null "
                  "reference: in simulated worlds where no judge prefers its own captions "
                  "|Pomms| < |self| still holds in about three of four data sets (an "
                  "average of members is less noisy; tests/pomms/test_pomms.py), so it is not by "
                  "itself evidence that Pomms removes self-preference", "{:.2f}"),
            Table(first[["members", *tau_columns, "phi_score", "most_extreme", "selected"]]
                  .rename(columns={**{c: _tau_header(c) for c in tau_columns},
                                   "phi_score": "philautia score",
                                   "most_extreme": "most extreme Φ̃",
                                   "selected": "chosen"}),
                  "Table 1 analogue: Kendall τ against human judgements per dataset/split, "
                  "and the philautia score, for each evaluator and each selection step",
                  "{:.3f}"),
            Table(pd.read_parquet(out / "steps.parquet").set_index("step")
                  .rename_axis("selection step").rename(columns=STEP_COLUMNS),
                  "Selection steps: validation τ and the ensemble's philautia score of each "
                  f"step; the chosen one by {SELECT_RULES[metrics['select']]}", "{:.3f}"),
            Table(_agreement(agreement_table), "Agreement of every "
                  "evaluator and Pomms with the human judgements (all splits), with 95% "
                  "intervals and tests of τ = 0 from a bootstrap over images "
                  "(pomms.n_bootstrap)", "{:.3f}"),
        ],
        notes=[
            datasets_note(params),
            f"Pomms' most extreme Φ̃ entry is {metrics['pomms_most_extreme']:.2f} "
            f"({metrics['pomms_most_extreme_generator']}); the least extreme evaluator's most "
            f"extreme entry is {metrics['min_evaluator_most_extreme']:.2f}.",
            "The ensemble's own philautia score is the mean of its column over its members' "
            "captions: an ensemble generates no captions, and the paper does not define it "
            f"(here {metrics['ensemble_philautia']:.2f}).",
            "τ is computed with every human rating as its own row (caption-metric "
            "convention); answers that failed are excluded and counted, never imputed.",
            *failed_note(metrics.get("failed_calls", {})),
            *([f"Evaluators without one usable score, left out of the selection: "
               f"{', '.join(metrics['evaluators_left_out'])}."]
              if metrics.get("evaluators_left_out") else []),
        ],
    )
