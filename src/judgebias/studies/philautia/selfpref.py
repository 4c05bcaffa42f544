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

beta_e is the judge's leniency and lambda_e its slope on generator quality Q_g (the mean
score of g's captions over all judges and images; ``slopes=True``, default), both with
the first model as the reference level. Judges differ in how steeply they reward
quality (the sim's ``spread``; real judges differ in discrimination): without lambda a
strict-sloped judge's score of its own captions, which are of one quality, is off the
additive prediction by (its slope - the mean slope) x (its captions' quality - the
mean), which the regression would otherwise book as self-preference (in the tests'
sibling-only panel corvid-pro's 4.6 planted points come out as 2.8 without it and 3.5
with it; its captions are the best and its slope the flattest). own_e reads
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
simulated panels of the tests are then fully identified; with judge slopes a panel of 4
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
and its covariance equals statsmodels' up to exactly that degrees-of-freedom factor.

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

Cross-model preferences (``preferences.models``) and a judge's preference for *another*
family are not in the model; they go to the residual and bias own/family through the
evaluator effect and the judge's slope they shift. Through the slope the shift can be
larger than the preference itself: a judge that adds 1 point to the best generator's
captions and takes 1 off another's tilts its fitted slope, and its own captions, if they
are the worst, sit at the far end of that line (measured below: corvid-lite in
``solo_and_cross``, own effect +1.7 points off, coverage 0.89-0.90).

Coverage (issue 20 item 14; benchmarks/selfpref_coverage.py --images 80 --seeds 2
--reps 200: sim judgements of the pipeline's requests, numpy answer noise; 400 data sets
per effect, Monte-Carlo se 0.011; worlds not the default; bias in points)::

    world           setting    pooled coverage  effects within 3 MC se  misses
    eight_judges    ref_based  0.948 (6400)     15 of 16   corvid-lite own 0.912 (bias +0.09)
    eight_judges    ref_free   0.952 (6400)     16 of 16
    no_bias         ref_based  0.954 (6400)     16 of 16   (every truth 0: covers zero)
    no_bias         ref_free   0.948 (6400)     16 of 16
    solo_and_cross  ref_based  0.938 (4400)     10 of 11   corvid-lite own 0.902 (+1.70)
    solo_and_cross  ref_free   0.945 (4400)     10 of 11   corvid-lite own 0.890 (+1.63)

eight_judges is the issue's panel shape (8 judges, 3 families, lumen with a family
preference, a sibling-only, a negative and two unbiased judges); its largest |bias| is
0.18 points. The issue saw 16 of 16 intervals cover in ref_based and 13 of 16 in
ref_free on one data set, the misses own effects. Neither the sim's reference-free path
nor this estimator is at fault: with the synthetic dataset's correct references the
sim's reference-based accuracy (0.7 image + 0.3 reference agreement) equals the
reference-free one, so both settings judge every caption alike and differ only in the
per-request noise (tests/philautia/test_selfpref.py); on the noise-averaged scores every own
effect equals its truth within 0.3 points in both settings, the family bonus not in it;
and over many data sets both settings cover at the nominal rate. Three or more misses of
16 at 95% has probability 0.043 on one data set (binomial); the own effects have the
widest intervals, not a different coverage. Rerunning the pipeline path on the default
seed (150 images) shows the same pattern, inside the intervals (lumen-large own 4.9 vs
3.5, corvid-lite -6.1 vs -3.8). The noisiest judge's own interval (corvid-lite, noise
0.12) may undercover by 1-3 points (0.912 and 0.945 for the same judgements).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from judgebias.studies.philautia.measures import family_groups
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


def demean_within(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Subtract each group's mean (rows of `values`, 1-D or 2-D): the within transform
    that absorbs one fixed effect per group (Frisch-Waugh-Lovell)."""
    counts = np.bincount(groups).astype(float)
    if values.ndim == 1:
        return values - (np.bincount(groups, weights=values) / counts)[groups]
    means = np.stack([np.bincount(groups, weights=values[:, j], minlength=len(counts))
                      for j in range(values.shape[1])], axis=1) / counts[:, None]
    return values - means[groups]


@dataclass(frozen=True)
class WithinSlopes:
    """Stage 1 of slopes="within" (module docstring): rho_e = b_e / mean(b) - 1 per
    evaluator, and each image's influence on rho (G x M; sums to 0 over images)."""

    rho: np.ndarray
    influence: np.ndarray
    loadings: np.ndarray
    n_free: int  # estimated parameters (counted in the degrees-of-freedom factor)


def one_factor(cov: np.ndarray, iterations: int = 500, tol: float = 1e-12) -> np.ndarray:
    """Loadings b of the one-factor fit of the off-diagonal entries of a covariance
    matrix: argmin sum_{e != f} (C_ef - b_e b_f)^2 (the MINRES / principal-axis fit
    that leaves the diagonal free; Harman 1976, "Modern Factor Analysis", ch. 9;
    Spearman's one-factor model), by the fixed point b_e = sum_{f != e} C_ef b_f /
    sum_{f != e} b_f^2. The diagonal (each judge's variance, which holds its own noise)
    is never used, so the fit is free of the answer noise. NaN when no positive common
    factor exists (mean off-diagonal covariance <= 0) or the panel has < 3 judges."""
    m = len(cov)
    off = ~np.eye(m, dtype=bool)
    if m < 3 or not np.isfinite(cov[off]).all() or cov[off].mean() <= 0:
        return np.full(m, np.nan)
    b = np.full(m, np.sqrt(cov[off].mean()))
    c = np.where(off, cov, 0.0)
    for _ in range(iterations):
        new = (c @ b) / ((b ** 2).sum() - b ** 2)
        if np.max(np.abs(new - b)) <= tol * np.max(np.abs(b)):
            b = new
            break
        b = new
    return b if (b > 0).all() else np.full(m, np.nan)


def within_slopes(design: Design, n_clusters: int) -> WithinSlopes:
    """Each judge's slope on caption quality, from how its scores co-vary with the other
    judges' scores of the same captions *within* each generator (module docstring,
    "Judge slopes"): C_ef = mean over (g, k) of ytilde_egk ytilde_fgk with ytilde the
    score minus its (judge, generator) cell mean, b = `one_factor`(C), rho_e = b_e /
    mean(b) - 1. A judge's constant preference for (or against) a generator is a cell
    mean and drops out of ytilde, so it cannot tilt rho. The influence of image k on rho
    is J (S_k - n_k C) / n with S_k, n_k image k's sums and counts of the products and J
    the Jacobian of C -> rho (central differences): the delta method, so that the
    second step's covariance accounts for rho being estimated (Murphy & Topel 1985,
    J. Business & Economic Statistics 3(4); Newey & McFadden 1994, Handbook of
    Econometrics IV, §6). rho = 0 (no offset) where no factor can be fitted."""
    m = int(max(design.evaluator.max(), design.generator.max())) + 1 if len(design.y) else 0
    if design.offset_basis is not None:
        m = design.offset_basis.shape[1]
    e, g, k = design.evaluator, design.generator, design.images
    tilde = demean_within(design.y, e * m + g)
    values = np.zeros((m, m, n_clusters))
    present = np.zeros((m, m, n_clusters))
    values[e, g, k] = tilde
    present[e, g, k] = 1.0
    sums = np.einsum("egk,fgk->kef", values, values)  # image k's products, G x M x M
    counts = np.einsum("egk,fgk->kef", present, present)
    total = counts.sum(axis=0)
    upper = np.triu_indices(m, 1)
    if m < 3 or (total[upper] == 0).any():
        return WithinSlopes(np.zeros(m), np.zeros((n_clusters, m)), np.full(m, np.nan), 0)
    cov = sums.sum(axis=0) / np.where(total > 0, total, 1)

    def rho_of(entries: np.ndarray) -> np.ndarray:
        c = np.zeros((m, m))
        c[upper] = entries
        c = c + c.T
        b = one_factor(c)
        return b / b.mean() - 1.0

    point = cov[upper]
    rho = rho_of(point)
    if not np.isfinite(rho).all():
        return WithinSlopes(np.zeros(m), np.zeros((n_clusters, m)), np.full(m, np.nan), 0)
    jacobian = np.empty((m, len(point)))
    for j in range(len(point)):
        step = 1e-6 * max(abs(point[j]), 1.0)
        up, down = point.copy(), point.copy()
        up[j] += step
        down[j] -= step
        jacobian[:, j] = (rho_of(up) - rho_of(down)) / (2 * step)
    per_image = (sums[:, upper[0], upper[1]] - counts[:, upper[0], upper[1]] * point) / (
        total[upper])
    return WithinSlopes(rho, per_image @ jacobian.T, one_factor(cov), m - 1)


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


def fit_absorbed(design: Design, tol: float = 1e-9) -> ClusteredFit:
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
    `identified()` says which coefficients they move."""
    y = demean_within(design.y, design.absorbed)
    X = demean_within(design.X, design.absorbed)
    n_clusters = int(design.images.max()) + 1 if len(y) else 0
    xtx = X.T @ X
    eigval, eigvec = np.linalg.eigh(xtx)
    small = eigval <= eigval[-1] * tol
    null = eigvec[:, small]
    bread = np.linalg.pinv(xtx, hermitian=True, rcond=tol)
    prefs = np.array([c.startswith(("own:", "family:")) for c in design.columns])
    shift = np.eye(len(design.columns))
    if null.shape[1]:
        # move along the null directions to the smallest own/family coefficients
        shift = shift - null @ np.linalg.pinv(null[prefs]) @ np.eye(len(shift))[prefs]
    params = shift @ bread @ (X.T @ y)
    extra = 0
    if design.offset_basis is not None:
        slopes = within_slopes(design, n_clusters)
        extra = slopes.n_free
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
    if design.offset_basis is not None:  # two-step (Murphy-Topel) correction
        sums = sums - slopes.influence @ (X.T @ basis).T
    n, k = len(y), int((~small).sum()) + extra
    factor = n_clusters / (n_clusters - 1) * (n - 1) / (n - k)
    cov = factor * shift @ bread @ (sums.T @ sums) @ bread @ shift.T
    return ClusteredFit(params, cov, null, n, n_clusters)


def self_preference(scores: pd.DataFrame, models: Sequence[str],
                    families: Mapping[str, str | Sequence[str]], ci: float = 0.95,
                    scale: float = SCORE_SCALE, absorb: str = "caption",
                    slopes: bool | str = True) -> pd.DataFrame:
    """Per evaluator: own-caption and family effects in score points with `ci` intervals,
    and own minus family (how much more it adds to its own captions than to its
    siblings'; identified in two-family panels too; NaN where it is not), beyond the paper
    (module docstring). Columns as `SELFPREF` without the philautia score columns."""
    models = list(models)
    design = build_design(scores, models, families, scale, absorb, slopes)
    fit = fit_absorbed(design)
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
