"""Pomms' readings of the philautia panel (seed 000 §6.3, Tables 1 and 2, Appendix B.3
Fig. D): the formulas that put a fitted `judgebias.studies.pomms.estimator.Pomms` beside
the single evaluators.

* `pomms_phi_tilde`: Phi-tilde recomputed with Pomms as one more *evaluator* column
  (Fig. D; Table 2's Phi~_Pomms(G(i)) row). Pomms judges every generator's captions but
  generates none, so the matrix is M generators x (M + 1) evaluators; it reuses
  `philautia.score_tensor`, `phi_matrix` and `phi_tilde`. Adding a column changes every
  row's standardisation, which is why seed 000 Table 1 notes that the single evaluators'
  philautia scores (from Fig. 4 (ii), without Pomms) "are not identical to those
  calculated from Phi~ containing Pomms".
* `ensemble_philautia` and `most_extreme`: the two readings of that column (the
  ensemble's philautia score is a decision documented in the estimator module).
* `table1` and `table2` (a typed `Table2` result): the report tables (see their
  docstrings for columns).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from judgebias.stats.agreement import agreement
from judgebias.studies.philautia.measures import (
    phi_matrix,
    phi_tilde,
    philautia_scores,
    score_tensor,
)

if TYPE_CHECKING:
    from judgebias.studies.pomms.estimator import Pomms

POMMS = "Pomms"  # the ensemble's column beside the evaluators'


def caption_features(scores_long: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """The philautia long table as one row per caption (image_id, generator).

    Columns: ``image_id``, ``generator`` and one score column per evaluator (``models``
    order): evaluator j's score of generator i's caption of image k, the input Pomms
    needs to score that caption. Built with `philautia.score_tensor` (same validation:
    unknown names, duplicates, scores outside [0, 1]); absent cells are NaN.
    """
    models = list(models)
    image_ids, tensor = score_tensor(scores_long, models)
    n, m, _ = tensor.shape
    frame = pd.DataFrame(tensor.reshape(n * m, m), columns=models)
    frame.insert(0, "generator", np.tile(np.asarray(models, dtype=object), n))
    frame.insert(0, "image_id", np.repeat(image_ids, m))
    return frame


def ensemble_caption_scores(
    pomms: Pomms,
    scores_long: pd.DataFrame,
    models: Sequence[str],
    k: int | None = None,
    *,
    features: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Pomms' score of every caption of the philautia table: (image_id, generator, score).

    ``k`` = None uses the fitted ensemble (``members_``), else step k's. Every member must
    be one of the philautia evaluators. A caption with a NaN member score gets NaN.
    ``features`` (the output of `caption_features`) avoids rebuilding it in a loop.
    """
    members = pomms.members_ if k is None else pomms.selection_order_[:k]
    absent = [m for m in members if m not in list(models)]
    if absent:
        raise ValueError(f"ensemble members {absent} are not evaluators of the score table")
    if features is None:
        features = caption_features(scores_long, models)
    pred = pomms.predict(features) if k is None else pomms.predict_step(features, k)
    return pd.DataFrame(
        {"image_id": features["image_id"], "generator": features["generator"], "score": pred}
    )


def _ensemble_column(
    ensemble_scores: pd.DataFrame, models: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Mean ensemble score per generator (NaN excluded) and the number of valid captions."""
    missing = [c for c in ("image_id", "generator", "score") if c not in ensemble_scores]
    if missing:
        raise ValueError(f"ensemble score table lacks columns {missing}")
    generators = ensemble_scores["generator"].astype(str)
    unknown = sorted(set(generators) - set(models))
    if unknown:
        raise ValueError(f"generators not in models: {unknown}")
    keys = pd.DataFrame({"image_id": ensemble_scores["image_id"].astype(str), "g": generators})
    if keys.duplicated().any():
        raise ValueError("duplicate (image_id, generator) rows in the ensemble scores")
    score = pd.Series(ensemble_scores["score"].to_numpy(dtype=float), index=generators.values)
    grouped = score.groupby(level=0)
    return (
        grouped.mean().reindex(list(models)).to_numpy(dtype=float),
        grouped.count().reindex(list(models)).fillna(0).to_numpy(dtype=int),
    )


def with_ensemble_column(
    phi: np.ndarray,
    models: Sequence[str],
    ensemble_scores: pd.DataFrame,
    ddof: int,
    name: str,
) -> pd.DataFrame:
    """Phi-tilde of the panel's Phi matrix with the ensemble's scores as one more
    evaluator column `name` (Fig. D), standardised as `phi_tilde` does."""
    models = list(models)
    if name in models:
        raise ValueError(f"the ensemble column name {name!r} is also a model name")
    column, _ = _ensemble_column(ensemble_scores, models)
    phi_t = phi_tilde(np.column_stack([phi, column]), ddof=ddof)
    return pd.DataFrame(
        phi_t,
        index=pd.Index(models, name="generator"),
        columns=pd.Index([*models, name], name="evaluator"),
    )


def pomms_phi_tilde(
    scores_long: pd.DataFrame,
    models: Sequence[str],
    ensemble_scores: pd.DataFrame,
    ddof: int = 0,
    *,
    name: str = POMMS,
) -> pd.DataFrame:
    """Phi-tilde with the ensemble as an extra evaluator column (seed 000 Fig. D, Table 2).

    ``scores_long``: the philautia per-image long table (image_id, generator, evaluator,
    score). ``ensemble_scores``: (image_id, generator, score), the ensemble's score of
    every caption (`ensemble_caption_scores`). Phi (M x M, `philautia.phi_matrix`) gets
    one more column, the ensemble's mean score per generator over images (NaN excluded),
    and the M x (M + 1) matrix is standardised column-wise then row-wise by
    `philautia.phi_tilde` (Algorithm 1 lines 6-7). Returns a DataFrame, index
    ``generator`` (``models``), columns ``evaluator`` (``models`` + ``name``).
    """
    _, tensor = score_tensor(scores_long, list(models))
    return with_ensemble_column(phi_matrix(tensor).phi, models, ensemble_scores, ddof, name)


def plain_phi_tilde(
    scores_long: pd.DataFrame, models: Sequence[str], ddof: int = 0
) -> pd.DataFrame:
    """Phi-tilde without the ensemble (seed 000 Fig. 4), as a labelled DataFrame."""
    models = list(models)
    _, tensor = score_tensor(scores_long, models)
    return pd.DataFrame(
        phi_tilde(phi_matrix(tensor).phi, ddof=ddof),
        index=pd.Index(models, name="generator"),
        columns=pd.Index(models, name="evaluator"),
    )


def ensemble_philautia(
    phi_t_with_pomms: pd.DataFrame,
    members: Sequence[str],
    weights: Sequence[float] | np.ndarray | Mapping[str, float] | None = None,
    *,
    column: str = POMMS,
) -> float:
    """The ensemble's own philautia score: mean Phi~_Pomms(G(i)) over its members i.

    Seed 000 Table 1 prints a Phi-score per Pomms row without defining it (an ensemble
    generates no captions, so Phi~_Pomms(Pomms) does not exist; see the module
    docstring). Defined here as the mean of the ensemble column's entries for the member
    models' captions; with one member, that member's entry. ``weights`` (a sequence
    aligned with ``members`` or a name -> weight mapping, e.g. the ensemble's
    ``coef_``) gives the mean weighted by their absolute values. A member with a NaN
    entry makes the result NaN (nothing is silently left out).
    """
    members = list(members)
    if not members:
        raise ValueError("members is empty")
    absent = [m for m in members if m not in phi_t_with_pomms.index]
    if absent:
        raise ValueError(f"members {absent} are not generators of Phi-tilde")
    values = phi_t_with_pomms.loc[members, column].to_numpy(dtype=float)
    if weights is None:
        return float(np.mean(values))
    if isinstance(weights, Mapping):
        w = np.abs(np.asarray([weights[m] for m in members], dtype=float))
    else:
        w = np.abs(np.asarray(weights, dtype=float).ravel())
        if w.size != len(members):
            raise ValueError("weights must have one entry per member")
    if w.sum() == 0:
        raise ValueError("weights are all zero")
    return float(np.sum(w * values) / np.sum(w))


def extremes(phi_t: pd.DataFrame) -> pd.DataFrame:
    """Each evaluator column's most extreme entry: max_i |Phi~_j(G(i))|.

    Seed 000 §6.3 / Table 2 and Appendix B.3 read Pomms against "the most extreme scores
    from each Evaluator". Returns one row per column of ``phi_t`` (index ``evaluator``):
    ``generator`` (where the extreme is), ``value`` (signed) and ``abs``. NaN entries are
    ignored; an all-NaN column gives NaN.
    """
    rows = []
    for col in phi_t.columns:
        values = phi_t[col].to_numpy(dtype=float)
        if np.isnan(values).all():
            rows.append({"generator": None, "value": np.nan, "abs": np.nan})
            continue
        i = int(np.nanargmax(np.abs(values)))
        rows.append({"generator": phi_t.index[i], "value": values[i], "abs": abs(values[i])})
    return pd.DataFrame(rows, index=pd.Index([str(c) for c in phi_t.columns], name="evaluator"))


def most_extreme(phi_t_with_pomms: pd.DataFrame, column: str = POMMS) -> float:
    """max_i |Phi~_Pomms(G(i))| over all generators (seed 000 Table 2's reading)."""
    return float(extremes(phi_t_with_pomms[[column]])["abs"].iloc[0])


# --------------------------------------------------------------------------------------
# Report tables (seed 000 Tables 1 and 2)
# --------------------------------------------------------------------------------------


def _tau_columns(
    frame: pd.DataFrame, labels: Sequence[str], human_column: str, splits: Sequence[str] | None
) -> pd.DataFrame:
    """Wide tau columns ``<dataset>[/<split>]/<tau_b|tau_c|n|n_missing>`` per label."""
    if "dataset" not in frame.columns:
        raise ValueError("the judgement table needs a 'dataset' column")
    has_split = "split" in frame.columns
    if has_split and splits is not None:
        frame = frame[frame["split"].isin(list(splits))]
        if frame.empty:
            raise ValueError(f"the judgement table has no rows in the splits {list(splits)}")
    long = agreement(frame, list(labels), human_column=human_column, by="dataset")
    datasets = list(dict.fromkeys(frame["dataset"]))
    if has_split:
        present = list(dict.fromkeys(frame["split"]))
        order = [s for s in splits if s in present] if splits is not None else present
        groups = [(d, s) for d in datasets for s in order]
    else:
        groups = [(d, None) for d in datasets]
    out = pd.DataFrame(index=pd.Index(list(labels), name="label"))
    for dataset, split in groups:
        sel = long["dataset"] == dataset
        if split is not None:
            sel &= long["split"] == split
        part = long[sel].set_index("metric")
        if part.empty:
            continue
        prefix = dataset if split is None else f"{dataset}/{split}"
        for stat in ("tau_b", "tau_c", "n", "n_missing"):
            out[f"{prefix}/{stat}"] = part[stat].reindex(out.index)
    return out


def table1(
    pomms: Pomms,
    judgements: pd.DataFrame,
    scores_long: pd.DataFrame,
    models: Sequence[str],
    *,
    human_column: str = "human_score",
    splits: Sequence[str] | None = ("val", "test"),
    baselines: Sequence[str] | None = None,
    ddof: int = 0,
    name: str = POMMS,
) -> pd.DataFrame:
    """Seed 000 Table 1 analogue: single evaluators vs each Pomms selection step.

    ``judgements``: rating-level table (one row per human rating, see
    `judgebias.stats.agreement`) with ``dataset``, optionally ``split``, the human column and
    one score column per evaluator (the Pomms features), as `judgebias.studies.pomms.data`
    builds it (split labels "train" | "val" | "test"). tau is computed per dataset and
    split in ``splits`` (default validation and test; None: every split present, training
    included; §6.3 reports the test split). ``scores_long``: the philautia per-image long
    table.

    Rows: first each baseline evaluator (default: every Pomms feature), then one row per
    step k of `Pomms.selection_order_`. Columns:

    * ``kind`` ("evaluator" | "pomms"), ``label`` (evaluator name or ``"Pomms (k)"``),
      ``step`` (k; <NA> for evaluators), ``added``, ``members`` (comma-joined),
      ``n_members``, ``selected`` (the step chosen on validation);
    * ``<dataset>[/<split>]/tau_b``, ``.../tau_c``, ``.../n``, ``.../n_missing`` for
      each dataset (and split);
    * ``phi_score``: an evaluator's philautia score Phi~_j(j) from the plain Phi-tilde
      (Fig. 4; NaN if it is not a philautia model), or the k-step ensemble's
      `ensemble_philautia` from Phi-tilde recomputed with that ensemble as the extra
      column (mean over members); ``phi_score_weighted``: the same weighted by
      |coef| (evaluators: equal to ``phi_score``);
    * ``most_extreme``: max_i |Phi~_j(G(i))| of the evaluator's column in the plain
      Phi-tilde, or of the ensemble column in its own Phi-tilde.
    """
    models = list(models)
    features_in = [str(f) for f in pomms.feature_names_in_]
    baselines = features_in if baselines is None else list(baselines)
    n_steps = len(pomms.step_estimators_)
    step_labels = [f"{name} ({k})" for k in range(1, n_steps + 1)]
    clash = set(step_labels) & set(judgements.columns)
    if clash:
        raise ValueError(f"judgement table already has columns {sorted(clash)}")
    scored = judgements.copy()
    for k, label in enumerate(step_labels, start=1):
        scored[label] = pomms.predict_step(judgements, k)
    taus = _tau_columns(scored, [*baselines, *step_labels], human_column, splits)

    _, tensor = score_tensor(scores_long, models)
    phi = phi_matrix(tensor).phi
    plain = pd.DataFrame(phi_tilde(phi, ddof=ddof), index=models, columns=models)
    plain_extremes = extremes(plain)
    diag = pd.Series(philautia_scores(plain.to_numpy()), index=models)
    features = caption_features(scores_long, models)

    rows: list[dict[str, Any]] = []
    for evaluator in baselines:
        phi_score = float(diag.get(evaluator, np.nan))
        rows.append(
            {
                "kind": "evaluator",
                "label": evaluator,
                "step": pd.NA,
                "added": None,
                "members": evaluator,
                "n_members": 1,
                "selected": False,
                "phi_score": phi_score,
                "phi_score_weighted": phi_score,
                "most_extreme": (
                    float(plain_extremes.loc[evaluator, "abs"])
                    if evaluator in plain_extremes.index
                    else np.nan
                ),
            }
        )
    for k, ((members, est), label) in enumerate(
        zip(pomms.step_estimators(), step_labels, strict=True), start=1
    ):
        ens = ensemble_caption_scores(pomms, scores_long, models, k, features=features)
        phi_t = with_ensemble_column(phi, models, ens, ddof, name)
        rows.append(
            {
                "kind": "pomms",
                "label": label,
                "step": k,
                "added": members[-1],
                "members": ",".join(members),
                "n_members": k,
                "selected": k == pomms.n_members_,
                "phi_score": ensemble_philautia(phi_t, members, column=name),
                "phi_score_weighted": ensemble_philautia(
                    phi_t, members, np.asarray(est.coef_, dtype=float), column=name
                )
                if np.abs(est.coef_).sum() > 0
                else np.nan,
                "most_extreme": most_extreme(phi_t, name),
            }
        )
    table = pd.DataFrame(rows)
    table["step"] = table["step"].astype("Int64")
    head = ["kind", "label", "step", "added", "members", "n_members", "selected"]
    tail = ["phi_score", "phi_score_weighted", "most_extreme"]
    table = table[head].join(taus.reset_index(drop=True)).join(table[tail])
    return table


@dataclass(frozen=True)
class Table2:
    """Seed 000 Table 2 analogue (`table2`): the per-generator table and its summary.

    Attributes
    ----------
    table : DataFrame
        One row per generator, see `table2`.
    k : int
        The ensemble's step (number of members).
    members : list of str
        Its members.
    select : str
        The rule that chose ``k`` (`Pomms` ``select``, or "given" when ``k`` was passed).
    ensemble_philautia : float
        `ensemble_philautia` of the ensemble.
    pomms_most_extreme : float
        max_i |Phi~_Pomms(G(i))|, and ``pomms_most_extreme_generator`` its generator.
    pomms_most_extreme_generator : str
    min_evaluator_most_extreme : float
        The paper's "smallest value among the most extreme scores from each Evaluator".
    min_abs_self : float
        min_i |Phi~_i(i)| (Appendix B.3's comparison).
    pomms_less_extreme : bool
        ``pomms_most_extreme < min_evaluator_most_extreme``. A reading, not a test: in
        worlds with no self-preference at all it is True in 43 of 60 data sets (and
        |ensemble_philautia| < min_abs_self in 45 of 60), because the ensemble column
        averages its members' noise (tests/pomms/test_pomms.py,
        test_less_extreme_reading_holds_where_there_is_nothing_to_reduce).
    """

    table: pd.DataFrame
    k: int
    members: list[str]
    select: str
    ensemble_philautia: float
    pomms_most_extreme: float
    pomms_most_extreme_generator: str
    min_evaluator_most_extreme: float
    min_abs_self: float
    pomms_less_extreme: bool

    def summary(self) -> dict[str, Any]:
        """The scalar fields as plain JSON-able values (for metrics.json)."""
        return {
            "k": int(self.k),
            "members": [str(m) for m in self.members],
            "select": self.select,
            "ensemble_philautia": float(self.ensemble_philautia),
            "pomms_most_extreme": float(self.pomms_most_extreme),
            "pomms_most_extreme_generator": str(self.pomms_most_extreme_generator),
            "min_evaluator_most_extreme": float(self.min_evaluator_most_extreme),
            "min_abs_self": float(self.min_abs_self),
            "pomms_less_extreme": bool(self.pomms_less_extreme),
        }


def table2(
    pomms: Pomms,
    scores_long: pd.DataFrame,
    models: Sequence[str],
    k: int | None = None,
    *,
    ddof: int = 0,
    name: str = POMMS,
) -> Table2:
    """Seed 000 Table 2 analogue: each model's philautia score vs Pomms' score of it.

    ``k`` picks the ensemble (None: the fitted one, ``n_members_``, chosen by the
    estimator's ``select``; the paper uses Pomms (iv), "the mixture with the smallest
    absolute philautia score", i.e. ``select="min_philautia"``). Returns a `Table2`
    whose ``table`` has one row per generator i (``models`` order), columns:

    * ``generator``; ``member`` (i is in the ensemble);
    * ``self``: Phi~_i(i), its philautia score from the plain Phi-tilde (no Pomms);
    * ``pomms``: Phi~_Pomms(G(i)) from Phi-tilde with the ensemble column (Fig. D);
    * ``abs_pomms_below_self``: |pomms| < |self|;
    * ``evaluator_most_extreme``: max_i' |Phi~_i(G(i'))|, evaluator i's most extreme
      entry in the plain Phi-tilde.
    """
    models = list(models)
    select = pomms.select if k is None else "given"
    k = pomms.n_members_ if k is None else int(k)
    members = pomms.selection_order_[:k]
    _, tensor = score_tensor(scores_long, models)
    phi = phi_matrix(tensor).phi
    plain = pd.DataFrame(phi_tilde(phi, ddof=ddof), index=models, columns=models)
    ens = ensemble_caption_scores(pomms, scores_long, models, k)
    with_pomms = with_ensemble_column(phi, models, ens, ddof, name)
    self_scores = philautia_scores(plain.to_numpy())
    pomms_col = with_pomms[name].to_numpy(dtype=float)
    plain_extremes = extremes(plain)
    table = pd.DataFrame(
        {
            "generator": models,
            "member": [m in members for m in models],
            "self": self_scores,
            "pomms": pomms_col,
            "abs_pomms_below_self": np.abs(pomms_col) < np.abs(self_scores),
            "evaluator_most_extreme": plain_extremes["abs"].to_numpy(dtype=float),
        }
    )
    pomms_extreme = extremes(with_pomms[[name]]).iloc[0]
    min_evaluator = float(np.nanmin(plain_extremes["abs"].to_numpy(dtype=float)))
    return Table2(
        table=table,
        k=k,
        members=list(members),
        select=select,
        ensemble_philautia=ensemble_philautia(with_pomms, members, column=name),
        pomms_most_extreme=float(pomms_extreme["abs"]),
        pomms_most_extreme_generator=str(pomms_extreme["generator"]),
        min_evaluator_most_extreme=min_evaluator,
        min_abs_self=float(np.nanmin(np.abs(self_scores))),
        pomms_less_extreme=bool(float(pomms_extreme["abs"]) < min_evaluator),
    )
