"""Image clusters for MMB (seed 002 §4 "Soft Image Grouping", §5 "Models"): FAISS
spherical k-means on the support set's CLIP embeddings, and soft assignments
p(z | x) ∝ exp(cos(phi(x), g_z) / tau)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.special import softmax


def normalise(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float32)
    return X / np.linalg.norm(X, axis=1, keepdims=True).clip(1e-12)


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
    return normalise(kmeans.centroids)


def support_size(k: int, clustering: Mapping[str, Any]) -> int:
    """|D_sup| for K = `k` from the ``mmb.clustering`` block: support_per_cluster x K
    (``support: per_k``, seed 002 §5: "always composed of 256 x K samples"), or
    support_per_cluster x max(K) for every K (``max_k``: every K sees the same images)."""
    factor = k if clustering["support"] == "per_k" else max(clustering["ks"])
    return clustering["support_per_cluster"] * factor


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
