"""Judge slopes fitted within generators, for the self-preference regression (.selfpref).

Why a module of its own: a judge's slope on caption quality is the one part of the
regression that a preference for another model could tilt when it is fitted on generator
means (issue 40; selfpref's docstring, "Judge slopes"). Here it is fitted from how the
judges' scores of the same captions co-vary *within* each generator, where a constant
preference for a generator drops out, by a one-factor model of those covariances, with
each image's influence on the slopes for the second step's covariance.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import optimize

if TYPE_CHECKING:
    from judgebias.studies.philautia.selfpref import Design


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


def one_factor(cov: np.ndarray) -> np.ndarray:
    """Loadings b of the one-factor fit of the off-diagonal entries of a covariance
    matrix: argmin sum_{e < f} (C_ef - b_e b_f)^2, the MINRES (unweighted least squares)
    fit that leaves the diagonal free (Harman 1976, "Modern Factor Analysis", 3rd ed.,
    ch. 9; Spearman's one-factor model), solved by scipy.optimize.least_squares from the
    principal-axis start. The diagonal (each judge's variance, which holds its own
    answer noise) is not fitted, so the fit is free of that noise. NaN when the panel has
    fewer than 3 judges, no positive common factor exists (mean off-diagonal covariance
    <= 0), a loading comes out <= 0, or the fit is a Heywood case: a judge's common part
    b_e^2 above its whole variance C_ee, which no factor model allows (Heywood 1931, Proc.
    R. Soc. A 134; Harman 1976, §9.3) -- taken as more than twice C_ee, a margin for the
    sampling noise of C (noise-free data give b_e^2 = C_ee exactly). Three judges fit
    their three covariances exactly, so one covariance near 0 sends a loading to
    infinity and the other two to 0 (seen on
    24 images of three simulated judges: loadings 0.013, 1720, 0.014, and an own - family
    effect of 1,230 points); the check turns that into "no factor" (rho = 0)."""
    m = len(cov)
    upper = np.triu_indices(m, 1)
    if m < 3 or not np.isfinite(cov[upper]).all() or cov[upper].mean() <= 0:
        return np.full(m, np.nan)
    target = cov[upper]
    start = np.full(m, np.sqrt(cov[upper].mean()))
    rows = np.arange(len(target))

    def residual(b: np.ndarray) -> np.ndarray:
        return b[upper[0]] * b[upper[1]] - target

    def jacobian(b: np.ndarray) -> np.ndarray:
        out = np.zeros((len(target), m))
        out[rows, upper[0]] = b[upper[1]]
        out[rows, upper[1]] = b[upper[0]]
        return out

    fit = optimize.least_squares(residual, start, jac=jacobian, method="lm",
                                 xtol=1e-15, ftol=1e-15, gtol=1e-15)
    b = fit.x * np.sign(fit.x.sum())
    heywood = (b ** 2 > 2 * np.diag(cov)).any()
    return b if (b > 0).all() and not heywood else np.full(m, np.nan)


def one_factor_jacobian(cov: np.ndarray, b: np.ndarray) -> np.ndarray:
    """d b / d C_ef (M x M(M-1)/2, the upper-triangle entries in np.triu_indices order)
    at the fit of `one_factor`, by the implicit function theorem on its normal equations
    G_e = -sum_{f != e} b_f (C_ef - b_e b_f) = 0: dG/db has entries sum_{f != e} b_f^2 on
    the diagonal and 2 b_e b_f - C_ef off it; dG_e/dC_ef = -b_f."""
    m = len(b)
    upper = np.triu_indices(m, 1)
    dg_db = 2 * np.outer(b, b) - cov
    np.fill_diagonal(dg_db, (b ** 2).sum() - b ** 2)
    dg_dc = np.zeros((m, len(upper[0])))
    cols = np.arange(len(upper[0]))
    dg_dc[upper[0], cols] = -b[upper[1]]
    dg_dc[upper[1], cols] = -b[upper[0]]
    return -np.linalg.solve(dg_db, dg_dc)


def within_slopes(design: Design, n_clusters: int) -> WithinSlopes:
    """Each judge's slope on caption quality, from how its scores co-vary with the other
    judges' scores of the same captions *within* each generator (module docstring,
    "Judge slopes"): C_ef = mean over (g, k) of ytilde_egk ytilde_fgk with ytilde the
    score minus its (judge, generator) cell mean, b = `one_factor`(C), rho_e = b_e /
    mean(b) - 1. A judge's constant preference for (or against) a generator is a cell
    mean and drops out of ytilde, so it cannot tilt rho. The influence of image k on rho
    is J (S_k - n_k C) / n with S_k, n_k image k's sums and counts of the products and J
    the Jacobian of C -> rho (`one_factor_jacobian`): the delta method, so that the
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
    cov = sums.sum(axis=0) / np.where(total > 0, total, 1)
    b = one_factor(cov) if m >= 3 and (total[upper] > 0).all() else np.full(m, np.nan)
    if not np.isfinite(b).all():
        warnings.warn("selfpref: no common quality factor in the judges' within-generator "
                      "scores (fewer than 3 judges, a pair without common captions, "
                      "non-positive covariances or a Heywood case): judge "
                      "slopes left out (rho = 0)", RuntimeWarning, stacklevel=3)
        return WithinSlopes(np.zeros(m), np.zeros((n_clusters, m)), b, 0)
    point = cov[upper]
    rho = b / b.mean() - 1.0
    # rho = b / mean(b) - 1: d rho / d b = (I - b 1' / (M mean b)) / mean b
    drho_db = (np.eye(m) - np.outer(b, np.ones(m)) / b.sum()) / b.mean()
    jacobian = drho_db @ one_factor_jacobian(cov, b)
    per_image = (sums[:, upper[0], upper[1]] - counts[:, upper[0], upper[1]] * point) / (
        total[upper])
    return WithinSlopes(rho, per_image @ jacobian.T, b, m - 1)
