"""MMB's embeddings (open_clip, cached per image hash) and clusters (FAISS spherical
k-means, soft assignment), on a tiny random-weight CLIP so nothing is downloaded."""

from __future__ import annotations

import copy
import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from judgebias.studies.mmb.data import synthetic
from judgebias.studies.mmb.embed import EmbeddingSpec, embed_images, load_model
from judgebias.studies.mmb.measures.cluster import (
    mean_entropy,
    normalise,
    soft_assign,
    softmax_cosines,
    spherical_kmeans,
    support_size,
)

open_clip = pytest.importorskip("open_clip")
torch = pytest.importorskip("torch")

TINY = "judgebias-tiny-vit"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 2-layer ViT CLIP registered with open_clip (random weights, 32 px input)."""
    folder = tmp_path_factory.mktemp("configs")
    config = {"embed_dim": 32,
              "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 8,
                             "head_width": 32},
              "text_cfg": {"context_length": 16, "vocab_size": 1000, "width": 32, "heads": 2,
                           "layers": 1}}
    (folder / f"{TINY}.json").write_text(json.dumps(config))
    open_clip.add_model_config(folder / f"{TINY}.json")
    return EmbeddingSpec(architecture=TINY, batch_size=8)


@pytest.fixture(scope="module")
def styled(tmp_path_factory):
    """4 styles x 12 images of the synthetic default, with their planted style."""
    folder = tmp_path_factory.mktemp("images")
    paths, styles = [], []
    for s, style in enumerate(synthetic.STYLES):
        for i in range(12):
            path = folder / f"{s}_{i}.png"
            path.write_bytes(synthetic.png_bytes(synthetic.render(style, 1.0, 32, 100 * s + i)))
            paths.append(str(path))
            styles.append(style)
    return paths, np.array(styles)


def test_random_init_is_deterministic_and_unit_norm(tiny, styled, tmp_path):
    paths = styled[0][:6]
    _, first, stats = embed_images(paths, tiny, tmp_path / "a")
    _, again, _ = embed_images(paths, tiny, tmp_path / "b")
    np.testing.assert_allclose(first, again, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert stats["computed"] == 6 and stats["device"] == "cpu"
    other = EmbeddingSpec(architecture=TINY, init_seed=1)
    assert not np.allclose(embed_images(paths, other, tmp_path / "c")[1], first)


def test_cache_computes_only_what_is_new(tiny, styled, tmp_path):
    paths = styled[0]
    embed_images(paths[:10], tiny, tmp_path)
    _, _, stats = embed_images(paths[:10], tiny, tmp_path)
    assert stats["computed"] == 0 and stats["cached"] == 10
    _, vectors, stats = embed_images([*paths[:11], paths[0]], tiny, tmp_path)
    assert stats["computed"] == 1  # the new image only; the repeated one is cached
    np.testing.assert_array_equal(vectors[0], vectors[-1])


def test_local_checkpoint(tiny, styled, tmp_path):
    model, _, _ = load_model(tiny)
    checkpoint = tmp_path / "weights.pt"
    torch.save(model.state_dict(), checkpoint)
    spec = EmbeddingSpec(architecture=TINY, checkpoint=str(checkpoint), init_seed=99)
    from_file = embed_images(styled[0][:4], spec, tmp_path / "c1")[1]
    np.testing.assert_allclose(from_file, embed_images(styled[0][:4], tiny, tmp_path / "c2")[1],
                               atol=1e-5)
    missing = EmbeddingSpec(architecture=TINY, checkpoint=str(tmp_path / "nope.pt"))
    with pytest.raises(FileNotFoundError, match=r"nope\.pt does not exist"):
        embed_images(styled[0][:1], missing, tmp_path / "c3")


def test_random_weights_still_separate_the_synthetic_styles(tiny, styled, tmp_path):
    """Why the offline default works: the styles differ in palette and texture, which a
    random patch projection keeps apart. With K = number of styles two styles can share
    a cluster; with K = 2 x styles (the default report's K = 8) they mostly do not."""
    paths, styles = styled
    _, vectors, _ = embed_images(paths, tiny, tmp_path)
    purity = {}
    for k in (4, 8):
        assigned = soft_assign(vectors, spherical_kmeans(vectors, k, seed=0), 0.05).argmax(1)
        purity[k] = sum(Counter(styles[assigned == z]).most_common(1)[0][1]
                        for z in set(assigned)) / len(paths)
    assert purity[4] >= 0.7 and purity[8] >= 0.85 and purity[8] > purity[4]


def test_clusters_and_soft_assignment():
    rng = np.random.default_rng(0)
    centres = np.eye(3, 8)
    X = np.repeat(centres, 20, axis=0) + rng.normal(0, 0.05, (60, 8))
    truth = np.repeat(np.arange(3), 20)
    centroids = spherical_kmeans(X, 3, seed=0)
    np.testing.assert_allclose(np.linalg.norm(centroids, axis=1), 1.0, atol=1e-5)
    hard = soft_assign(X, centroids, 1e-4)
    assert len({tuple(sorted(set(truth[hard.argmax(1) == z]))) for z in range(3)}) == 3
    np.testing.assert_allclose(hard.sum(axis=1), 1.0)
    assert mean_entropy(hard) < 1e-3
    flat = soft_assign(X, centroids, 1e6)
    np.testing.assert_allclose(flat, 1 / 3, atol=1e-5)
    assert mean_entropy(flat) == pytest.approx(np.log(3), abs=1e-5)
    with pytest.raises(ValueError, match="K = 70 clusters to 60"):
        spherical_kmeans(X, 70, seed=0)
    with pytest.raises(ValueError, match="tau must be positive"):
        softmax_cosines(np.zeros((1, 2)), 0)


@pytest.mark.parametrize(("mode", "first"), [("per_k", {1: 3, 2: 6}), ("max_k", {1: 6, 2: 6})])
def test_support_set_per_k(tmp_path, default_params, mode, first):
    """Seed 002 §5: D_sup "is always composed of 256 x K samples": the cluster step gives
    K its first support_per_cluster x K images of the seeded support order (per_k), or
    every K the same support_per_cluster x max(K) (max_k). K = 1's centroid is the
    normalised mean of its D_sup, so the images it saw can be read back from the cosines."""
    from dataclasses import replace

    from judgebias.config import validate_params
    from judgebias.io.artifacts import write_table
    from judgebias.studies.mmb.params import MmbParams
    from judgebias.studies.mmb.steps import cluster
    from judgebias.studies.mmb.tables import EMBEDDINGS, PAIRS, SUPPORT

    rng = np.random.default_rng(0)
    vectors = normalise(rng.normal(size=(8, 5)))  # 6 support images, 2 shown in a pair
    names = [f"img{i}.png" for i in range(8)]
    write_table(pd.DataFrame({"image_path": names[:6], "group": "g", "fold": None,
                              "style": None, "image_sha256": names[:6]}
                             ).astype({"fold": "Int64"}),
                tmp_path / "support.parquet", SUPPORT)
    write_table(pd.DataFrame([{"pair_id": "p", "group": "t", "prompt": "x",
                               "image_a": names[6], "image_b": names[7], "preference": 1.0,
                               "split": "test", "fold": None, "source": "hpdv2",
                               "style_a": None, "style_b": None, "image_a_sha256": names[6],
                               "image_b_sha256": names[7]}]).astype({"fold": "Int64"}),
                tmp_path / "pairs.parquet", PAIRS)
    write_table(pd.DataFrame({"image_path": names, "image_sha256": names,
                              "embedding": list(vectors)}), tmp_path / "emb.parquet", EMBEDDINGS)
    params = MmbParams.from_params(validate_params(copy.deepcopy(default_params)))
    params = replace(params, clustering=replace(params.clustering, ks=(1, 2), seeds=1,
                                                niter=5, support_per_cluster=3, support=mode))
    cluster(params, pairs=tmp_path / "pairs.parquet", support=tmp_path / "support.parquet",
            embeddings=tmp_path / "emb.parquet", clusters=tmp_path / "clusters.parquet")
    rows = pd.read_parquet(tmp_path / "clusters.parquet").set_index("k")
    centroid = normalise(vectors[:first[1]].mean(axis=0, keepdims=True))[0]
    np.testing.assert_allclose(rows.loc[1, "cos_a"], [vectors[6] @ centroid], atol=1e-5)
    assert support_size(2, params.clustering) == first[2]


def test_the_embedding_cache_is_keyed_by_what_changes_an_embedding(tiny, styled, tmp_path,
                                                                   monkeypatch):
    """Issue 39: a cached embedding is reused exactly when a fresh one would be the same:
    the key holds the architecture, the weights (a checkpoint by its content, wherever
    it lies; a pretrained tag; the random-init seed), the input size, open_clip's and
    torch's versions, and the torch device type (CPU and CUDA kernels round differently,
    so a GPU rerun of a CPU run's job must not mix the two). Each change below misses;
    the unchanged key, and what changes no vector (the batch size), hit. The encoder is a
    stand-in: only the key is under test (the real one: the tests above)."""
    import dataclasses
    import os
    import shutil

    from judgebias.studies.mmb import embed

    monkeypatch.setattr(embed, "_encode", lambda spec, images: np.full(
        (len(images), 4), 0.5, dtype=np.float32))
    paths = styled[0][:2]
    cache = tmp_path / "cache"

    def computed(spec: EmbeddingSpec) -> int:
        return embed_images(paths, spec, cache)[2]["computed"]

    checkpoint = tmp_path / "weights" / "clip.pt"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"checkpoint, version 1")
    spec = EmbeddingSpec(architecture=TINY, checkpoint=str(checkpoint))
    assert computed(spec) == 2
    assert computed(spec) == 0
    assert computed(dataclasses.replace(spec, batch_size=1)) == 0
    stat = checkpoint.stat()
    checkpoint.write_bytes(b"checkpoint, version 2")  # same path, size and mtime
    os.utime(checkpoint, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert computed(spec) == 2
    moved = tmp_path / "clip-copy.pt"
    shutil.copyfile(checkpoint, moved)
    assert computed(dataclasses.replace(spec, checkpoint=str(moved))) == 0
    assert computed(dataclasses.replace(spec, image_size=48)) == 2
    assert computed(dataclasses.replace(spec, architecture="ViT-B-16")) == 2
    assert computed(EmbeddingSpec(architecture=TINY, pretrained="openai")) == 2
    assert computed(EmbeddingSpec(architecture=TINY, init_seed=1)) == 2
    monkeypatch.setattr(embed, "torch_device", lambda setting: "cuda")
    assert computed(spec) == 2
    assert computed(spec) == 0
    monkeypatch.setattr(open_clip, "__version__", "0.0.0-other")
    assert computed(spec) == 2
    monkeypatch.setattr(torch, "__version__", "0.0.0-other")
    assert computed(spec) == 2
