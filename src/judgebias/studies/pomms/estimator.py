"""Pomms: an ensemble of MLLM evaluators with less model-specific preference bias.

Implements seed ``000_dd1ddac0ce03ecfb.txt`` §4.2 (Pomms), its validation in §6.3 (Tables
1 and 2) and Appendix B.3 / Fig. D:

* `Pomms`, a scikit-learn regressor: forward sequential feature selection (SFS) over the
  evaluators with an Elastic Net meta-learner (§4.2: "The sequential feature selection
  algorithm (SFS) is used for the model selection ... we employ a lightweight meta-learner
  (e.g., Elastic Net)"). §6.3 Setup: trained on the training split (Nebula train), model
  selection on the validation split (`validation_split`, the estimator's ``cv``),
  evaluated on the test split, with Kendall tau-b and tau-c (`judgebias.agreement`). The
  ensemble size is chosen by ``select``: the best validation tau, or Table 2's rule, the
  step whose ensemble has the smallest absolute philautia score (§6.3, "the mixture with
  the smallest absolute philautia score").
* `pomms_phi_tilde`: Phi-tilde recomputed with Pomms as one more *evaluator* column
  (Fig. D; Table 2's Phi~_Pomms(G(i)) row). Pomms judges every generator's captions but
  generates none, so the matrix is M generators x (M + 1) evaluators; it reuses
  `philautia.score_tensor`, `phi_matrix` and `phi_tilde`. Adding a column changes every
  row's standardisation, which is why seed 000 Table 1 notes that the single evaluators'
  philautia scores (from Fig. 4 (ii), without Pomms) "are not identical to those
  calculated from Phi~ containing Pomms".
* `ensemble_philautia` and `most_extreme`: the two readings of that column.
* `table1` and `table2` (a typed `Table2` result): the report tables (see their
  docstrings for columns).

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
``min_members`` (params: 2) keeps ``select`` from choosing it: under "min_philautia" a
lone judge without self-preference would win trivially (its philautia score is its own
diagonal entry, near 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.feature_selection import SequentialFeatureSelector
from sklearn.linear_model import ElasticNet
from sklearn.metrics import make_scorer
from sklearn.model_selection import PredefinedSplit, check_cv
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    check_array,
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from judgebias.agreement import agreement, kendall
from judgebias.studies.philautia.analysis import (
    phi_matrix,
    phi_tilde,
    philautia_scores,
    score_tensor,
)

SCORINGS = ("tau_b", "tau_c")
SELECTIONS = ("best_validation", "min_philautia")
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


def validation_split(is_validation: Any) -> PredefinedSplit:
    """The held-out scheme of seed 000 §6.3 as a ``cv`` for `Pomms`: one split, True =
    validation row (model selection), False = training row (fits the Elastic Net)."""
    mask = np.asarray(is_validation)
    if mask.dtype != bool:
        raise TypeError("is_validation must be a boolean array (True = validation row)")
    return PredefinedSplit(np.where(mask.ravel(), 0, -1))


class Pomms(RegressorMixin, BaseEstimator):
    """Pomms (seed 000 §4.2): SFS-selected evaluators combined by an Elastic Net.

    Forward sequential feature selection over the evaluator columns (§4.2: "The
    sequential feature selection algorithm (SFS) is used for the model selection ... we
    employ a lightweight meta-learner (e.g., Elastic Net)"), scored by Kendall tau on
    the held-out rows of ``cv`` (§6.3: trained on Nebula's training set, "the validation
    set for model selection"). SFS fixes the greedy order; ``select`` then picks how
    many of the first evaluators make the ensemble.

    Parameters
    ----------
    max_features : int or None, default=None
        Largest ensemble considered (SFS runs k = 1 .. max_features); None = all
        evaluators.
    alpha : float, default=1e-3
        Elastic Net penalty (`sklearn.linear_model.ElasticNet`, the meta-learner of
        §4.2), on the scale of the inputs: scores in [0, 1] (seed 000 §5 normalises the
        0-100 judge scale to [0, 1]).
    l1_ratio : float, default=0.5
        Elastic Net mixing parameter.
    positive : bool, default=False
        Constrain the Elastic Net's coefficients to be non-negative.
    scoring : {"tau_b", "tau_c"}, default="tau_b"
        Kendall tau variant of the predictions against ``y`` on the held-out rows: SFS's
        greedy criterion, ``select="best_validation"``'s criterion and `score` (§6.3
        reports tau-b and tau-c).
    cv : int, cross-validation generator or iterable, default=5
        The held-out scheme, as scikit-learn's ``cv`` (`sklearn.model_selection.check_cv`:
        an int is a `KFold`). The paper's scheme is one predefined split
        (`validation_split`, a `PredefinedSplit`): with a single split every step's
        Elastic Net is fitted on its training rows only (§6.3: the validation set serves
        model selection only); with several splits a step's held-out tau is the mean
        over the splits and its Elastic Net is refitted on every (complete) row.
    select : {"best_validation", "min_philautia"}, default="best_validation"
        How many SFS steps make the ensemble. "best_validation": the step with the best
        held-out ``scoring`` tau. "min_philautia": seed 000 §6.3 / Table 2's rule, "the
        mixture with the smallest absolute philautia score" (Pomms (iv), |0.15| <
        |-0.19| of Pomms (iii) in Table 1), where a step's philautia score is
        `ensemble_philautia` on Phi-tilde recomputed with that step's ensemble as an
        extra evaluator (`pomms_phi_tilde`); it needs ``caption_scores`` in `fit`. Ties
        go to fewer members either way.
    min_members : int, default=1
        Smallest ensemble ``select`` may choose (SFS still runs from one member, so
        ``steps_`` keeps every step). Seed 000 Table 1's Pomms rows start at two members
        ("(i) GPT-4o and InternVL2.5-8B"), and under "min_philautia" a one-member
        "ensemble" is just a single judge whose philautia score is its own entry, near 0
        for any judge without self-preference, so the rule would pick it trivially; 2
        follows the paper. Must not exceed the number of steps.
    ddof : {0, 1}, default=0
        Standard-deviation convention of Phi-tilde for ``select="min_philautia"``
        (`judgebias.studies.philautia.analysis.phi_tilde`).
    random_state : int, RandomState instance or None, default=0
        Passed to the Elastic Net.

    Attributes
    ----------
    n_features_in_ : int
        Number of evaluator columns seen in `fit`.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Evaluator names, when ``X`` is a DataFrame with string column names.
    selection_order_ : list of str
        The greedy SFS order: step k adds ``selection_order_[k - 1]`` (evaluator names,
        or ``"x<i>"`` for column i of an array).
    steps_ : DataFrame
        One row per step: ``step``, ``added``, ``members`` (comma-joined),
        ``validation_tau_b``, ``validation_tau_c``, ``n_validation``, ``philautia``
        (the step's ensemble philautia score; NaN without ``caption_scores``),
        ``selected``.
    step_estimators_ : list of ElasticNet
        Step k's fitted meta-learner (the first k members).
    n_members_ : int
        The chosen step (number of members), by ``select``.
    members_ : list of str
        The chosen ensemble's members.
    estimator_ : ElasticNet
        The chosen step's meta-learner.
    coef_ : ndarray of shape (n_members_,)
        Its coefficients, aligned with ``members_``.
    intercept_ : float
        Its intercept.
    n_splits_ : int
        Number of held-out splits of ``cv``.
    n_dropped_ : int
        Rows dropped for a NaN (in any evaluator column or in ``y``).
    n_train_ : int
        Rows the step estimators were fitted on.
    n_validation_ : int
        Held-out predictions behind each step's tau (summed over splits).

    See Also
    --------
    validation_split : the paper's predefined train / validation scheme as a ``cv``.
    pomms_phi_tilde : Phi-tilde with the ensemble as an extra evaluator (Fig. D).

    Notes
    -----
    A NaN score is a failed judge answer: rows with a NaN are dropped in `fit`, and a
    row with a NaN member score is predicted NaN (never imputed).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.random(200)
    >>> X = pd.DataFrame({"good": truth + 0.05 * rng.standard_normal(200),
    ...                   "noise": rng.random(200)})
    >>> cv = validation_split(np.arange(200) >= 150)
    >>> pomms = Pomms(cv=cv).fit(X, truth)
    >>> pomms.selection_order_
    ['good', 'noise']
    >>> pomms.steps_["members"].tolist()
    ['good', 'good,noise']
    >>> pomms.members_[0]
    'good'
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "max_features": [Interval(Integral, 1, None, closed="left"), None],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "positive": ["boolean"],
        "scoring": [StrOptions(set(SCORINGS))],
        "cv": ["cv_object"],
        "select": [StrOptions(set(SELECTIONS))],
        "min_members": [Interval(Integral, 1, None, closed="left")],
        "ddof": [Interval(Integral, 0, 1, closed="both")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        max_features: int | None = None,
        alpha: float = 1e-3,
        l1_ratio: float = 0.5,
        positive: bool = False,
        scoring: str = "tau_b",
        cv: Any = 5,
        select: str = "best_validation",
        min_members: int = 1,
        ddof: int = 0,
        random_state: Any = 0,
    ) -> None:
        self.max_features = max_features
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.positive = positive
        self.scoring = scoring
        self.cv = cv
        self.select = select
        self.min_members = min_members
        self.ddof = ddof
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

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, *, caption_scores: pd.DataFrame | None = None) -> Pomms:
        """Select the ensemble members by forward SFS and fit the Elastic Net.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_evaluators)
            One column per evaluator (scores in [0, 1]), one row per rating or item;
            NaN = failed answer (the row is dropped).
        y : array-like of shape (n_samples,)
            Human scores; NaN rows are dropped.
        caption_scores : DataFrame, optional
            The philautia long table (image_id, generator, evaluator, score in [0, 1];
            SelfEval-Cap in the paper) whose evaluators include every column of ``X``.
            Required for ``select="min_philautia"``; with it each step's ensemble
            philautia score is also reported in ``steps_`` under "best_validation".

        Returns
        -------
        self : Pomms
            The fitted estimator.

        Greedy order: `SequentialFeatureSelector` (forward, the same held-out splits,
        scorer = Kendall tau) is run for k = 1 .. K - 1 (it refuses k = n_features);
        the sets are nested (checked) and step k's new feature is the one added. If K
        is all evaluators, the last step adds the one left.
        """
        if y is None:
            raise ValueError("Pomms requires y to be passed, but the target y is None")
        if self.select == "min_philautia" and caption_scores is None:
            raise ValueError("select='min_philautia' needs caption_scores (the philautia "
                             "long table) in fit")
        values = validate_data(self, X, ensure_all_finite="allow-nan", dtype=float)
        target = column_or_1d(np.asarray(y, dtype=float), warn=True)
        check_consistent_length(values, target)
        n_features = values.shape[1]
        names = ([str(c) for c in self.feature_names_in_] if hasattr(self, "feature_names_in_")
                 else [f"x{i}" for i in range(n_features)])
        splits = list(check_cv(self.cv).split(values, target))
        if not splits:
            raise ValueError("cv yields no split: there are no validation rows")
        keep = ~np.isnan(values).any(axis=1) & ~np.isnan(target)
        position = np.cumsum(keep) - 1  # row index among the kept rows
        kept_splits = []
        for train, test in splits:
            train, test = position[train[keep[train]]], position[test[keep[test]]]
            if len(train) < 2 or len(test) < 2:
                raise ValueError(
                    f"each split needs at least 2 complete training and 2 complete "
                    f"validation rows, got {len(train)} and {len(test)}"
                )
            kept_splits.append((train, test))
        values, target = values[keep], target[keep]
        k_max = n_features if self.max_features is None else min(self.max_features, n_features)
        if self.min_members > k_max:
            raise ValueError(f"min_members={self.min_members} exceeds the {k_max} selection "
                             "steps (max_features or the number of evaluators)")

        self.n_splits_ = len(kept_splits)
        self.n_dropped_ = int((~keep).sum())
        order = self._greedy_order(values, target, kept_splits, k_max)
        self.selection_order_ = [names[i] for i in order]

        single = len(kept_splits) == 1
        fit_rows = kept_splits[0][0] if single else np.arange(len(target))
        self.n_train_ = len(fit_rows)
        self.n_validation_ = int(sum(len(test) for _, test in kept_splits))
        estimators: list[ElasticNet] = []
        rows = []
        for k in range(1, k_max + 1):
            cols = order[:k]
            taus = []
            for train, test in kept_splits:
                est = self._meta_learner().fit(values[train][:, cols], target[train])
                taus.append(kendall(est.predict(values[test][:, cols]), target[test]))
            if single:
                estimators.append(est)
            else:
                estimators.append(self._meta_learner().fit(values[:, cols], target))
            rows.append(
                {
                    "step": k,
                    "added": names[order[k - 1]],
                    "members": ",".join(names[i] for i in cols),
                    "validation_tau_b": float(np.mean([t["tau_b"] for t in taus])),
                    "validation_tau_c": float(np.mean([t["tau_c"] for t in taus])),
                    "n_validation": int(sum(t["n"] for t in taus)),
                }
            )
        steps = pd.DataFrame(rows)
        self.step_estimators_ = estimators
        steps["philautia"] = (
            self._step_philautia(caption_scores) if caption_scores is not None else np.nan
        )
        best = self._select(steps)
        steps["selected"] = steps["step"] == best + 1

        self.steps_ = steps
        self.n_members_ = best + 1
        self.members_ = self.selection_order_[: best + 1]
        self.estimator_ = estimators[best]
        self.coef_ = np.asarray(self.estimator_.coef_, dtype=float).copy()
        self.intercept_ = float(self.estimator_.intercept_)
        return self

    def _select(self, steps: pd.DataFrame) -> int:
        """Index (row of ``steps``) of the chosen step among those with at least
        ``min_members`` members: the smallest |philautia| or the best validation tau.
        `numpy.argmin` takes the first, i.e. the fewest members, among ties; a NaN
        criterion never wins."""
        if self.select == "min_philautia":
            criterion = np.abs(steps["philautia"].to_numpy(dtype=float))
        else:  # best validation tau = smallest negated tau
            criterion = -steps[f"validation_{self.scoring}"].to_numpy(dtype=float)
        eligible = steps["step"].to_numpy() >= self.min_members
        return int(np.argmin(np.where(eligible & ~np.isnan(criterion), criterion, np.inf)))

    def _step_philautia(self, caption_scores: pd.DataFrame) -> list[float]:
        """Each step's ensemble philautia score (`ensemble_philautia`) on the philautia
        table: Phi (M x M, §4.1) plus the step's ensemble column, standardised columns
        then rows (Algorithm 1 lines 6-7; Table 1's Phi-score of a Pomms row)."""
        models = list(dict.fromkeys([*caption_scores["generator"].astype(str),
                                     *caption_scores["evaluator"].astype(str)]))
        absent = [m for m in self.selection_order_ if m not in models]
        if absent:
            raise ValueError(f"evaluators {absent} are not evaluators of caption_scores")
        _, tensor = score_tensor(caption_scores, models)
        phi = phi_matrix(tensor).phi
        features = caption_features(caption_scores, models)
        out = []
        for k, est in enumerate(self.step_estimators_, start=1):
            members = self.selection_order_[:k]
            ens = features[["image_id", "generator"]].assign(
                score=self._predict_with(features, members, est))
            phi_t = _with_pomms(phi, models, ens, self.ddof, POMMS)
            out.append(ensemble_philautia(phi_t, members, column=POMMS))
        return out

    def _greedy_order(
        self,
        values: np.ndarray,
        target: np.ndarray,
        splits: list[tuple[np.ndarray, np.ndarray]],
        k_max: int,
    ) -> list[int]:
        """Column indices in the order forward SFS adds them (k_max of them)."""
        n_features = values.shape[1]
        scorer = tau_scorer(self.scoring)
        order: list[int] = []
        previous = np.zeros(n_features, dtype=bool)
        for k in range(1, min(k_max, n_features - 1) + 1):
            sfs = SequentialFeatureSelector(
                self._meta_learner(),
                n_features_to_select=k,
                direction="forward",
                scoring=scorer,
                cv=splits,
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
        if isinstance(X, pd.DataFrame) and hasattr(self, "feature_names_in_"):
            missing = [m for m in members if m not in X.columns]
            if missing:
                raise ValueError(f"X lacks the member columns {missing}")
            return X[list(members)].to_numpy(dtype=float)
        values = check_array(X, ensure_all_finite="allow-nan", dtype=float)
        if values.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {values.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )
        names = (list(self.feature_names_in_) if hasattr(self, "feature_names_in_")
                 else [f"x{i}" for i in range(self.n_features_in_)])
        return values[:, pd.Index(names).get_indexer(list(members))]

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
