"""What MMB's params ask of the built data (part of the data role): the checks that stop
the first job before any judge call is paid (data_errors), and the support images a D_sup
may use (support_images)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from judgebias.studies.mmb.params import Clustering, MjbenchProtocol, MmbParams


def data_errors(params: MmbParams, pairs: pd.DataFrame, support: pd.DataFrame,
                summary: Mapping[str, Any]) -> list[str]:
    """Every check of the params against the data that needs no judge answer, one line
    each naming the key, the file and the count: the largest D_val against the training
    pairs (HPSv2) and against each MJBench fold's validation pairs, D_sup (256 x K in the
    paper) against the training images, K against each fold's support, the MJBench folds
    against its prompts, and test pairs at all. (The factorial checks D_val again against
    the pairs a judge answered usably.) The data rule declares the keys they read: the
    job fails or not by them."""
    files, name = summary["files"], params.dataset.name
    n_val, k_max = max(params.design.n_val), max(params.clustering.ks)
    split = pairs["split"]
    errors = []
    if not (split == "test").any():
        errors.append(f"mmb.dataset.{name}: {files['test']} gives no test pair "
                      f"({summary['tied_pairs_dropped']} tied pairs dropped)")
    n_train = int((split == "train").sum())
    if n_val > n_train:
        sampled = params.dataset.val_candidates
        how = f"mmb.dataset.val_candidates = {sampled}" if sampled else (
            "one per prompt with a preferred and a non-preferred image")
        errors.append(f"mmb.design.n_val: {n_val} validation pairs asked, but "
                      f"{files['train']} gives {n_train} ({how})")
    shortfall = support_shortfall(params.clustering, summary["support_pool"])
    if shortfall:
        errors.append(f"{shortfall} in {files['train']}")
    if files["mjbench"]:
        errors += _mjbench_errors(params.dataset.mjbench_protocol, pairs, support,
                                  files["mjbench"], n_val, k_max)
    return errors


def _mjbench_errors(protocol: MjbenchProtocol | None, pairs: pd.DataFrame,
                    support: pd.DataFrame, path: str, n_val: int, k_max: int) -> list[str]:
    """The MJBench protocol's folds (``mmb.dataset.mjbench_protocol``; None: its
    defaults): each held-out fold fits on the other folds' validation pairs and clusters
    their originals (seed 002 §5)."""
    mjb = pairs[pairs["source"] == "mjbench"]
    n_folds = protocol.n_folds if protocol else 10
    prompts = mjb["group"].nunique()
    if n_folds > prompts:
        return [f"mmb.dataset.mjbench_protocol.n_folds: {n_folds} folds asked, but {path} "
                f"has {prompts} prompts"]
    if not (mjb["split"] == "mjb_test").any():
        return [f"mmb.dataset.mjbench: {path} gives no no-preference pair (every prompt "
                "has a single image)"]
    errors = []
    train, originals = mjb[mjb["split"] == "mjb_train"], support[support["fold"].notna()]
    folds = sorted(int(f) for f in mjb["fold"].dropna().unique())
    pairs_left, fold = min((int((train["fold"] != f).sum()), f) for f in folds)
    if n_val > pairs_left:
        errors.append(f"mmb.design.n_val: {n_val} validation pairs asked, but {path} leaves "
                      f"{pairs_left} outside MJBench fold {fold}")
    images_left, fold = min((int((originals["fold"] != f).sum()), f) for f in folds)
    if k_max > images_left:
        errors.append(f"mmb.clustering.ks: K = {k_max} exceeds the {images_left} images "
                      f"{path} leaves outside MJBench fold {fold} (its support set)")
    return errors


def support_shortfall(clustering: Clustering, available: int) -> str | None:
    """The error line when D_sup (support_per_cluster x max K) needs more training images
    than `available`; taking fewer would silently change the protocol."""
    per_cluster, k_max = clustering.support_per_cluster, max(clustering.ks)
    if per_cluster * k_max <= available:
        return None
    return (f"mmb.clustering.support_per_cluster: {per_cluster} x max K {k_max} = "
            f"{per_cluster * k_max} support images asked, but there are {available} "
            "training images")


def support_images(clustering: Clustering, support: pd.DataFrame) -> pd.DataFrame:
    """Every image a D_sup may use: the first support_per_cluster x max(K) images of the
    HPSv2 part's seeded support order (each K then takes its own first |D_sup|:
    cluster.support_size), and every MJBench original (its folds)."""
    pool = support[support["fold"].isna()]
    shortfall = support_shortfall(clustering, len(pool))
    if shortfall:
        raise ValueError(shortfall)
    size = clustering.support_per_cluster * max(clustering.ks)
    return pd.concat([pool.head(size), support[support["fold"].notna()]], ignore_index=True)
