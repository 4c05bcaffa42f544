"""Self- and family-preference in score points (beyond the paper).

Seed 000's philautia score Phi~_i(i) (§4.1, Algorithm 1 lines 6-7) is *relative*: it is
the diagonal of a matrix standardised per evaluator, then per generator. So a judge
without any self-preference scores positive when the other judges favour themselves (the
column step lowers every other generator's entry of its column relative to its own), a
judge that only favours its siblings scores negative (their row entries rise past its
diagonal), and with ddof = 0 a row of M standardised entries cannot put one entry above
sqrt(M - 1). None of these readings says how many points a judge adds to its own
captions. This module estimates that, per evaluator, in the score's own units.

Model (beyond the paper). One row per valid score y_egk of evaluator e for generator g's
caption of image k, in points (the [0, 1] analysis score times `SCORE_SCALE`, i.e. the
0-100 G-VEval scale)::

    y_egk = alpha_gk + beta_e + lambda_e * (Q_g - mean Q)
            + sum_e' own_e'    * 1(e = e' and g = e')
            + sum_e' family_e' * 1(e = e' and g != e' and g shares a family with e')
            + u_egk                                              (absorb="caption", default)

    alpha_gk = alpha_k + gamma_g                                 (absorb="image")

beta_e is the judge's leniency (first model the reference level) and lambda_e its slope
on generator quality Q_g (the mean score of g's captions over all judges and images, net
of the fitted own/family points). Judges differ in how steeply they reward quality (the
sim's ``spread``; real judges differ in discrimination): without lambda a strict-sloped
judge's score of its own captions, which are of one quality, is off the additive
prediction by (its slope - the mean slope) x (its captions' quality - the mean), which
the regression would otherwise book as self-preference (in the tests' sibling-only panel
corvid-pro's 4.6 planted points come out as 2.8 without it; its captions are the best
and its slope the flattest). How lambda_e is estimated is issue 40's subject ("Judge
slopes" below): by default (``slopes=True`` = "within") from the judges' agreement on
captions *within* each generator, and subtracted as an offset; ``slopes="between"`` is
the estimator before issue 40 (lambda_e a regression coefficient on the M generator
means, M - 1 free), ``slopes=False`` drops it. own_e reads
"evaluator e adds own_e points to its own captions", family_e "... to a sibling's
caption". The default absorbs one effect per *caption* (image x generator), which nests
image difficulty (alpha_k) and generator quality (gamma_g): own_e then compares e's score
of its own caption with the other judges' scores of that same caption, net of each
judge's leniency. On a complete table (every judge scored every caption) this gives the
same own/family estimates and intervals as image + generator effects (absorb="image",
the plainer specification; measured on the simulated panels), because the caption's own
deviation is balanced across judges; with failed scores missing the caption effects keep
a missing score from shifting the comparison to a different mix of captions.

Identification. A panel that is exactly two families (the default: lumen and corvid)
cannot tell "family A favours A by a, B favours B by b" from "A favours A by a - 2c, B
favours B by b + 2c, A's judges c more lenient, A's captions c better, B's the
opposite": only own - family (per judge), differences within a family and a + b are
identified. A third family, or a model without siblings, removes that direction (the
simulated panels of the tests are then fully identified; with slopes="between" a panel of 4
can have further ones). The output flags unidentified effects (`own_identified`,
`family_identified`) and reports them under the minimum-norm normalisation
(`fit_absorbed`); own - family is given where identified.

Families: ``panel.<key>.family`` plus ``panel.<key>.also_in``
(`judgebias.studies.philautia.params.model_families`); one pooled family effect per
evaluator over all its siblings in every family it belongs to. An evaluator without a
sibling in the panel has no family indicator (not estimable): its family columns are NaN
and `family_estimable` is False. Failed / unparseable scores (NaN) are dropped and counted
(`n_dropped`), never imputed, as in Phi (§4.1).

Estimation. OLS with standard errors clustered by image (the M x M scores of an image
share its content, so they are not independent). The caption (or image) effects are
absorbed by within-group demeaning of y and of every regressor (Frisch-Waugh-Lovell: the
slope coefficients of the demeaned regression equal those of the regression with the
dummies, and so do the residuals); at paper scale (12 x 4,500 captions) a dense dummy
design would not fit in memory. The cluster-robust covariance is the sandwich
statsmodels computes with ``cov_type="cluster"``, on the demeaned design (in numpy,
`fit_absorbed`, for speed). Because the absorbed effects are nested within the clusters
(a caption belongs to one image, one image = one cluster), the small-sample factor
G/(G-1) (N-1)/(N-K) counts only the K non-absorbed regressors:
Cameron & Miller (2015), "A Practitioner's Guide to Cluster-Robust Inference",
J. Human Resources 50(2), §III.B (fixed effects nested within clusters: the
within-transformed cluster-robust variance is consistent and the fixed effects need no
degrees-of-freedom adjustment). Intervals use t with G - 1 degrees of freedom
(statsmodels' default for clustered inference with ``use_t``). tests/philautia/test_selfpref.py
checks that the absorbed fit's coefficients equal statsmodels' OLS with explicit dummies
and its covariance equals statsmodels' up to exactly that degrees-of-freedom factor
(slopes="between" and none). With the default slopes="within" the judges' slopes are a
first step (``rho``, M - 1 free parameters, counted in K) whose image-level influence
enters each cluster's score (two-step sandwich, "Judge slopes" below), and the variance
of the unmodelled judge x generator interactions is added ("Preferences for other
models" below); the tests check the former against a cluster bootstrap.

What own and family mean. Seed 001 §2 defines self-preference as an evaluator rating its
own text more favourably than other text, and seed 000 §4.1 reads it off the diagonal of
Phi~, i.e. from everything the judge gives its own captions. own_e is that total in
points: it includes whatever e would give its own caption for resembling its family.
family_e is what e adds to a sibling's caption; own_vs_family (own - family) is
self-preference on top of family preference. The sim plants the same split:
``self_preference`` is the whole bonus a caption with the judge's own signature gets, and
a family bonus goes to siblings' captions only (never on top of ``self_preference``). A
judge with family bonus b and self-preference s therefore has own = s, family = b, own -
family = s - b (tests/philautia/test_selfpref.py checks this on the sim's own judgements, both
settings: the own effect does not absorb the family bonus).

What a planted sim preference means here (judgebias.studies.philautia.sim): a judge's systematic
opinion is m = clip(leniency + spread (a - 0.5) + bonus, 0, 1), the expected score
(philautia.score: expected) is about 100 m' with m' = clip(m + noise z, 0, 1), so a
planted bonus b is b * 100 points as long as neither clip binds; near 0 or 1 it is less.
The tests therefore take the truth in score points from the sim itself: the same
requests scored with and without the planted preference (see tests/philautia/test_selfpref.py).

Judge slopes (issue 40). Fitting lambda_e on the generator means, as the estimator did
before issue 40 (``slopes="between"``), fits a line through the |B_e| generators that
have no dummy for judge e (not e, not a sibling: 3 to 6 points in the panels here) and
extrapolates it to e's own generator. A preference of e for (or against) one of those
generators, j, is a point off that line, and it moves e's own estimate by -theta_ej w_j
with the regression's weight w_j = 1/|B_e| + (Q_e - mean_B Q)(Q_j - mean_B Q) / sum_B (Q -
mean_B Q)^2 (OLS prediction at Q_e), which reaches 1 when e's captions are the best or
the worst and j sits at the other end. Measured (benchmarks/selfpref_coverage.py,
``solo_and_cross``, 300 images, noise-averaged scores, so no sampling error): corvid-lite
(the worst captions, Q = 61.8) likes lumen-large (the best, 73.2) by 1 point and
dislikes corvid-flash (65.0) by 1; its baseline is the 5 other generators and the
weights are -0.45 and +0.98, so its own effect moves by +1.43 points; the fit's bias is
+1.65 (+0.11 without the preferences). The same happens in either setting: on the
synthetic data the references are correct captions, so the sim judges every caption
alike with and without them (test_settings_share_the_sims_judgements_on_correct_references)
and the two settings differ only in their noise draws: the bias is the same in both
(cross_eight, 300 images: coverage 0.876 / 0.879 of the own intervals, ref_based /
ref_free, before issue 40), and a miss in ref_free but not in ref_based on one data set
is that shared bias landing on different sides of an interval bound. Neither the
reference blend nor the clip is the cause: without the preferences for other models the
same world's biases are at most 0.11 points (all judges, own and family), and cross_eight
puts two judges near the top clip and covers with the estimator below.

Issue 40's fix estimates lambda_e where a preference cannot reach it: within each
generator, across its captions. With ytilde_egk the score minus its (judge, generator)
cell mean, C_ef = mean_gk ytilde_egk ytilde_fgk (e != f) is b_e b_f var(caption quality)
under the model, whatever constant a judge adds to a generator (a preference is a cell
mean and drops out), and free of the answer noise (independent across judges; the
diagonal is never used). b is the one-factor (MINRES) fit of C's off-diagonal
(`.slopes.one_factor`; Spearman's model, Harman 1976 ch. 9), rho_e = b_e / mean b - 1 the judge's
slope relative to the panel's, and the model's lambda_e (Q_g - mean Q) is the offset
rho_e (Q_g - mean Q) (`quality_basis_of`). Caption-level quality (the other judges' mean
score of a caption) would carry their answer noise (reliability about 0.75 in
solo_and_cross at M = 6) and attenuate the slopes; Q_g, a mean over N x M scores, does
not. The two steps' covariance is the sandwich with the first step's influence
(Murphy & Topel 1985; Newey & McFadden 1994 §6; `.slopes.within_slopes`), checked against a
cluster bootstrap in the tests.

Preferences for other models: estimand and the interaction variance (issue 40). own_e
is the points e adds to its own captions relative to (i) its scores of the generators it
has no modelled relation with (B_e) and (ii) the other judges' scores of the same
captions. A preference of e for a generator in B_e (theta_ej) therefore still moves own_e
and family_e by about -theta_ej / |B_e|, and another judge's preference for e's captions
moves own_e by about -theta / M (it raises the caption's consensus): from the data alone
a preference for j shared by several judges cannot be told from j's captions being
better (only the panel's judges without it identify it), so no estimator can remove
this part without knowing which cells are relations. A robust centre over the cells
(Huber weights on the cells' standardised residuals, IRLS) was tried and dropped: with 3
to 6 baseline generators per judge and cell standard errors of 0.4-0.7 points at 300
images it shrank some shifts (cross_eight: finch-a's own +0.46 -> +0.13 points) but not
those of a relation two judges share (lumen-large's own, -0.50 -> -0.45), and its
intervals covered less (lowest judge 0.86 against 0.95, own, ref_free). Instead the judge x
generator interactions the model leaves out are treated as random effects with variance
tau^2 (`.interactions.interaction_variance`: the method-of-moments / ANOVA estimator on
the cells' mean residuals, truncated at 0, Searle, Casella & McCulloch 1992 ch. 4-5;
DerSimonian & Laird 1986, with the exact noise part of the mean residuals: that module's
docstring), and the intervals carry tau^2 through each effect's weights on those cells
(``interactions=True``, default; `ClusteredFit.tau2`). With no such preferences tau^2 is
about 0 (unbiased before the truncation; tests/philautia/test_interactions.py) and the
intervals are about the clustered ones; with a few +-1-2 point preferences per judge it
is about their mean square (0.23 points^2 in solo_and_cross: 5 of its 22 free cells
hold +-1 point). This makes
coverage hold over judges (the shifts act as an extra error with that spread), not for a
judge whose relations all push one way: in solo_and_cross lumen-base's family effect is
0.81 points low (its one preference, +1 for corvid-flash, is a third of its 3-generator
baseline, and the other judges' relations add to it), and its interval covers 91-92%
(sampled answers, 4 seeds); in cross_eight, where it adds 2 points to corvid-flash (one
of 5 baseline generators) and two other judges add 2 to its sibling lumen-large's
captions, it is 0.89-0.91 low and covers 86%, while the pooled family coverage stays in
the band.
family_e is the mean of what e adds to its siblings' captions, a preference for one
sibling included (the benchmark's truth counts it so); own_e never includes the family
bonus (above).

Coverage (issue 40): the table is in benchmarks/selfpref_coverage.py's docstring (300
images, 4 seeds x 100 draws per world and setting, answers sampled and parsed as the
pipeline does, digit tokenizers included; pooled over judges per effect kind, band 0.95
+- 3 MC se). With the within slopes and the interaction variance 35 of the 36 pooled
cells are in their band and the 36th is over it by 0.001 (conservative; in band with
other noise draws); before, the worlds with preferences for other models covered
0.84-0.90. Over random patterns of relations (cross_random) every kind covers
0.941-0.952; for one judge of one fixed pattern whose relations push one way coverage
can be lower (lumen-base's family effect, 0.85-0.92: above). cross_only is the issue's
check (preferences for other models, none for self): own intervals exclude 0 in 3.7-4.5%
of data sets, 12-13% before. The default panel's card reads the same direction and
significance for every own - family effect before and after (``--default-card``).

The philautia score in these worlds (seed 000 §4.1; noise-averaged Phi, 300 images):
Spearman's rank correlation with the planted own effects is +0.90 (eight_judges), +0.88
(cross_eight) and +0.58 (solo_and_cross), so it ranks planted self-preferences where
they dominate; it misleads where they do not: with no preference of any kind (no_bias)
scores reach -1.58 and +1.44 sd (the double standardisation scales what judge x
generator structure is left, here different slopes, to unit variance), and a judge whose
only relation is +2 points for another model (cross_only, lumen-base) scores -2.1 to -2.5
sd, a "self-disfavouring" reading of no self-preference at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from judgebias.studies.philautia.interactions import interaction_variance
from judgebias.studies.philautia.measures import family_groups
from judgebias.studies.philautia.slopes import demean_within, within_slopes
from judgebias.studies.philautia.tables import EFFECT_FIELDS, SCORE_SCALE, SELFPREF

ABSORB = ("caption", "image")
SLOPES = ("within", "between", "none")


def slope_mode(slopes: bool | str) -> str:
    """True -> "within" (the default), False -> "none"; strings as in `SLOPES`."""
    mode = {True: "within", False: "none"}.get(slopes, slopes) if isinstance(
        slopes, bool) else slopes
    if mode not in SLOPES:
        raise ValueError(f"slopes must be a bool or one of {SLOPES}, not {slopes!r}")
    return str(mode)


@dataclass(frozen=True)
class Design:
    """The regression's rows and columns: y in points, the non-absorbed regressors X,
    the image code of each row (the absorbed effect and the cluster)."""

    y: np.ndarray
    X: np.ndarray
    columns: list[str]
    images: np.ndarray
    absorbed: np.ndarray  # group code of each row's absorbed effect (image or caption)
    evaluator: np.ndarray
    generator: np.ndarray
    n_dropped: np.ndarray  # per evaluator, in model order
    # slopes="within": column e of each row is (Q_g - mean Q) if the row is judge e's,
    # else 0; the offset subtracted from y is offset_basis @ rho (`within_slopes`)
    offset_basis: np.ndarray | None = None


def siblings(models: Sequence[str], families: Mapping[str, str | Sequence[str]]
             ) -> np.ndarray:
    """Boolean M x M: [e, g] true when g != e shares at least one family with e."""
    index = {m: i for i, m in enumerate(models)}
    out = np.zeros((len(models), len(models)), dtype=bool)
    for members in family_groups(models, families).values():
        ids = [index[m] for m in members]
        out[np.ix_(ids, ids)] = True
    np.fill_diagonal(out, False)
    return out


def build_design(scores: pd.DataFrame, models: Sequence[str],
                 families: Mapping[str, str | Sequence[str]],
                 scale: float = SCORE_SCALE, absorb: str = "caption",
                 slopes: bool | str = True) -> Design:
    """The long table as a regression design (see the module docstring for the model).

    Rows with a NaN score are dropped and counted per evaluator. Raises ValueError on
    generators / evaluators outside `models`."""
    models = list(models)
    m = len(models)
    index = pd.Index(models)
    e = index.get_indexer(scores["evaluator"].astype(str))
    g = index.get_indexer(scores["generator"].astype(str))
    if (e < 0).any() or (g < 0).any():
        unknown = sorted(set(scores["evaluator"].astype(str)[e < 0])
                         | set(scores["generator"].astype(str)[g < 0]))
        raise ValueError(f"generators/evaluators not in models: {unknown}")
    y = scores["score"].to_numpy(dtype=float) * scale
    valid = ~np.isnan(y)
    n_dropped = np.bincount(e[~valid], minlength=m)
    e, g, y = e[valid], g[valid], y[valid]
    images = pd.factorize(scores["image_id"].astype(str)[valid], sort=True)[0]
    if absorb not in ABSORB:
        raise ValueError(f"absorb must be one of {ABSORB}, not {absorb!r}")
    absorbed = images if absorb == "image" else images.astype(np.int64) * m + g
    absorbed = pd.factorize(absorbed, sort=True)[0]
    axes = (e, g) if absorb == "image" else (e,)
    mode = slope_mode(slopes)
    sib = siblings(models, families)
    has_sibling = np.asarray(sib.any(axis=1))
    columns = ([f"evaluator:{x}" for x in models[1:]]
               + ([f"generator:{x}" for x in models[1:]] if absorb == "image" else [])
               + ([f"slope:{x}" for x in models[1:]] if mode == "between" else [])
               + [f"own:{x}" for x in models]
               + [f"family:{x}" for i, x in enumerate(models) if has_sibling[i]])
    X = np.zeros((len(y), len(columns)))
    rows = np.arange(len(y))
    col = 0
    for axis in axes:  # reference level: the first model
        keep = axis > 0
        X[rows[keep], col + axis[keep] - 1] = 1.0
        col += m - 1
    quality = (np.bincount(g, weights=y, minlength=m)
               / np.maximum(np.bincount(g, minlength=m), 1))  # Q_g: g's mean score
    centred = quality - quality[np.bincount(g, minlength=m) > 0].mean()
    offset_basis = None
    if mode == "between":  # judge-specific slope on the generator's mean score
        keep = e > 0
        X[rows[keep], col + e[keep] - 1] = centred[g[keep]]
        col += m - 1
    elif mode == "within":  # the same slope, estimated within generators (offset)
        offset_basis = quality_basis_of(e, g, y, m)
    own = e == g
    X[rows[own], col + e[own]] = 1.0
    col += m
    family_col = np.cumsum(has_sibling) - 1 + col
    fam = sib[e, g]
    X[rows[fam], family_col[e[fam]]] = 1.0
    return Design(y, X, columns, images, absorbed, e, g, n_dropped, offset_basis)


QUALITY_ITERATIONS = 100  # Q_g net of the fitted own/family points: contracts by ~|rho|/M


def quality_basis_of(e: np.ndarray, g: np.ndarray, values: np.ndarray, m: int
                     ) -> np.ndarray:
    """N x M: column e holds Q_g - mean Q on judge e's rows (0 elsewhere), Q_g the mean
    of `values` over g's rows: the regressors whose coefficients are the judges' slopes
    on generator quality."""
    counts = np.bincount(g, minlength=m)
    quality = np.bincount(g, weights=values, minlength=m) / np.maximum(counts, 1)
    centred = quality - quality[counts > 0].mean()
    out = np.zeros((len(values), m))
    out[np.arange(len(values)), e] = centred[g]
    return out


def quality_basis(design: Design, values: np.ndarray) -> np.ndarray:
    """`quality_basis_of` on the design's rows."""
    assert design.offset_basis is not None
    return quality_basis_of(design.evaluator, design.generator, values,
                            design.offset_basis.shape[1])


@dataclass(frozen=True)
class ClusteredFit:
    """OLS coefficients with their image-clustered covariance (module docstring) and the
    directions of coefficient space the data cannot see (`null`, K x r; r = 0 when the
    design has full rank)."""

    params: np.ndarray
    cov: np.ndarray
    null: np.ndarray
    n_obs: int
    n_clusters: int
    tau2: float = 0.0  # variance of the unmodelled judge x generator interactions (points^2)

    @property
    def bse(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    @property
    def df(self) -> int:
        """Degrees of freedom of the t reference: clusters - 1."""
        return self.n_clusters - 1

    def identified(self, tol: float = 1e-8) -> np.ndarray:
        """Per coefficient: whether no null direction moves it."""
        return np.all(np.abs(self.null) < tol, axis=1)

    def identifies(self, weights: np.ndarray, tol: float = 1e-8) -> bool:
        """Whether weights @ params is estimable (no null direction moves it)."""
        return bool(np.all(np.abs(self.null.T @ weights) < tol))

    def contrast(self, weights: np.ndarray, ci: float) -> dict[str, float]:
        """Estimate, se, interval and two-sided p of weights @ params."""
        effect = float(weights @ self.params)
        se = float(np.sqrt(max(weights @ self.cov @ weights, 0.0)))
        half = stats.t.ppf(0.5 + ci / 2, self.df) * se
        p = 2 * stats.t.sf(abs(effect) / se, self.df) if se > 0 else np.nan
        return {"effect": effect, "se": se, "ci_low": effect - half,
                "ci_high": effect + half, "p_value": float(p)}


def fit_absorbed(design: Design, tol: float = 1e-9, interactions: bool = False
                 ) -> ClusteredFit:
    """OLS on the within-group demeaned design with the image-clustered sandwich
    (X'X)^-1 [sum_k X_k' u_k u_k' X_k] (X'X)^-1 times G/(G-1) (N-1)/(N-K), K = the rank
    of the non-absorbed regressors (module docstring). With full rank this is what
    statsmodels' ``OLS(...).fit(cov_type="cluster", cov_kwds={"groups": images},
    use_t=True)`` computes on the same demeaned design (tests/philautia/test_selfpref.py checks it
    against statsmodels with explicit dummies); written with the normal equations so that
    1.3M rows fit in seconds (statsmodels' SVD/QR of the N x K design takes tens).

    Rank deficiency is not an error: a panel that is exactly two families (the default:
    lumen and corvid) cannot tell "family A favours A by a, B favours B by b" from
    "A favours A by a - 2c, B favours B by b + 2c, A's judges are c more lenient, A's
    captions c better, B's the opposite": only a + b, own - family and within-family
    differences are identified. Then the own/family coefficients are reported under the
    minimum-norm normalisation (the smallest preferences consistent with the data; the
    evaluator effects take up the rest), `null` holds the unidentified directions, and
    `identified()` says which coefficients they move.

    With ``design.offset_basis`` (slopes="within") the outcome is y minus the offset
    rho_e (Q_g - mean Q) (`within_slopes`), Q_g recomputed net of the fitted own/family
    points until the coefficients settle (the map contracts by about |rho| / M), and
    each cluster's score gets the first step's term -X'B infl_k(rho) (Murphy & Topel
    1985). ``interactions=True`` adds tau^2 bread (sum_c s_c s_c') bread
    (`interaction_variance`)."""
    n_clusters = int(design.images.max()) + 1 if len(design.y) else 0
    prefs = np.array([c.startswith(("own:", "family:")) for c in design.columns])
    slopes = within_slopes(design, n_clusters) if design.offset_basis is not None else None
    m = int(max(design.evaluator.max(), design.generator.max())) + 1 if len(design.y) else 0
    cells = design.evaluator * m + design.generator
    free = ~(design.X[:, prefs] != 0).any(axis=1)  # rows of cells with no modelled relation
    y = demean_within(design.y, design.absorbed)
    X = demean_within(design.X, design.absorbed)
    xtx = X.T @ X
    eigval, eigvec = np.linalg.eigh(xtx)
    small = eigval <= eigval[-1] * tol
    null = eigvec[:, small]
    bread = np.linalg.pinv(xtx, hermitian=True, rcond=tol)
    shift = np.eye(len(design.columns))
    if null.shape[1]:
        # move along the null directions to the smallest own/family coefficients
        shift = shift - null @ np.linalg.pinv(null[prefs]) @ np.eye(len(shift))[prefs]
    params = shift @ bread @ (X.T @ y)
    if slopes is not None:
        outcome = y
        for _ in range(QUALITY_ITERATIONS):  # Q_g net of the fitted own/family points
            planted = design.X[:, prefs] @ params[prefs]
            basis = demean_within(quality_basis(design, design.y - planted), design.absorbed)
            y = outcome - basis @ slopes.rho
            previous, params = params, shift @ bread @ (X.T @ y)
            if np.max(np.abs(params - previous), initial=0.0) < 1e-10:
                break
    resid = y - X @ params
    scores = X * resid[:, None]
    sums = np.stack([np.bincount(design.images, weights=scores[:, j], minlength=n_clusters)
                     for j in range(X.shape[1])], axis=1)
    if slopes is not None:  # two-step (Murphy-Topel) correction
        sums = sums - slopes.influence @ (X.T @ basis).T
    n, k = len(design.y), int((~small).sum()) + (slopes.n_free if slopes is not None else 0)
    factor = n_clusters / (n_clusters - 1) * (n - 1) / (n - k)
    cov = factor * shift @ bread @ (sums.T @ sums) @ bread @ shift.T
    tau2 = 0.0
    if interactions:
        tau2, spread = interaction_variance(X, bread, resid, cells, free, design.absorbed,
                                            design.evaluator, m)
        cov = cov + tau2 * shift @ bread @ spread @ bread @ shift.T
    return ClusteredFit(params, cov, null, n, n_clusters, tau2)


def self_preference(scores: pd.DataFrame, models: Sequence[str],
                    families: Mapping[str, str | Sequence[str]], ci: float = 0.95,
                    scale: float = SCORE_SCALE, absorb: str = "caption",
                    slopes: bool | str = True, interactions: bool = True) -> pd.DataFrame:
    """Per evaluator: own-caption and family effects in score points with `ci` intervals,
    and own minus family (how much more it adds to its own captions than to its
    siblings'; identified in two-family panels too; NaN where it is not), beyond the paper
    (module docstring). Columns as `SELFPREF` without the philautia score columns.

    ``slopes``: True / "within" (default: judge slopes from the within-generator
    agreement, issue 40), "between" (slopes fitted on the generator means, the estimator
    before issue 40), False / "none". ``interactions``: carry the variance of the
    judge x generator interactions the model leaves out (preferences for other models)
    into the intervals (default True; module docstring)."""
    models = list(models)
    design = build_design(scores, models, families, scale, absorb, slopes)
    fit = fit_absorbed(design, interactions=interactions)
    identified = fit.identified()
    sib = siblings(models, families)
    e, g = design.evaluator, design.generator
    column = {c: j for j, c in enumerate(design.columns)}
    rows = []
    for i, model in enumerate(models):
        row: dict[str, Any] = {"model": model}
        weights = {}
        for kind in ("own", "family"):
            j = column.get(f"{kind}:{model}")
            if j is not None:
                weights[kind] = np.eye(len(design.columns))[j]
            values = fit.contrast(weights[kind], ci) if j is not None else {}
            row.update({f"{kind}_{f}": values.get(f, np.nan) for f in EFFECT_FIELDS})
            row[f"{kind}_identified"] = bool(j is not None and identified[j])
        both = {}
        if "family" in weights and fit.identifies(weights["own"] - weights["family"]):
            both = fit.contrast(weights["own"] - weights["family"], ci)
        row.update({f"own_vs_family_{f}": both.get(f, np.nan) for f in EFFECT_FIELDS})
        row["own_n"] = int(((e == i) & (g == i)).sum())
        row["family_estimable"] = bool(sib[i].any())
        row["family_n"] = int(((e == i) & sib[i][g]).sum())
        row["n_rows"] = int((e == i).sum())
        row["n_dropped"] = int(design.n_dropped[i])
        rows.append(row)
    return pd.DataFrame(rows)


def with_philautia(effects: pd.DataFrame, philautia: pd.DataFrame) -> pd.DataFrame:
    """The effects next to each model's philautia score (seed 000 §4.1) and its interval."""
    paper = (philautia.set_index("model")[["score", "ci_low", "ci_high"]]
             .add_prefix("philautia_"))
    out = effects.join(paper, on="model")
    return out[list(SELFPREF.names)]
