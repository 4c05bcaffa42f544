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

    y_egk = alpha_gk + beta_e
            + sum_e' own_e'    * 1(e = e' and g = e')
            + sum_e' family_e' * 1(e = e' and g != e' and g shares a family with e')
            + u_egk                                              (absorb="caption", default)

    alpha_gk = alpha_k + gamma_g                                 (absorb="image")

beta_e is the judge's leniency (the first model is the reference level); own_e reads
"evaluator e adds own_e points to its own captions", family_e "... to a sibling's
caption". The default absorbs one effect per *caption* (image x generator), which nests
image difficulty (alpha_k) and generator quality (gamma_g): caption quality varies from
caption to caption, not only from generator to generator, and with image + generator
effects only (absorb="image", the plainer specification) the caption's own deviation
stays in the error, unbiased but several points of noise on every own/family contrast.
With caption effects own_e compares e's score of its own caption with the other judges'
scores of that same caption, net of each judge's leniency.

Families: ``panel.<key>.family`` plus ``panel.<key>.also_in``
(`judgebias.studies.philautia.phi.model_families`); one pooled family effect per
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
degrees-of-freedom adjustment). Intervals use t with G - 1 degrees
of freedom (statsmodels' default for clustered inference with ``use_t``).
tests/test_selfpref.py checks that the absorbed fit's coefficients and raw sandwich equal
the explicit-dummy statsmodels fit's.

What a planted sim preference means here (judgebias.models.sim): a judge's systematic
opinion is m = clip(leniency + spread (a - 0.5) + bonus, 0, 1), the expected score
(philautia.score: expected) is about 100 m' with m' = clip(m + noise z, 0, 1), so a
planted bonus b is b * 100 points as long as neither clip binds; near 0 or 1 it is less.
The tests therefore take the truth in score points from the sim itself: the same
requests scored with and without the planted preference (see tests/test_selfpref.py).

Cross-model preferences (``preferences.models``) and a judge's preference for *another*
family are not in the model; they go to the residual and bias own/family only through
the evaluator and generator effects they shift (by about their size / (M - 1)).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy import stats

from judgebias.artifacts import table_schema
from judgebias.studies.philautia.analysis import family_groups
from judgebias.studies.philautia.phi import SCORE_SCALE, model_families

ABSORB = ("caption", "image")

# One row per evaluator: its own-caption and family effects in score points.
EFFECT_FIELDS = ("effect", "se", "ci_low", "ci_high", "p_value")
SELFPREF = table_schema("selfpref", [
    pa.field("model", pa.string(), nullable=False),
    *[pa.field(f"own_{f}", pa.float64(), nullable=False) for f in EFFECT_FIELDS],
    pa.field("own_n", pa.int64(), nullable=False),
    pa.field("family_estimable", pa.bool_(), nullable=False),
    *[pa.field(f"family_{f}", pa.float64(), nullable=True) for f in EFFECT_FIELDS],
    pa.field("family_n", pa.int64(), nullable=False),
    pa.field("n_rows", pa.int64(), nullable=False),
    pa.field("n_dropped", pa.int64(), nullable=False),
    pa.field("philautia_score", pa.float64(), nullable=True),
    pa.field("philautia_ci_low", pa.float64(), nullable=True),
    pa.field("philautia_ci_high", pa.float64(), nullable=True),
])


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
                 scale: float = SCORE_SCALE, absorb: str = "caption") -> Design:
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
    sib = siblings(models, families)
    has_sibling = sib.any(axis=1)
    columns = ([f"evaluator:{x}" for x in models[1:]]
               + ([f"generator:{x}" for x in models[1:]] if absorb == "image" else [])
               + [f"own:{x}" for x in models]
               + [f"family:{x}" for i, x in enumerate(models) if has_sibling[i]])
    X = np.zeros((len(y), len(columns)))
    rows = np.arange(len(y))
    col = 0
    for axis in axes:  # reference level: the first model
        keep = axis > 0
        X[rows[keep], col + axis[keep] - 1] = 1.0
        col += m - 1
    own = e == g
    X[rows[own], col + e[own]] = 1.0
    col += m
    family_col = np.cumsum(has_sibling) - 1 + col
    fam = sib[e, g]
    X[rows[fam], family_col[e[fam]]] = 1.0
    return Design(y, X, columns, images, absorbed, e, g, n_dropped)


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
class ClusteredFit:
    """OLS coefficients with their image-clustered covariance (module docstring)."""

    params: np.ndarray
    cov: np.ndarray
    n_obs: int
    n_clusters: int

    @property
    def bse(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))

    @property
    def df(self) -> int:
        """Degrees of freedom of the t reference: clusters - 1."""
        return self.n_clusters - 1

    def pvalues(self) -> np.ndarray:
        return 2 * stats.t.sf(np.abs(self.params / self.bse), self.df)

    def conf_int(self, ci: float) -> np.ndarray:
        half = stats.t.ppf(0.5 + ci / 2, self.df) * self.bse
        return np.column_stack([self.params - half, self.params + half])


def fit_absorbed(design: Design) -> ClusteredFit:
    """OLS on the within-image demeaned design with the image-clustered sandwich
    (X'X)^-1 [sum_k X_k' u_k u_k' X_k] (X'X)^-1 times G/(G-1) (N-1)/(N-K), K = the
    non-absorbed regressors (module docstring). This is what statsmodels'
    ``OLS(...).fit(cov_type="cluster", cov_kwds={"groups": images}, use_t=True)`` computes
    on the same demeaned design (tests/test_selfpref.py checks it against statsmodels
    with explicit image dummies); written with the normal equations so that 1.3M rows fit
    in seconds (statsmodels' SVD/QR of the N x K design takes tens of seconds)."""
    y = demean_within(design.y, design.absorbed)
    X = demean_within(design.X, design.absorbed)
    xtx = X.T @ X
    eig = np.linalg.eigvalsh(xtx)
    if eig[0] <= eig[-1] * 1e-10:
        rank = int((eig > eig[-1] * 1e-10).sum())
        raise ValueError(f"self-preference design is rank deficient ({rank} < "
                         f"{X.shape[1]}): e.g. every model in one family, or fewer than "
                         "3 models")
    bread = np.linalg.inv(xtx)
    params = bread @ (X.T @ y)
    resid = y - X @ params
    n_clusters = int(design.images.max()) + 1 if len(y) else 0
    scores = X * resid[:, None]
    sums = np.stack([np.bincount(design.images, weights=scores[:, j], minlength=n_clusters)
                     for j in range(X.shape[1])], axis=1)
    n, k = X.shape
    factor = n_clusters / (n_clusters - 1) * (n - 1) / (n - k)
    cov = factor * bread @ (sums.T @ sums) @ bread
    return ClusteredFit(params, cov, n, n_clusters)


def self_preference(scores: pd.DataFrame, models: Sequence[str],
                    families: Mapping[str, str | Sequence[str]], ci: float = 0.95,
                    scale: float = SCORE_SCALE, absorb: str = "caption") -> pd.DataFrame:
    """Per evaluator: own-caption and family effects in score points with `ci` intervals
    (beyond the paper; module docstring). Columns as `SELFPREF` without the philautia
    score columns."""
    models = list(models)
    design = build_design(scores, models, families, scale, absorb)
    fit = fit_absorbed(design)
    params = pd.Series(fit.params, index=design.columns)
    bse = pd.Series(fit.bse, index=design.columns)
    pvalues = pd.Series(fit.pvalues(), index=design.columns)
    bounds = pd.DataFrame(fit.conf_int(ci), index=design.columns)
    sib = siblings(models, families)
    e, g = design.evaluator, design.generator
    rows = []
    for i, model in enumerate(models):
        row: dict[str, Any] = {"model": model}
        for kind in ("own", "family"):
            name = f"{kind}:{model}"
            present = name in params.index
            row.update({
                f"{kind}_effect": params.get(name, np.nan),
                f"{kind}_se": bse.get(name, np.nan),
                f"{kind}_ci_low": bounds[0].get(name, np.nan) if present else np.nan,
                f"{kind}_ci_high": bounds[1].get(name, np.nan) if present else np.nan,
                f"{kind}_p_value": pvalues.get(name, np.nan),
            })
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


def run_selfpref(config: Mapping[str, Any], scores_path: str, philautia_path: str
                 ) -> pd.DataFrame:
    """The `selfpref` step: one setting's long scores table -> the SELFPREF table."""
    from judgebias.study import study_models

    models = study_models(config, "philautia")
    effects = self_preference(pd.read_parquet(scores_path), models,
                              model_families(config, models), ci=config["philautia"]["ci"])
    return with_philautia(effects, pd.read_parquet(philautia_path))
