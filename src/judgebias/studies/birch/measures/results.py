"""BIRCH's result tables of one dataset (role: measures): every table and headline number
of seed 003 from the pairs, the labeller's labels and the verdicts, as pure computation
(a new labeller reruns this and the labelling, never a judge call); the step
``birch.analysis`` (steps.py) reads and writes them.

Reading of the verdicts. The order shown first (``ab``: the pair's own A/B, randomised by
the importer where the source file is ordered) is the primary reading of every table;
with ``swap_order`` the swapped order is reported next to it (``accuracy``) and never
mixed in. A pair whose human label is a tie, a failed or unparseable verdict, a pair the
labeller labelled inconsistently across the two orders (spec "Labeller position bias"),
and an equal-length pair (for LB) are dropped from the statistics they cannot enter and
counted (``counts`` in metrics.json). A judge's tie counts as not choosing y^c.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from judgebias.judging.values import failed_calls
from judgebias.studies.birch.measures import formulas as m
from judgebias.studies.birch.measures import inference

if TYPE_CHECKING:
    from judgebias.studies.birch.params import BirchParams, Downsampling

PRIMARY = "ab"
METHODS = ("base", "standard_ref", "birch")  # Table 4 / 8
STATISTICS = {"IB": ("ib", "IDS", "CDS"), "LB": ("lb", "longer", "shorter")}
# The down-sampled columns of a bias row with an empty subset (a judge without a usable
# verdict, e.g. every call failed): NaN, zero draws, so every table keeps its columns.
NO_DRAWS = {f"ds_{k}": v for k, v in m.summarise_draws(pd.DataFrame({"bias": []})).items()}


def informativeness_labels(labels: pd.DataFrame) -> tuple[pd.Series, dict[str, int]]:
    """y^i per pair (index pair_id) where both orders agree, and the consistency counts."""
    wide = labels.pivot(index="pair_id", columns="order", values="more_informative")
    wide = wide.reindex(columns=["ab", "ba"])
    return (m.consistent_label(wide["ab"], wide["ba"]),
            m.label_counts(wide["ab"], wide["ba"]))


def planted_informativeness(pairs: pd.DataFrame) -> pd.Series | None:
    """The answer with more valid details (synthetic pairs; None for real data; NA where
    both have as many): the truth of the Table 7 analogue on the default."""
    if pairs["details_a"].isna().any():
        return None
    a, b = pairs["details_a"].astype(int), pairs["details_b"].astype(int)
    # numpy's stubs reject None as a choice (np.where then makes an object array)
    later = np.where(a < b, "B", None)  # type: ignore[call-overload]
    truth = pd.Series(np.where(a > b, "A", later), index=pairs.index, dtype=object)
    return truth.where(a != b)


class JudgeData:
    """One judge's correctness per variant (primary order), indexed by pair_id."""

    def __init__(self, verdicts: pd.DataFrame, preference: pd.Series) -> None:
        self.correct: dict[str, pd.Series] = {}
        primary = verdicts[verdicts["order"] == PRIMARY]
        for variant, rows in primary.groupby("variant"):
            rows = rows.set_index("pair_id")
            self.correct[str(variant)] = m.correctness(
                rows["verdict"], preference.reindex(rows.index))


def accuracy_table(verdicts: pd.DataFrame, preference: pd.Series) -> pd.DataFrame:
    """Table 3 and the answer counts: accuracy per (judge, variant, order)."""
    rows = []
    for (judge, variant, order), group in verdicts.groupby(["judge", "variant", "order"]):
        group = group.set_index("pair_id")
        correct = m.correctness(group["verdict"], preference.reindex(group.index))
        acc = m.accuracy(correct)
        rows.append({"judge": judge, "variant": variant, "order": order,
                     "n_pairs": len(group), "n_usable": acc.n, "accuracy": acc.value,
                     "n_judge_tie": int((group["verdict"] == "tie").sum()),
                     "n_failed": int(group["verdict"].isna().sum()),
                     "n_human_tie": int((preference.reindex(group.index) == "tie").sum())})
    return pd.DataFrame(rows)


def bias_rows(judge: str, variant: str, correct: pd.Series, subsets: dict[str, pd.Series],
              spec: Downsampling) -> tuple[list[dict], pd.DataFrame]:
    """IB and LB of one (judge, variant): full data and the down-sampled mean and spread
    (Appendix C.3; ``sd`` is the standard deviation of the 160 draws)."""
    rows, draws = [], []
    for statistic, (key, plus, minus) in STATISTICS.items():
        full = m.bias(correct, subsets[key], plus=plus, minus=minus)
        row = {"judge": judge, "variant": variant, "statistic": statistic,
               "value": full.value, "acc_plus": full.plus.value, "acc_minus": full.minus.value,
               "n_plus": full.plus.n, "n_minus": full.minus.n, **NO_DRAWS}
        if full.plus.n and full.minus.n:
            sampled = m.downsample(correct, subsets[key], plus=plus, minus=minus,
                                   ratios=spec.ratios, draws=spec.draws, seed=spec.seed)
            summary = m.summarise_draws(sampled)
            row |= {f"ds_{k}": v for k, v in summary.items()}
            draws.append(sampled.assign(judge=judge, variant=variant, statistic=statistic))
        rows.append(row)
    return rows, (pd.concat(draws, ignore_index=True) if draws else pd.DataFrame())


def method_row(judge: str, method: str, correct: pd.Series, subsets: dict[str, pd.Series]
               ) -> dict[str, Any]:
    """Acc, Acc_IDS, Acc_CDS, IB, LB of one method (Tables 4 and 8), on one pair set.

    ``acc`` is over D_IDS ∪ D_CDS, the pairs IB rests on, as the paper's Table 8 (its
    rows satisfy Acc = (1 - r) Acc_IDS + r Acc_CDS with one r, ``tests``): so
    acc = (n_ids acc_ids + n_cds acc_cds) / (n_ids + n_cds) exactly. ``acc_all`` counts
    every pair with a human preference (also those the labeller left inconsistent),
    labelled apart. ``balanced`` = (Acc_IDS + Acc_CDS) / 2 (`formulas.balanced_accuracy`).
    """
    ib = m.bias(correct, subsets["ib"])
    lb = m.bias(correct, subsets["lb"], plus="longer", minus="shorter")
    labelled = subsets["ib"].reindex(correct.index).isin(["IDS", "CDS"]).to_numpy()
    return {"judge": judge, "method": method, "acc": m.accuracy(correct[labelled]).value,
            "acc_ids": ib.plus.value, "acc_cds": ib.minus.value, "ib": ib.value,
            "lb": lb.value, "balanced": m.balanced_accuracy(ib),
            "acc_all": m.accuracy(correct).value, "n_ids": ib.plus.n, "n_cds": ib.minus.n}


def table2_row(judge: str, base: pd.Series, after: pd.Series, subsets: pd.Series,
               kept: pd.Series) -> dict[str, Any]:
    """Table 2 (seed 003 §4.4, Appendix C.5): IB before → after length equalisation.

    ``ib_before`` is Base's IB on the pairs that survived equalisation (``kept``: their IB
    subsets), the same pairs as ``ib_after``, so the change is length's part and not a
    change of pairs; ``ib_before_all`` is Base's IB on every labelled pair (what the
    paper's "before" column most likely is: it equals Table 8's IB), kept apart.
    """
    survived = kept.dropna().index
    before = m.bias(base.reindex(survived), subsets.reindex(survived))
    before_all = m.bias(base, subsets)
    after_ib = m.bias(after, kept)
    return {"judge": judge, "ib_before": before.value, "ib_after": after_ib.value,
            "change": after_ib.value - before.value,
            "n_before": before.plus.n + before.minus.n,
            "n_after": after_ib.plus.n + after_ib.minus.n,
            "ib_before_all": before_all.value,
            "n_before_all": before_all.plus.n + before_all.minus.n}


def analyse_judge(judge: str, data: JudgeData, subsets: dict[str, pd.Series],
                  domain: pd.Series, equalised: dict[str, pd.Series] | None,
                  params: BirchParams) -> dict[str, list | pd.DataFrame]:
    """Every per-judge table row."""
    out: dict[str, Any] = {name: [] for name in ("table1", "irs_subsets", "bias", "table2",
                                                 "table4", "cds_curve", "domains",
                                                 "downsampling", "intervals", "tests")}
    index = subsets["ib"].index
    settings = params.inference
    table = inference.correctness_table(data.correct, subsets, index,
                                        equalised["ib"] if equalised else None)
    out["intervals"].append(inference.bootstrap_table(
        table, resamples=settings.resamples, method=settings.interval,
        level=settings.level, seed=inference.judge_seed(settings.seed, judge)
    ).assign(judge=judge))
    out["tests"] += inference.mcnemar_rows(judge, data.correct, subsets, index)
    base = data.correct["base"]
    base_ib = m.bias(base, subsets["ib"])
    if "no_image" in data.correct:
        irs = m.image_reliance(base, data.correct["no_image"])
        out["table1"].append({"judge": judge, "acc_image": irs.with_image.value,
                              "acc_no_image": irs.without_image.value, "irs": irs.value,
                              "n_pairs": irs.n_pairs})
        for subset in ("IDS", "CDS"):
            part = m.image_reliance(base, data.correct["no_image"], subsets["ib"], subset)
            out["irs_subsets"].append({"judge": judge, "subset": subset, "irs": part.value,
                                       "n_pairs": part.n_pairs})
    for variant, correct in data.correct.items():
        if variant == "equalised":
            continue
        rows, draws = bias_rows(judge, variant, correct, subsets, params.downsampling)
        out["bias"] += rows
        out["downsampling"].append(draws)
    for method in METHODS:
        if method in data.correct:
            row = method_row(judge, method, data.correct[method], subsets)
            out["table4"].append(row)
    if equalised is not None and "equalised" in data.correct:
        out["table2"].append(table2_row(judge, base, data.correct["equalised"],
                                        subsets["ib"], equalised["ib"]))
    spec = params.downsampling
    if base_ib.plus.n and base_ib.minus.n:
        curve = m.cds_ratio_curve(base, subsets["ib"], ratios=spec.cds_ratios,
                                  draws=spec.draws, seed=spec.seed)
        out["cds_curve"].append(curve.assign(judge=judge))
    out["domains"].append(m.per_domain(base, subsets["ib"], subsets["lb"], domain)
                          .assign(judge=judge))
    return out


# The columns of the tables built row by row: written even when no row is (a variant not
# run, a subset too small to down-sample on a small real benchmark), so the report and the
# figures read the same table shape from every dataset.
ROW_COLUMNS = {
    "table1": ["judge", "acc_image", "acc_no_image", "irs", "n_pairs"],
    "irs_subsets": ["judge", "subset", "irs", "n_pairs"],
    "bias": ["judge", "variant", "statistic", "value", "acc_plus", "acc_minus", "n_plus",
             "n_minus", "ds_mean", "ds_sd", "ds_min", "ds_max", "ds_n_draws"],
    "table2": ["judge", "ib_before", "ib_after", "change", "n_before", "n_after",
               "ib_before_all", "n_before_all"],
    "table4": ["judge", "method", "acc", "acc_ids", "acc_cds", "ib", "lb", "balanced",
               "acc_all", "n_ids", "n_cds"],
    "intervals": list(inference.INTERVAL_COLUMNS),
    "tests": list(inference.TEST_COLUMNS),
}


def _frame(parts: list, columns: list[str] | None = None) -> pd.DataFrame:
    """The rows and frames of one table; with `columns`, at least those, in that order."""
    frames = [p if isinstance(p, pd.DataFrame) else pd.DataFrame([p]) for p in parts]
    frames = [f for f in frames if not f.empty]
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if columns is None:
        return out
    return out.reindex(columns=[*columns, *(c for c in out.columns if c not in columns)])


def dataset_results(params: BirchParams, pairs: pd.DataFrame, labels: pd.DataFrame,
                    verdicts: pd.DataFrame, equalised: pd.DataFrame | None,
                    reference: pd.Series | None
                    ) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """Every table (tables.TABLES) and metrics.json of one dataset from the view of the
    ``birch:`` block `params`: `pairs` (index pair_id), the labeller's `labels`, every
    judge's `verdicts`, the `equalised` pairs (None without that variant) and the human
    informativeness labels of ``reference_labels`` (None: none given)."""
    preference = pairs["preference"]
    informative, label_stats = informativeness_labels(labels)
    subsets = {"ib": m.informativeness_subsets(preference, informative.reindex(pairs.index)),
               "lb": m.length_subsets(preference, pairs["answer_a"], pairs["answer_b"])}
    equalised_subsets = None
    if equalised is not None:
        eq = equalised.set_index("pair_id", drop=False)
        equalised_subsets = {"ib": m.informativeness_subsets(
            eq["preference"], informative.reindex(eq.index))}
    failed = failed_calls(verdicts, "judge") | failed_calls(labels, "labeller")
    tables: dict[str, list] = {}
    for judge in params.models:
        data = JudgeData(verdicts[verdicts["judge"] == judge], preference)
        for name, rows in analyse_judge(judge, data, subsets, pairs["domain"],
                                        equalised_subsets, params).items():
            tables.setdefault(name, []).extend(rows if isinstance(rows, list) else [rows])
    result = {name: _frame(rows, ROW_COLUMNS.get(name)) for name, rows in tables.items()}
    result["tests"] = inference.with_fdr(result["tests"], params.inference.alpha)
    result["accuracy"] = accuracy_table(verdicts, preference)
    result["table7"] = labeller_table(params.labeller, reference, pairs, informative,
                                      label_stats)
    return result, (metrics(params, pairs, subsets, label_stats, result, equalised)
                    | {"failed_calls": failed})


def labeller_table(labeller: str, reference: pd.Series | None, pairs: pd.DataFrame,
                   informative: pd.Series, label_stats: Mapping[str, int]) -> pd.DataFrame:
    """Table 7 analogue: the labeller against human labels (`reference`, read from the
    ``reference_labels`` file) or, on the synthetic default, against the planted
    informativeness; with its consistency across orders."""
    if reference is not None:
        truth, against = reference, "reference_labels file"
    else:
        truth, against = planted_informativeness(pairs), "planted informativeness"
    row: dict[str, Any] = {"labeller": labeller, "against": against, **label_stats}
    if truth is None:
        row |= {"against": "none (no reference labels)", "match_rate": np.nan,
                "kappa": np.nan, "n": 0}
    else:
        row |= m.labeller_agreement(informative.reindex(truth.index), truth)
    return pd.DataFrame([row])


def metrics(params: BirchParams, pairs: pd.DataFrame, subsets: dict[str, pd.Series],
            label_stats: Mapping[str, int], result: Mapping[str, pd.DataFrame],
            equalised: pd.DataFrame | None) -> dict[str, Any]:
    """The headline numbers per judge (with their paired bootstrap intervals, ``[low,
    high]``) and every count of what was dropped."""
    base = result["table4"].set_index(["judge", "method"])
    intervals = result["intervals"].set_index(["judge", "variant", "statistic", "versus"])
    per_judge = {}
    for judge in params.models:
        row = {"base": _clean(base.loc[(judge, "base")].to_dict())}
        if (judge, "birch") in base.index:
            row["birch"] = _clean(base.loc[(judge, "birch")].to_dict())
        irs = result["table1"]
        if not irs.empty:
            row |= _clean({"irs": float(irs.set_index("judge").loc[judge, "irs"])})
        row["intervals"] = {
            name: _clean({"low": intervals.loc[key, "low"], "high": intervals.loc[key, "high"]})
            for name, key in (("irs", (judge, "base", "irs", "")),
                              ("ib", (judge, "base", "ib", "")),
                              ("birch_gain_acc", (judge, "birch", "acc", "base")),
                              ("birch_gain_ib", (judge, "birch", "ib", "base")))
            if key in intervals.index}
        per_judge[judge] = row
    counts = {"pairs": len(pairs), "human_ties": int((pairs["preference"] == "tie").sum()),
              "ids": int((subsets["ib"] == "IDS").sum()),
              "cds": int((subsets["ib"] == "CDS").sum()),
              "equal_length": int(subsets["lb"].isna().sum()
                                  - (pairs["preference"] == "tie").sum()),
              "labels": dict(label_stats)}
    if equalised is not None:
        counts["equalised_pairs"] = len(equalised)
    tests = result["tests"]
    return {"judges": per_judge, "counts": counts,
            "cds_ratio": m.observed_cds_ratio(subsets["ib"]),
            "labeller": params.labeller,
            "tests": {"n": len(tests), "significant": int(tests["significant"].sum())
                      if len(tests) else 0, "fdr": params.inference.alpha},
            "interval": f"paired bootstrap {params.inference.interval}, "
                        f"{params.inference.level:.0%}"}


def _clean(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and np.isnan(v)
                else v.item() if isinstance(v, np.generic) else v)
            for k, v in row.items() if k not in ("judge", "method")}
