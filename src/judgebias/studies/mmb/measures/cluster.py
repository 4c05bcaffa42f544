"""Image clusters for MMB (seed 002 §4 "Soft Image Grouping", §5 "Models"): FAISS
spherical k-means on the support set's CLIP embeddings, and soft assignments
p(z | x) ∝ exp(cos(phi(x), g_z) / tau)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.special import softmax

from judgebias.studies.mmb.estimator import unit_rows
from judgebias.studies.mmb.tables import HPS, MJB

if TYPE_CHECKING:
    from judgebias.studies.mmb.params import Clustering


def normalise(X: np.ndarray) -> np.ndarray:
    """Rows at unit L2 norm, float32 (the estimator's arithmetic: one definition, so the
    saved MMB fit's cosines are the clustering step's to the bit)."""
    return unit_rows(X)


def spherical_kmeans(X: np.ndarray, k: int, *, seed: int, niter: int = 25) -> np.ndarray:
    """Seed 002 §5: FAISS k-means with ``spherical=True`` (centroids re-normalised each
    iteration, so assignment by inner product is by cosine) on L2-normalised `X`. Returns
    (k, d) unit centroids. K = 1 is the normalised mean."""
    import faiss

    X = normalise(X)
    if k > len(X):
        raise ValueError(f"cannot fit K = {k} clusters to {len(X)} support images")
    if k == 1:
        return normalise(X.mean(axis=0, keepdims=True))
    kmeans = faiss.Kmeans(X.shape[1], k, niter=niter, seed=int(seed), spherical=True,
                          verbose=False, min_points_per_centroid=1)
    kmeans.train(np.ascontiguousarray(X))
    assert kmeans.centroids is not None  # None only before train
    return normalise(kmeans.centroids)


def support_size(k: int, clustering: Clustering) -> int:
    """|D_sup| for K = `k` from the ``mmb.clustering`` block: support_per_cluster x K
    (``support: per_k``, seed 002 §5: "always composed of 256 x K samples"), or
    support_per_cluster x max(K) for every K (``max_k``: every K sees the same images)."""
    factor = k if clustering.support == "per_k" else max(clustering.ks)
    return clustering.support_per_cluster * factor


def softmax_cosines(cosines: np.ndarray, tau: float) -> np.ndarray:
    """p(z | x) = softmax_z(cos(phi(x), g_z) / tau) (seed 002 §4); tau > 0."""
    if tau <= 0:
        raise ValueError(f"tau must be positive, got {tau}")
    return softmax(np.asarray(cosines, dtype=float) / tau, axis=1)


def soft_assign(X: np.ndarray, centroids: np.ndarray, tau: float) -> np.ndarray:
    """p(z | x) for each row of `X`."""
    return softmax_cosines(normalise(X) @ normalise(centroids).T, tau)


def mean_entropy(R: np.ndarray) -> float:
    """Mean entropy (nats) of the rows of `R`: 0 for hard, log K for uniform assignments."""
    R = np.asarray(R, dtype=float)
    return float(-(R * np.log(np.where(R > 0, R, 1.0))).sum(axis=1).mean())


def pair_cosines(clustering: Clustering, pairs: pd.DataFrame, support: pd.DataFrame,
                 vectors: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Seed 002 §4-5: spherical k-means on D_sup for every (K, clustering seed), and each
    pair image's cosine to every centroid (p(z|x) applies tau later, so changing tau
    reclusters nothing). The HPSv2 part clusters the first |D_sup| images of the seeded
    training support (support_size: 256 x K in the paper); the MJBench part clusters, for
    each held-out fold, the originals of the other folds (seed 002 §5). `support` holds the
    images a D_sup may use, `vectors` every image's embedding by path."""
    parts = [(HPS, -1, support[support["fold"].isna()], pairs[pairs["split"].isin(
        ["test", "train"])])]
    mjb = pairs[pairs["split"].isin(["mjb_train", "mjb_test"])]
    for fold in sorted(mjb["fold"].dropna().unique()):
        parts.append((MJB, int(fold), support[support["fold"].notna()
                                              & (support["fold"] != fold)], mjb))
    a_all, b_all = (np.stack([vectors[p] for p in pairs[c]]) for c in ("image_a", "image_b"))
    index = {pid: i for i, pid in enumerate(pairs["pair_id"])}
    rows = []
    for part, fold, sup, part_pairs in parts:
        if sup.empty or part_pairs.empty:
            continue
        x = np.stack([vectors[p] for p in sup["image_path"]])
        rows_of = part_pairs["pair_id"].map(index).to_numpy()
        xa, xb = a_all[rows_of], b_all[rows_of]
        mean = (xa + xb) / np.linalg.norm(xa + xb, axis=1, keepdims=True).clip(1e-12)
        for k in clustering.ks:
            x_k = x[:support_size(k, clustering)] if part == HPS else x
            if k > len(x_k):
                raise ValueError(f"mmb.clustering.ks: K = {k} exceeds the {len(x_k)} support "
                                 f"images of part {part} fold {fold}")
            for seed in range(clustering.seeds):
                centroids = spherical_kmeans(x_k, k, seed=seed, niter=clustering.niter)
                rows.append(pd.DataFrame({
                    "part": part, "fold": fold, "k": k, "cluster_seed": seed,
                    "pair_id": part_pairs["pair_id"].to_numpy(),
                    "cos_a": list(xa @ centroids.T), "cos_b": list(xb @ centroids.T),
                    "cos_mean": list(mean @ centroids.T)}))
    frame = pd.concat(rows, ignore_index=True)
    for column in ("cos_a", "cos_b", "cos_mean"):
        frame[column] = [np.asarray(v, dtype=np.float32) for v in frame[column]]
    return frame
