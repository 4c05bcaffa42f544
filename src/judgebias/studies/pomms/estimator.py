"""Pomms: an ensemble of MLLM evaluators with less model-specific preference bias.

Implements seed ``000_dd1ddac0ce03ecfb.txt`` §4.2 (Pomms), its validation in §6.3 (Tables
1 and 2) and Appendix B.3 / Fig. D:

* `Pomms`, a scikit-learn regressor: forward sequential feature selection (SFS) over the
  evaluators with an Elastic Net meta-learner (§4.2: "The sequential feature selection
  algorithm (SFS) is used for the model selection ... we employ a lightweight meta-learner
  (e.g., Elastic Net)"). §6.3 Setup: trained on the training split (Nebula train), model
  selection on the validation split (`validation_split`, the estimator's ``cv``),
  evaluated on the test split, with Kendall tau-b and tau-c (`judgebias.stats.agreement`). The
  ensemble size is chosen by ``select``: the best validation tau, or Table 2's rule, the
  step whose ensemble has the smallest absolute philautia score (§6.3, "the mixture with
  the smallest absolute philautia score").
* Its readings beside the single evaluators (Phi-tilde with Pomms as one more evaluator
  column, Tables 1 and 2) are in `judgebias.studies.pomms.measures`.

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

from collections.abc import Sequence
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

from judgebias.stats.agreement import kendall
from judgebias.studies.philautia.measures import (
    phi_matrix,
    score_tensor,
)
from judgebias.studies.pomms.measures import (
    POMMS,
    caption_features,
    ensemble_philautia,
    with_ensemble_column,
)

SCORINGS = ("tau_b", "tau_c")
SELECTIONS = ("best_validation", "min_philautia")


def _tau_score(y_true: np.ndarray, y_pred: np.ndarray, variant: str = "b") -> float:
    """Kendall tau of predictions vs human scores, for SFS's scorer.

    An undefined tau (constant predictions: the Elastic Net shrank every coefficient to 0)
    scores -inf, so SFS never prefers such a candidate and its ``max`` is not confused by
    NaN; the reported tables use `judgebias.stats.agreement.kendall`, which keeps it NaN.
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
        (`judgebias.studies.philautia.measures.phi_tilde`).
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
            phi_t = with_ensemble_column(phi, models, ens, self.ddof, POMMS)
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

    # ---------------------------------------------------------------------------------
    # saved (judgebias.io.saved: JSON, loaded by judgebias.load)
    # ---------------------------------------------------------------------------------

    _saved_state_version: ClassVar[int] = 1

    def _saved_state(self) -> dict[str, Any]:
        """Everything the fitted ensemble is: its constructor params and its fitted
        attributes, each meta-learner as its coefficients and intercept (ElasticNet's
        predict is ``X @ coef_ + intercept_``), for `_from_saved_state`.

        ``cv`` is saved as an int, None or a `PredefinedSplit`'s folds (the pipeline's
        `validation_split`); ``random_state`` as an int or None. Others are refused
        rather than saved as something else."""
        check_is_fitted(self, "estimator_")
        params = self.get_params(deep=False)
        cv = params["cv"]
        if isinstance(cv, PredefinedSplit):
            params["cv"] = {"predefined_split": np.asarray(cv.test_fold)}
        elif not (cv is None or isinstance(cv, Integral)):
            raise TypeError(f"Pomms with cv={cv!r} cannot be saved: fit it with an int "
                            "or validation_split(...)")
        if not (params["random_state"] is None or isinstance(params["random_state"],
                                                             Integral)):
            raise TypeError("Pomms with a RandomState instance cannot be saved: fit it "
                            "with an int random_state")
        fitted = {name: getattr(self, name) for name in (
            "n_features_in_", "selection_order_", "steps_", "n_members_", "members_",
            "coef_", "intercept_", "n_splits_", "n_dropped_", "n_train_", "n_validation_")}
        if hasattr(self, "feature_names_in_"):
            fitted["feature_names_in_"] = self.feature_names_in_
        fitted["step_estimators_"] = [
            {"coef_": est.coef_, "intercept_": float(est.intercept_)}
            for est in self.step_estimators_]
        return {"params": params, "fitted": fitted}

    @classmethod
    def _from_saved_state(cls, state: dict[str, Any]) -> Pomms:
        """The fitted ensemble `_saved_state` describes: each ElasticNet rebuilt from its
        coefficients and intercept, so `predict` and `predict_step` give the same numbers
        to the last bit."""
        params = dict(state["params"])
        if isinstance(params["cv"], dict):
            params["cv"] = PredefinedSplit(np.asarray(params["cv"]["predefined_split"]))
        estimator = cls(**params)
        estimator._validate_params()
        fitted = dict(state["fitted"])
        steps = fitted.pop("step_estimators_")
        n_features = int(fitted["n_features_in_"])
        names = (list(fitted["feature_names_in_"]) if "feature_names_in_" in fitted
                 else [f"x{i}" for i in range(n_features)])
        order = [str(m) for m in fitted["selection_order_"]]
        members = [str(m) for m in fitted["members_"]]
        n_members = int(fitted["n_members_"])
        if (len(names) != n_features or not set(order) <= set(names) or not steps
                or len(steps) > len(order) or not 1 <= n_members <= len(steps)
                or members != order[:n_members]):
            raise ValueError("its features, selection order, steps and members disagree")
        estimators = []
        for k, step in enumerate(steps, start=1):
            est = estimator._meta_learner()
            est.coef_ = np.asarray(step["coef_"], dtype=float)
            if est.coef_.shape != (k,):
                raise ValueError(f"step {k}'s coefficients have shape {est.coef_.shape}")
            est.intercept_ = np.float64(step["intercept_"])
            est.n_features_in_ = k
            est.n_iter_ = 0
            est.dual_gap_ = np.float64(np.nan)
            estimators.append(est)
        coef = np.asarray(fitted["coef_"], dtype=float)
        if not np.array_equal(coef, estimators[n_members - 1].coef_):
            raise ValueError("coef_ is not the chosen step's coefficients")
        for name, value in fitted.items():
            setattr(estimator, name, value)
        estimator.n_features_in_ = n_features
        estimator.selection_order_ = order
        estimator.members_ = members
        estimator.n_members_ = n_members
        estimator.coef_ = coef
        estimator.intercept_ = float(fitted["intercept_"])
        estimator.step_estimators_ = estimators
        estimator.estimator_ = estimators[n_members - 1]
        return estimator

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Kendall tau (``self.scoring``) of `predict` against ``y``, NaN rows dropped.

        Replaces RegressorMixin's R^2: the validation criterion of §6.3 is rank agreement
        with the human scores, not squared error. ``sample_weight`` is not supported.
        """
        if sample_weight is not None:
            raise ValueError("Pomms.score does not support sample_weight")
        return float(kendall(self.predict(X), y)[self.scoring])

