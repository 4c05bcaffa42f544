"""The variance of the judge x generator interactions the self-preference model leaves out.

A judge's preference for or against *another* model (issue 40) is a constant it adds to
one (judge, generator) cell of the score table that the model of `.selfpref` has no term
for. `.selfpref` treats these as random effects theta_c with variance tau^2 on the cells
without a modelled relation and carries tau^2 into its intervals; this module estimates
tau^2 by the method of moments on the cells' mean residuals (the ANOVA / Henderson
estimator of a variance component, Searle, Casella & McCulloch 1992, "Variance
Components", ch. 4-5; truncated at 0 as DerSimonian & Laird 1986, Controlled Clinical
Trials 7, do for between-study variance):

    E sum_c r_c^2 = tau^2 sum_{c, c'} R_cc'^2 + sum_c Var(r_c | theta)

over the free cells c, with r_c the cell's mean residual, R the residual-maker that maps
cell constants to mean residuals (r = R theta + noise) and Var(r_c | theta) the part the
answer noise contributes. That last part is not the cell's row spread over its count:
the fit (leniencies, own and family effects: about as many parameters as a third of the
cells) absorbs part of every cell's noise, and the caption demeaning adds the other
judges' noise of the same captions. Subtracting spread / count removed up to twice the
noise the mean residuals hold and biased tau^2 low (solo_and_cross, 300 images: mean
0.19 against the planted cells' 0.23 points^2, truncation at 0 included). Here
Var(r_c | theta) is the diagonal of A Omega A' with A = W (D - H) (W the cell means, D
the caption demeaning, H the hat matrix of the demeaned regressors) and Omega the answer
noise per row, one variance per judge (`judge_noise`), both written so that no N x N
matrix is formed.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse


def judge_noise(resid: np.ndarray, cells: np.ndarray, groups: np.ndarray,
                evaluator: np.ndarray, m: int) -> np.ndarray:
    """Per judge, the variance omega_e of its answers around the model (points^2).

    The rows of one cell are different captions, so their spread around the cell's mean
    residual estimates the variance of a demeaned row: a row r of judge e in caption
    group k of size s_k holds omega_e (1 - 1/s_k)^2 + sum_{r' != r in k} omega_e' / s_k^2
    (the other judges' answers to the same caption enter through the group mean). Summed
    over judge e's rows, with each cell's n_c - 1 degrees of freedom, this is a linear
    system T omega = S in the M judges' variances, solved by least squares (the fit's
    own leverage on a row, about K / N, is left out)."""
    n_cells = m * m
    count = np.bincount(cells, minlength=n_cells).astype(float)
    mean = np.bincount(cells, weights=resid, minlength=n_cells) / np.maximum(count, 1)
    within = np.bincount(cells, weights=(resid - mean[cells]) ** 2, minlength=n_cells)
    observed = np.bincount(np.arange(n_cells) // m, weights=within, minlength=m)
    size = np.bincount(groups).astype(float)[groups]
    dof = ((count - 1) / np.maximum(count, 1))[cells]  # E within-SS = sum (n_c - 1)/n_c Var
    n_groups = int(groups.max()) + 1
    weighted = sparse.csr_matrix((dof / size ** 2, (groups, evaluator)), shape=(n_groups, m))
    members = sparse.csr_matrix((np.ones(len(groups)), (groups, evaluator)),
                                shape=(n_groups, m))
    own = np.bincount(evaluator, weights=dof * ((1 - 1 / size) ** 2 - 1 / size ** 2),
                      minlength=m)
    system = np.asarray((weighted.T @ members).todense()) + np.diag(own)
    omega = np.linalg.lstsq(system, observed, rcond=None)[0]
    return np.clip(omega, 0.0, None)


def mean_residual_noise(X: np.ndarray, bread: np.ndarray, cells: np.ndarray,
                        groups: np.ndarray, omega_rows: np.ndarray, targets: np.ndarray,
                        n_cells: int) -> np.ndarray:
    """Var(r_c | theta) for the cells in `targets`: diag(A Omega A') with A = W (D - H)
    (module docstring), expanded as W D Omega D W' - 2 W D Omega H W' + W H Omega H W'.

    X is the caption-demeaned design (so D X = X and H = X bread X'), omega_rows each
    row's noise variance."""
    count = np.bincount(cells, minlength=n_cells).astype(float)
    n_groups = int(groups.max()) + 1
    size = np.bincount(groups, minlength=n_groups).astype(float)
    per_group = sparse.csr_matrix((np.ones(len(cells)), (groups, cells)),
                                  shape=(n_groups, n_cells))
    per_group.sum_duplicates()
    share = np.asarray(per_group[groups, cells]).ravel() / size[groups]  # q_kc / s_k
    noise_in_group = np.bincount(groups, weights=omega_rows, minlength=n_groups)
    # W D Omega D W': rows of c weigh (1 - q/s)/n_c, the rest of their groups -q/(s n_c)
    inside = np.bincount(cells, weights=omega_rows * (1 - 2 * share), minlength=n_cells)
    spill = per_group.power(2).T @ (noise_in_group / size ** 2)
    first = (inside + spill) / np.maximum(count, 1) ** 2
    xbar = np.stack([np.bincount(cells, weights=X[:, j], minlength=n_cells)
                     for j in range(X.shape[1])], axis=1) / np.maximum(count, 1)[:, None]
    weighted = X * omega_rows[:, None]
    centred = weighted - np.stack(
        [np.bincount(groups, weights=weighted[:, j], minlength=n_groups)
         for j in range(X.shape[1])], axis=1)[groups] / size[groups][:, None]
    cross_means = np.stack([np.bincount(cells, weights=centred[:, j], minlength=n_cells)
                            for j in range(X.shape[1])], axis=1) / np.maximum(count, 1)[:, None]
    lever = xbar[targets] @ bread
    second = np.einsum("ck,ck->c", cross_means[targets], lever)
    third = np.einsum("ck,kl,cl->c", lever, X.T @ weighted, lever)
    return first[targets] - 2 * second + third


def interaction_variance(X: np.ndarray, bread: np.ndarray, resid: np.ndarray,
                         cells: np.ndarray, free: np.ndarray, groups: np.ndarray,
                         evaluator: np.ndarray, m: int) -> tuple[float, np.ndarray]:
    """tau^2 (module docstring) and the K x K matrix sum_c s_c s_c' over the free cells
    (s_c = the cell's sum of the demeaned regressors X), so that the interactions add
    tau^2 bread (sum_c s_c s_c') bread to the coefficients' covariance.

    X: the caption-demeaned regressors (N x K), bread: pinv(X'X), resid: the residuals,
    cells: each row's cell e * m + g, free: rows of cells with no modelled relation,
    groups: each row's absorbed group (caption or image), evaluator: each row's judge."""
    n_cells = m * m
    free_cells = np.unique(cells[free])
    if len(free_cells) == 0:
        return 0.0, np.zeros((X.shape[1], X.shape[1]))
    count = np.bincount(cells, minlength=n_cells).astype(float)
    mean = np.bincount(cells, weights=resid, minlength=n_cells) / np.maximum(count, 1)
    # R = D - Xbar bread S': D the cell means of the caption-demeaned cell indicators,
    # S the cells' sums of the demeaned regressors X, Xbar their means
    size = np.bincount(groups).astype(float)
    incidence = sparse.csr_matrix((np.ones(len(cells)), (cells, groups)),
                                  shape=(n_cells, len(size)))
    share = (incidence @ sparse.diags(1.0 / size) @ incidence.T).toarray()
    demeaned = np.diag((count > 0).astype(float)) - share / np.maximum(count, 1)[:, None]
    s = np.stack([np.bincount(cells, weights=X[:, j], minlength=n_cells)
                  for j in range(X.shape[1])], axis=1)
    xbar = s / np.maximum(count, 1)[:, None]
    maker = demeaned - xbar @ bread @ s.T
    block = maker[np.ix_(free_cells, free_cells)]
    omega = judge_noise(resid, cells, groups, evaluator, m)
    noise = mean_residual_noise(X, bread, cells, groups, omega[evaluator], free_cells,
                                n_cells)
    excess = (mean[free_cells] ** 2).sum() - noise.sum()
    tau2 = max(0.0, float(excess / (block ** 2).sum()))
    return tau2, s[free_cells].T @ s[free_cells]
