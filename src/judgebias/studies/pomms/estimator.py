"""Pomms: an ensemble of MLLM evaluators with less model-specific preference bias.

Implements seed ``000_dd1ddac0ce03ecfb.txt`` §4.2 (Pomms), its validation in §6.3 (Tables
1 and 2) and Appendix B.3 / Fig. D:

* `Pomms`, a scikit-learn regressor: forward sequential feature selection (SFS) over the
  evaluators with an Elastic Net meta-learner (§4.2: "The sequential feature selection
  algorithm (SFS) is used for the model selection ... we employ a lightweight meta-learner
  (e.g., Elastic Net)"). §6.3 Setup: trained on the training split (Nebula train), model
  selection on the validation split, evaluated on the test split, with Kendall tau-b and
  tau-c (`judgebias.agreement`).
* `pomms_phi_tilde`: Phi-tilde recomputed with Pomms as one more *evaluator* column
  (Fig. D; Table 2's Phi~_Pomms(G(i)) row). Pomms judges every generator's captions but
  generates none, so the matrix is M generators x (M + 1) evaluators; it reuses
  `philautia.score_tensor`, `phi_matrix` and `phi_tilde`. Adding a column changes every
  row's standardisation, which is why seed 000 Table 1 notes that the single evaluators'
  philautia scores (from Fig. 4 (ii), without Pomms) "are not identical to those
  calculated from Phi~ containing Pomms".
* `ensemble_philautia` and `most_extreme`: the two readings of that column.
* `table1` and `table2`: the report tables (see their docstrings for columns).

Decision: the philautia score of an ensemble. Seed 000 Table 1 prints a Phi-score for
every Pomms row (e.g. 0.15 for Pomms (iv)) but the paper never defines it: the philautia
score Phi~_i(i) (§4.1) needs a model that is both generator i and evaluator i, and an
ensemble generates no captions, so Phi~_Pomms(Pomms) does not exist. Nor can the printed
number be recovered from Table 2 (the Pomms (iv) row there): the mean of Phi~_Pomms(G(i))
over its five members is (0.23 + 0.34 + 0.01 - 0.90 + 0.67) / 5 = 0.07, the mean of their
absolute values 0.43, the mean of the whole Pomms row 0.06 -- none is 0.15. Here the
ensemble's philautia score is *defined* as the mean of Phi~_Pomms(G(i)) over the
ensemble's member models i: the ensemble "speaks" through its members, so its
self-preference is its preference for its members' captions. With one member it is that
member's entry in the Pomms column. ``weights`` (e.g. ``|coef_|``) gives a weighted mean
instead; the plain mean is the default. The paper's own Table 2 reading, "even the most
extreme score given by Pomms ... is smaller in magnitude than the smallest value among the
most extreme scores from each Evaluator", is `most_extreme` (max_i |Phi~_Pomms(G(i))|
over all generators), compared with each evaluator's max_i |Phi~_j(G(i))|.

Missing values: a NaN score is a failed or unparseable judge answer. Training rows with a
NaN in any evaluator column or in the human score are dropped (counted in `n_dropped_`);
a prediction needs every member's score, so a row with a NaN member score gets a NaN
prediction (never imputed), and `pomms_phi_tilde` excludes such captions from the Pomms
column's mean, exactly as `phi_matrix` excludes NaN from every other cell.

Note on Table 1's first row: the paper's first Pomms row already has two members ("(i)
GPT-4o and InternVL2.5-8B"); SFS here starts at one member, so the k = 1 row is a
rescaled single evaluator (same tau as that evaluator when its coefficient is positive).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.feature_selection import SequentialFeatureSelector
from sklearn.linear_model import ElasticNet
from sklearn.metrics import make_scorer
from sklearn.model_selection import PredefinedSplit
from sklearn.utils.validation import check_is_fitted

from judgebias.agreement import agreement, kendall
from judgebias.studies.philautia.analysis import (
    phi_matrix,
    phi_tilde,
    philautia_scores,
    score_tensor,
)

SCORINGS = ("tau_b", "tau_c")
POMMS = "Pomms"


def _tau_score(y_true: np.ndarray, y_pred: np.ndarray, variant: str = "b") -> float:
    """Kendall tau of predictions vs human scores, for SFS's scorer.

    An undefined tau (constant predictions: the Elastic Net shrank every coefficient to 0)
    scores -inf, so SFS never prefers such a candidate and its ``max`` is not confused by
    NaN; the reported tables use `judgebias.agreement.kendall`, which keeps it NaN.
    """
    result = kendall(y_pred, y_true)
    value = result[f"tau_{variant}"]
    return float(value) if np.isfinite(value) else float("-inf")


def tau_scorer(scoring: str = "tau_b") -> Any:
    """A scikit-learn scorer: Kendall tau-b or tau-c of ``predict`` against ``y``."""
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}")
    return make_scorer(_tau_score, variant=scoring[-1])


class Pomms(RegressorMixin, BaseEstimator):
    """Pomms (seed 000 §4.2): SFS-selected evaluators combined by an Elastic Net.

    Parameters
    ----------
    max_features : int or None
        Largest ensemble considered (SFS runs k = 1 .. max_features); None = all
        evaluators.
    alpha, l1_ratio, positive, random_state
        Passed to `sklearn.linear_model.ElasticNet`, the meta-learner (§4.2). ``alpha``
        is on the scale of the inputs: scores in [0, 1] (seed 000 §5 normalises the 0-100
        judge scale to [0, 1]).
    scoring : "tau_b" or "tau_c"
        Validation criterion, for both SFS's greedy choice and the number of members:
        Kendall tau of the predictions against the human scores on the validation rows
        (§6.3 uses tau-b and tau-c as metrics).

    Fitted attributes
    -----------------
    feature_names_in_, n_features_in_ : evaluator (column) names of ``X``.
    selection_order_ : list[str], the greedy SFS order (step k adds
        ``selection_order_[k - 1]``).
    steps_ : DataFrame, one row per step: ``step``, ``added``, ``members`` (comma-joined),
        ``validation_tau_b``, ``validation_tau_c``, ``n_validation``, ``selected``.
    step_estimators_ : list of ElasticNet, step k's meta-learner fitted on the training
        rows with the first k members.
    n_members_, members_ : the chosen ensemble size (best validation score by
        ``scoring``; ties go to fewer members) and its members.
    estimator_, coef_, intercept_ : the chosen ElasticNet, fitted on the TRAINING rows
        only (validation rows serve model selection, §6.3), and its coefficients
        (aligned with ``members_``).
    n_dropped_, n_train_, n_validation_ : rows dropped for a NaN (any evaluator or the
        human score) and the training / validation rows used.
    """

    def __init__(
        self,
        max_features: int | None = None,
        alpha: float = 1e-3,
        l1_ratio: float = 0.5,
        positive: bool = False,
        scoring: str = "tau_b",
        random_state: int | None = 0,
    ) -> None:
        self.max_features = max_features
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.positive = positive
        self.scoring = scoring
        self.random_state = random_state

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN rows are dropped (fit) or predicted NaN
        return tags

    def _meta_learner(self) -> ElasticNet:
        return ElasticNet(
            alpha=self.alpha,
            l1_ratio=self.l1_ratio,
            positive=self.positive,
            random_state=self.random_state,
        )

    # ---------------------------------------------------------------------------------
    # fit
    # ---------------------------------------------------------------------------------

    def fit(self, X: pd.DataFrame, y: Any, validation: Any) -> Pomms:
        """Select the ensemble members by forward SFS and fit the Elastic Net.

        ``X``: DataFrame, one column per evaluator (scores in [0, 1]), one row per
        rating row or item. ``y``: human scores. ``validation``: boolean array, True for
        validation rows (model selection), False for training rows (§6.3).

        Greedy order: `SequentialFeatureSelector` (forward, ``cv=PredefinedSplit`` so
        every candidate set is fitted on the training rows and scored on the validation
        rows, scorer = Kendall tau) is run for k = 1 .. K - 1 (it refuses
        k = n_features); the sets are nested (checked) and step k's new feature is the
        one added. If K is all evaluators, the last step adds the one left. Each step's
        Elastic Net is then fitted on the training rows and scored on the validation
        rows (`steps_`); the best step by ``scoring`` (ties: fewer members) is chosen.
        """
        if self.scoring not in SCORINGS:
            raise ValueError(f"scoring must be one of {SCORINGS}, got {self.scoring!r}")
        if not isinstance(X, pd.DataFrame):
            raise TypeError("X must be a DataFrame whose columns are evaluator names")
        names = [str(c) for c in X.columns]
        if len(set(names)) != len(names):
            raise ValueError("X has duplicate column names")
        n_features = len(names)
        if n_features == 0:
            raise ValueError("X has no evaluator columns")
        values = X.to_numpy(dtype=float)
        target = np.asarray(y, dtype=float).ravel()
        is_val = np.asarray(validation)
        if is_val.dtype != bool:
            raise TypeError("validation must be a boolean array (True = validation row)")
        is_val = is_val.ravel()
        if not (len(values) == len(target) == len(is_val)):
            raise ValueError(
                f"X, y and validation differ in length: {len(values)}, {len(target)}, {len(is_val)}"
            )
        keep = ~np.isnan(values).any(axis=1) & ~np.isnan(target)
        values, target, is_val = values[keep], target[keep], is_val[keep]
        n_val = int(is_val.sum())
        if n_val < 2 or len(is_val) - n_val < 2:
            raise ValueError(
                f"need at least 2 complete training and 2 complete validation rows, got "
                f"{len(is_val) - n_val} and {n_val}"
            )
        if self.max_features is None:
            k_max = n_features
        elif int(self.max_features) < 1:
            raise ValueError("max_features must be >= 1 or None")
        else:
            k_max = min(int(self.max_features), n_features)

        self.feature_names_in_ = np.asarray(names, dtype=object)
        self.n_features_in_ = n_features
        self.n_dropped_ = int((~keep).sum())
        self.n_train_ = len(is_val) - n_val
        self.n_validation_ = n_val

        order = self._greedy_order(values, target, is_val, k_max)
        self.selection_order_ = [names[i] for i in order]

        train = ~is_val
        estimators: list[ElasticNet] = []
        rows = []
        for k in range(1, k_max + 1):
            cols = order[:k]
            est = self._meta_learner().fit(values[train][:, cols], target[train])
            estimators.append(est)
            tau = kendall(est.predict(values[is_val][:, cols]), target[is_val])
            rows.append(
                {
                    "step": k,
                    "added": names[order[k - 1]],
                    "members": ",".join(names[i] for i in cols),
                    "validation_tau_b": tau["tau_b"],
                    "validation_tau_c": tau["tau_c"],
                    "n_validation": tau["n"],
                }
            )
        steps = pd.DataFrame(rows)
        criterion = steps[f"validation_{self.scoring}"].to_numpy(dtype=float)
        criterion = np.where(np.isnan(criterion), -np.inf, criterion)
        best = int(np.argmax(criterion))  # first maximum = fewest members
        steps["selected"] = steps["step"] == best + 1

        self.steps_ = steps
        self.step_estimators_ = estimators
        self.n_members_ = best + 1
        self.members_ = self.selection_order_[: best + 1]
        self.estimator_ = estimators[best]
        self.coef_ = np.asarray(self.estimator_.coef_, dtype=float).copy()
        self.intercept_ = float(self.estimator_.intercept_)
        return self

    def _greedy_order(
        self, values: np.ndarray, target: np.ndarray, is_val: np.ndarray, k_max: int
    ) -> list[int]:
        """Column indices in the order forward SFS adds them (k_max of them)."""
        n_features = values.shape[1]
        cv = PredefinedSplit(np.where(is_val, 0, -1))
        scorer = tau_scorer(self.scoring)
        order: list[int] = []
        previous = np.zeros(n_features, dtype=bool)
        for k in range(1, min(k_max, n_features - 1) + 1):
            sfs = SequentialFeatureSelector(
                self._meta_learner(),
                n_features_to_select=k,
                direction="forward",
                scoring=scorer,
                cv=cv,
                tol=None,
            ).fit(values, target)
            support = sfs.get_support()
            added = np.flatnonzero(support & ~previous)
            if (previous & ~support).any() or added.size != 1:
                raise RuntimeError(f"SFS selections are not nested at k = {k}")
            order.append(int(added[0]))
            previous = support
        if len(order) < k_max:  # k_max == n_features: the last one is the one left
            order.extend(int(i) for i in np.flatnonzero(~previous))
        return order

    # ---------------------------------------------------------------------------------
    # predict
    # ---------------------------------------------------------------------------------

    def _member_matrix(self, X: Any, members: Sequence[str]) -> np.ndarray:
        if isinstance(X, pd.DataFrame):
            missing = [m for m in members if m not in X.columns]
            if missing:
                raise ValueError(f"X lacks the member columns {missing}")
            return X[list(members)].to_numpy(dtype=float)
        values = np.asarray(X, dtype=float)
        if values.ndim != 2 or values.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X must be a DataFrame or have {self.n_features_in_} columns in the "
                "order of feature_names_in_"
            )
        index = pd.Index(self.feature_names_in_).get_indexer(list(members))
        return values[:, index]

    def _predict_with(self, X: Any, members: Sequence[str], est: ElasticNet) -> np.ndarray:
        values = self._member_matrix(X, members)
        out = np.full(len(values), np.nan)
        complete = ~np.isnan(values).any(axis=1)
        if complete.any():
            out[complete] = est.predict(values[complete])
        return out

    def predict(self, X: Any) -> np.ndarray:
        """Ensemble score of each row from the members' columns (NaN if any is NaN).

        ``X``: DataFrame with (at least) the member columns, or an array whose columns
        follow ``feature_names_in_``. Non-member columns are ignored, NaN included.
        """
        check_is_fitted(self, "estimator_")
        return self._predict_with(X, self.members_, self.estimator_)

    def predict_step(self, X: Any, k: int) -> np.ndarray:
        """Prediction of step k's ensemble (the first k evaluators of the SFS order)."""
        check_is_fitted(self, "estimator_")
        if not 1 <= k <= len(self.step_estimators_):
            raise ValueError(f"k must be in 1..{len(self.step_estimators_)}, got {k}")
        return self._predict_with(X, self.selection_order_[:k], self.step_estimators_[k - 1])

    def step_estimators(self) -> list[tuple[list[str], ElasticNet]]:
        """(members, fitted ElasticNet) of every selection step k = 1, 2, ... (Table 1)."""
        check_is_fitted(self, "estimator_")
        return [
            (list(self.selection_order_[: k + 1]), est)
            for k, est in enumerate(self.step_estimators_)
        ]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Kendall tau (``self.scoring``) of `predict` against ``y``, NaN rows dropped.

        Replaces RegressorMixin's R^2: the validation criterion of §6.3 is rank agreement
        with the human scores, not squared error. ``sample_weight`` is not supported.
        """
        if sample_weight is not None:
            raise ValueError("Pomms.score does not support sample_weight")
        return float(kendall(self.predict(X), y)[self.scoring])


# --------------------------------------------------------------------------------------
# Phi-tilde with Pomms as an extra evaluator (Table 2 / Fig. D)
# --------------------------------------------------------------------------------------


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


def _with_pomms(
    phi: np.ndarray,
    models: Sequence[str],
    ensemble_scores: pd.DataFrame,
    ddof: int,
    name: str,
) -> pd.DataFrame:
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
    return _with_pomms(phi_matrix(tensor).phi, models, ensemble_scores, ddof, name)


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
    weights: Sequence[float] | Mapping[str, float] | None = None,
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
    `judgebias.agreement`) with ``dataset``, optionally ``split``, the human column and
    one score column per evaluator (the Pomms features), as `judgebias.data.judgements`
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
        phi_t = _with_pomms(phi, models, ens, ddof, name)
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


def table2(
    pomms: Pomms,
    scores_long: pd.DataFrame,
    models: Sequence[str],
    k: int | None = None,
    *,
    ddof: int = 0,
    name: str = POMMS,
) -> pd.DataFrame:
    """Seed 000 Table 2 analogue: each model's philautia score vs Pomms' score of it.

    ``k`` picks the ensemble (None: the fitted one, ``n_members_``; the paper uses
    Pomms (iv), the step with the smallest absolute Table 1 Phi-score). One row per
    generator i (``models`` order), columns:

    * ``generator``; ``member`` (i is in the ensemble);
    * ``self``: Phi~_i(i), its philautia score from the plain Phi-tilde (no Pomms);
    * ``pomms``: Phi~_Pomms(G(i)) from Phi-tilde with the ensemble column (Fig. D);
    * ``abs_pomms_below_self``: |pomms| < |self|;
    * ``evaluator_most_extreme``: max_i' |Phi~_i(G(i'))|, evaluator i's most extreme
      entry in the plain Phi-tilde.

    ``attrs`` hold the summary: ``k``, ``members``, ``ensemble_philautia``,
    ``pomms_most_extreme`` and its ``pomms_most_extreme_generator``,
    ``min_evaluator_most_extreme`` (the paper's "smallest value among the most extreme
    scores from each Evaluator"), ``min_abs_self`` (Appendix B.3's comparison) and
    ``pomms_less_extreme`` (pomms_most_extreme < min_evaluator_most_extreme).
    """
    models = list(models)
    k = pomms.n_members_ if k is None else int(k)
    members = pomms.selection_order_[:k]
    _, tensor = score_tensor(scores_long, models)
    phi = phi_matrix(tensor).phi
    plain = pd.DataFrame(phi_tilde(phi, ddof=ddof), index=models, columns=models)
    ens = ensemble_caption_scores(pomms, scores_long, models, k)
    with_pomms = _with_pomms(phi, models, ens, ddof, name)
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
    table.attrs = {
        "k": k,
        "members": list(members),
        "ensemble_philautia": ensemble_philautia(with_pomms, members, column=name),
        "pomms_most_extreme": float(pomms_extreme["abs"]),
        "pomms_most_extreme_generator": pomms_extreme["generator"],
        "min_evaluator_most_extreme": min_evaluator,
        "min_abs_self": float(np.nanmin(np.abs(self_scores))),
        "pomms_less_extreme": bool(float(pomms_extreme["abs"]) < min_evaluator),
    }
    return table
