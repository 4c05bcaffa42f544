"""MMB's steps before the experiment: data, instruction pool, embeddings and clusters
(seed 002 §5). Each reads the files its rule declares and writes its outputs atomically."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from judgebias.artifacts import read_table, write_frame, write_json, write_table, write_text
from judgebias.config import ConfigError, input_errors
from judgebias.studies.mmb.tables import EMBEDDINGS, PAIRS, SUPPORT

log = logging.getLogger(__name__)

HPS = "hps"  # the HPSv2 protocol's part of the clusters table (fold -1)
MJB = "mjb"  # the MJBench protocol's part, one clustering per held-out fold


def build_data(config: Mapping[str, Any], pairs_out: str, support_out: str, images: Path,
               summary_out: str) -> None:
    """The pair and support tables (and their images) from the dataset block. The data
    must carry the design (data_errors) before anything is written: this is the first
    job, so a shortfall stops the run before any judge call is paid."""
    from judgebias.studies.mmb.pairs import build_dataset

    block = config["mmb"]["dataset"]
    pairs, support, summary = build_dataset(block, images, seed=block["seed"])
    errors = data_errors(config, pairs, support, summary)
    if errors:
        raise ConfigError("\n".join(errors))
    write_table(pairs, pairs_out, PAIRS)
    write_table(support, support_out, SUPPORT)
    write_json(summary, summary_out)
    log.info("%d pairs (%s), %d support images", len(pairs),
             pairs["split"].value_counts().to_dict(), len(support))


def data_errors(config: Mapping[str, Any], pairs: pd.DataFrame, support: pd.DataFrame,
                summary: Mapping[str, Any]) -> list[str]:
    """Every check of the params against the data that needs no judge answer, one line
    each naming the key, the file and the count: the largest D_val against the training
    pairs (HPSv2) and against each MJBench fold's validation pairs, D_sup (256 x K in the
    paper) against the training images, K against each fold's support, the MJBench folds
    against its prompts, and test pairs at all. (The factorial checks D_val again against
    the pairs a judge answered usably.)"""
    mmb = config["mmb"]
    files, name = summary["files"], mmb["dataset"]["name"]
    n_val, k_max = max(mmb["design"]["n_val"]), max(mmb["clustering"]["ks"])
    split = pairs["split"]
    errors = []
    if not (split == "test").any():
        errors.append(f"mmb.dataset.{name}: {files['test']} gives no test pair "
                      f"({summary['tied_pairs_dropped']} tied pairs dropped)")
    n_train = int((split == "train").sum())
    if n_val > n_train:
        sampled = mmb["dataset"].get("val_candidates")
        how = f"mmb.dataset.val_candidates = {sampled}" if sampled else (
            "one per prompt with a preferred and a non-preferred image")
        errors.append(f"mmb.design.n_val: {n_val} validation pairs asked, but "
                      f"{files['train']} gives {n_train} ({how})")
    shortfall = support_shortfall(mmb["clustering"], summary["support_pool"])
    if shortfall:
        errors.append(f"{shortfall} in {files['train']}")
    if files["mjbench"]:
        errors += _mjbench_errors(mmb, pairs, support, files["mjbench"], n_val, k_max)
    return errors


def _mjbench_errors(mmb: Mapping[str, Any], pairs: pd.DataFrame, support: pd.DataFrame,
                    path: str, n_val: int, k_max: int) -> list[str]:
    """The MJBench protocol's folds: each held-out fold fits on the other folds'
    validation pairs and clusters their originals (seed 002 §5)."""
    mjb = pairs[pairs["source"] == "mjbench"]
    n_folds = (mmb["dataset"].get("mjbench_protocol") or {}).get("n_folds", 10)
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


def build_pool(config: Mapping[str, Any], out: str) -> None:
    """The instruction pool: the built-in one, the `extra` file's, and, with `grow`, the
    writer model's rephrasings (seed 002 §5). Ids must be unique; texts are kept verbatim."""
    from judgebias.studies.mmb.jobs import grow_pool

    spec = config["mmb"]["instructions"]
    pool = base_pool(config)
    if spec["grow"]:
        grown = grow_pool(config, spec["grow"]["writer"], spec["grow"]["n"],
                          spec["grow"].get("seed", 0), pool)
        log.info("writer %s added %d of %d asked instructions", spec["grow"]["writer"],
                 len(grown), spec["grow"]["n"])
        pool = pd.concat([pool, grown[["id", "kind", "text"]]], ignore_index=True)
    duplicated = pool["id"][pool["id"].duplicated()].tolist()
    if duplicated:
        raise ConfigError(f"mmb.instructions: duplicate instruction ids {duplicated}")
    largest = max(config["mmb"]["design"]["n_prompts"])
    if largest > len(pool):
        raise ConfigError(f"mmb.design.n_prompts: {largest} prompts per ensemble, but the "
                          f"pool has {len(pool)} instructions")
    write_text(yaml.safe_dump(pool.to_dict("records"), sort_keys=False, width=1000), out)


def base_pool(config: Mapping[str, Any]) -> pd.DataFrame:
    """The pool before the writer grows it: the built-in instructions and the `extra`
    file's."""
    from judgebias.studies.mmb.params import builtin_pool

    spec = config["mmb"]["instructions"]
    pool = pd.DataFrame(builtin_pool(), columns=["id", "kind", "text"])
    if spec["extra"]:
        with input_errors("mmb.instructions.extra"):
            pool = pd.concat([pool, read_instructions(spec["extra"])], ignore_index=True)
    return pool


def read_instructions(path: str) -> pd.DataFrame:
    """A YAML list of {id, kind, text}; a bad entry is an error naming its index."""
    with open(path, encoding="utf-8") as handle:
        entries = yaml.safe_load(handle)
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a list of {{id, kind, text}}")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not all(
                isinstance(entry.get(k), str) and entry[k] for k in ("id", "kind", "text")):
            raise ValueError(f"{path}: entry {i} needs non-empty strings id, kind and text")
    return pd.DataFrame(entries, columns=["id", "kind", "text"])


def support_shortfall(clustering: Mapping[str, Any], available: int) -> str | None:
    """The error line when D_sup (support_per_cluster x max K) needs more training images
    than `available`; taking fewer would silently change the protocol."""
    per_cluster, k_max = clustering["support_per_cluster"], max(clustering["ks"])
    if per_cluster * k_max <= available:
        return None
    return (f"mmb.clustering.support_per_cluster: {per_cluster} x max K {k_max} = "
            f"{per_cluster * k_max} support images asked, but there are {available} "
            "training images")


def support_images(config: Mapping[str, Any], support: pd.DataFrame) -> pd.DataFrame:
    """Every image a D_sup may use: the first support_per_cluster x max(K) images of the
    HPSv2 part's seeded support order (each K then takes its own first |D_sup|:
    cluster.support_size), and every MJBench original (its folds)."""
    clustering = config["mmb"]["clustering"]
    pool = support[support["fold"].isna()]
    shortfall = support_shortfall(clustering, len(pool))
    if shortfall:
        raise ValueError(shortfall)
    size = clustering["support_per_cluster"] * max(clustering["ks"])
    return pd.concat([pool.head(size), support[support["fold"].notna()]], ignore_index=True)


def embed(config: Mapping[str, Any], pairs_path: str, support_path: str, out: str) -> None:
    """CLIP embeddings of every image a pair shows and of D_sup, cached per image hash."""
    from judgebias.studies.mmb.embed import EmbeddingSpec, embed_images

    pairs = read_table(pairs_path, PAIRS)
    support = support_images(config, read_table(support_path, SUPPORT))
    paths = list(dict.fromkeys([*pairs["image_a"], *pairs["image_b"],
                                *support["image_path"]]))
    block = config["mmb"]["embedding"]
    spec = EmbeddingSpec.from_params(block)
    hashes, vectors, stats = embed_images(paths, spec, Path(block["cache_dir"]))
    log.info("embedded %d images with %s: %s", len(paths), spec.description(), stats)
    write_table(pd.DataFrame({"image_path": paths, "image_sha256": hashes,
                              "embedding": list(vectors.astype(np.float32))}), out, EMBEDDINGS)


def cluster(config: Mapping[str, Any], pairs_path: str, support_path: str,
            embeddings_path: str, out: str) -> None:
    """Seed 002 §4-5: FAISS spherical k-means on D_sup for every (K, clustering seed), and
    each pair image's cosine to every centroid (p(z|x) applies tau later, so changing tau
    reclusters nothing). The HPSv2 part clusters the first |D_sup| images of the seeded
    training support (cluster.support_size: 256 x K in the paper); the MJBench part
    clusters, for each held-out fold, the originals of the other folds (seed 002 §5)."""
    from judgebias.studies.mmb.cluster import spherical_kmeans, support_size

    clustering = config["mmb"]["clustering"]
    pairs = read_table(pairs_path, PAIRS)
    support = support_images(config, read_table(support_path, SUPPORT))
    table = read_table(embeddings_path, EMBEDDINGS)
    vectors = dict(zip(table["image_path"], np.stack(table["embedding"].to_numpy()),
                       strict=True))
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
        for k in clustering["ks"]:
            x_k = x[:support_size(k, clustering)] if part == HPS else x
            if k > len(x_k):
                raise ValueError(f"mmb.clustering.ks: K = {k} exceeds the {len(x_k)} support "
                                 f"images of part {part} fold {fold}")
            for seed in range(clustering["seeds"]):
                centroids = spherical_kmeans(x_k, k, seed=seed, niter=clustering["niter"])
                rows.append(pd.DataFrame({
                    "part": part, "fold": fold, "k": k, "cluster_seed": seed,
                    "pair_id": part_pairs["pair_id"].to_numpy(),
                    "cos_a": list(xa @ centroids.T), "cos_b": list(xb @ centroids.T),
                    "cos_mean": list(mean @ centroids.T)}))
    frame = pd.concat(rows, ignore_index=True)
    for column in ("cos_a", "cos_b", "cos_mean"):
        frame[column] = [np.asarray(v, dtype=np.float32) for v in frame[column]]
    write_frame(frame, out)
