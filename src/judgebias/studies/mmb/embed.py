"""CLIP image embeddings phi_I(x) for MMB (seed 002 §5: pretrained CLIP ViT-B/16),
through open_clip, batched, on a GPU when the rule got one, and cached per image hash.
Role: the model the embed step runs (a model job outside the judging core, which runs
the judge calls of jobs.py).

The cache is a SQLite file per embedding function (``<cache_dir>/<fingerprint>.sqlite``,
WAL): a batch's rows are committed together once computed, so a killed job loses at most
the batch it was computing, and a rerun, a new image or a changed K embeds only what is
not cached. The fingerprint covers what changes an embedding (issue 39): the
architecture, the weights (pretrained tag, the checkpoint file's sha256, remembered by the
file's identity so a large checkpoint is read once: judgebias.io.filedigest; or the
random-init seed), the input size, open_clip's and torch's versions, and the torch device
type (CPU and CUDA kernels round differently: a GPU rerun of a job first run on the CPU
embeds again rather than mixing the two, so deleting the cache changes no number).

Offline default: no pretrained weights can be downloaded on these machines, so without
``pretrained`` or ``checkpoint`` the architecture's weights are randomly initialised from
``init_seed``. A random ViT's patch embedding is a random linear projection of pixel
patches, which keeps patch colour and texture statistics apart (close to a
Johnson-Lindenstrauss projection), and the synthetic styles differ exactly in palette and
texture, so they still cluster (tests/mmb/test_mmb_embed.py measures it). Real images need
pretrained CLIP; the report says which weights were used.
"""

from __future__ import annotations

import hashlib
import io
import logging
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from judgebias.io.sqlitewal import connect_wal
from judgebias.models.gpu import torch_device

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddingSpec:
    """Which embedding function: open_clip `architecture` with `pretrained` weights (a
    tag), a local `checkpoint` file, or neither (random weights from `init_seed`)."""

    architecture: str = "ViT-B-16"
    pretrained: str | None = None
    checkpoint: str | None = None
    init_seed: int = 0
    image_size: int | None = None
    batch_size: int = 64
    device: str = "auto"

    @classmethod
    def from_params(cls, block: Mapping[str, Any]) -> EmbeddingSpec:
        return cls(**{k: block[k] for k in ("architecture", "pretrained", "checkpoint",
                                            "init_seed", "image_size", "batch_size",
                                            "device")
                      if k in block})

    def weights(self) -> str | None:
        return self.checkpoint or self.pretrained

    def description(self) -> str:
        size = f" at {self.image_size} px" if self.image_size else ""
        if self.checkpoint:
            return f"open_clip {self.architecture}{size}, weights from {self.checkpoint}"
        if self.pretrained:
            return f"open_clip {self.architecture}{size}, pretrained {self.pretrained}"
        return (f"open_clip {self.architecture}{size} with RANDOM weights (init seed "
                f"{self.init_seed}): no pretrained weights can be downloaded offline")


MEMO = "file-sha256"  # the checkpoints' digests, in the cache folder (judgebias.io.filedigest)


def fingerprint(spec: EmbeddingSpec, device: str = "cpu", memo: Path | None = None) -> str:
    """Names the embedding function computed on `device` (the cache namespace); `memo`
    remembers the checkpoint's digest."""
    import open_clip
    import torch

    from judgebias.io.filedigest import file_sha256

    if spec.checkpoint and not Path(spec.checkpoint).is_file():
        raise FileNotFoundError(f"embedding checkpoint {spec.checkpoint} does not exist")
    weights = (f"file:{file_sha256(spec.checkpoint, memo)}" if spec.checkpoint
               else f"tag:{spec.pretrained}" if spec.pretrained else f"init:{spec.init_seed}")
    text = (f"{spec.architecture}|{weights}|{spec.image_size}|"
            f"open_clip-{open_clip.__version__}|torch-{torch.__version__}|"
            f"{_device_type(device)}")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _device_type(device: str) -> str:
    """"cuda" for "cuda:1": the kind of device decides the arithmetic, not which one."""
    return device.split(":", 1)[0]


@cache
def load_model(spec: EmbeddingSpec) -> tuple[Any, Any, str]:
    """(model in eval mode, its preprocessing transform, device). A missing checkpoint is
    an error naming it before anything loads."""
    import open_clip
    import torch

    if spec.checkpoint and not Path(spec.checkpoint).is_file():
        raise FileNotFoundError(f"embedding checkpoint {spec.checkpoint} does not exist")
    from judgebias.models.gpu import device_line

    device = torch_device(spec.device)
    log.info("%s: %s", spec.architecture, device_line(device))
    torch.manual_seed(spec.init_seed)
    model, _, preprocess = open_clip.create_model_and_transforms(
        spec.architecture, pretrained=spec.weights(), device=device,
        force_image_size=spec.image_size)
    model.eval()
    return model, preprocess, device


def _encode(spec: EmbeddingSpec, images: Sequence[bytes]) -> np.ndarray:
    import torch
    from PIL import Image

    model, preprocess, device = load_model(spec)
    batch = torch.stack([preprocess(Image.open(io.BytesIO(b)).convert("RGB"))
                         for b in images]).to(device)
    with torch.inference_mode():
        features = model.encode_image(batch).float()
    features = features / features.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return features.cpu().numpy().astype(np.float32)


def _open_cache(cache_dir: Path, name: str) -> sqlite3.Connection:
    cache_dir.mkdir(parents=True, exist_ok=True)
    db = connect_wal(cache_dir / f"{name}.sqlite")
    db.execute("CREATE TABLE IF NOT EXISTS embeddings (sha256 TEXT PRIMARY KEY, "
               "vector BLOB NOT NULL)")
    return db


def embed_images(paths: Sequence[str], spec: EmbeddingSpec, cache_dir: Path
                 ) -> tuple[list[str], np.ndarray, dict[str, Any]]:
    """(sha256 per path, (n, d) unit embeddings in input order, stats). Only images whose
    content is not cached are embedded; identical images once."""
    start = time.perf_counter()
    contents = [Path(p).read_bytes() for p in paths]
    hashes = [hashlib.sha256(c).hexdigest() for c in contents]
    device = torch_device(spec.device)  # the one load_model computes on
    name = fingerprint(spec, device, Path(cache_dir) / MEMO)
    with _open_cache(Path(cache_dir), name) as db:
        found = {}
        unique = list(dict.fromkeys(hashes))
        for i in range(0, len(unique), 500):
            chunk = unique[i:i + 500]
            rows = db.execute(f"SELECT sha256, vector FROM embeddings WHERE sha256 IN "
                              f"({','.join('?' * len(chunk))})", chunk).fetchall()
            found.update({h: np.frombuffer(v, dtype=np.float32) for h, v in rows})
        missing = [h for h in unique if h not in found]
        content_of = dict(zip(hashes, contents, strict=True))
        for i in range(0, len(missing), spec.batch_size):
            batch = missing[i:i + spec.batch_size]
            vectors = _encode(spec, [content_of[h] for h in batch])
            with db:  # one transaction per batch: all of it or none of it
                db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?)",
                               [(h, v.tobytes()) for h, v in zip(batch, vectors, strict=True)])
            found.update(zip(batch, vectors, strict=True))
    db.close()
    stats = {"images": len(paths), "cached": len(unique) - len(missing),
             "computed": len(missing), "seconds": round(time.perf_counter() - start, 2),
             "device": device if missing else "none"}
    return hashes, np.stack([found[h] for h in hashes]), stats
