"""Rendering the manipulated images (seed 004 Table 1, Appendix B.3).

Each manipulated image is an artifact keyed by (original image, recipe, the code and
options that draw it): the key addresses a cache outside every output (like the model
journal), so when a grid gains a value, its render job draws only the new value's images
and copies the rest from the cache. A render set is one manipulation's grid (one job per
manipulation) or the analysis judge's combinations; its table lists every (item, recipe)
it was asked for, with the image or the reason there is none.

Role: a helper of steps.py's render steps: the render jobs and the render cache.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from PIL import Image

from judgebias.importgraph import code_version
from judgebias.io.artifacts import write_bytes
from judgebias.studies.frame.recipes import applies, parse_recipe, recipe_id, step

if TYPE_CHECKING:
    from judgebias.studies.frame.manipulate import Box
    from judgebias.studies.frame.params import Beauty, FrameParams

log = logging.getLogger(__name__)

STATUS_OK = "ok"
STATUS_UNAVAILABLE = "unavailable"

# How a render is written. PNG is lossless, so the level changes bytes, never pixels:
# zlib level 1 encodes a 256 px render in 5.9 ms against 26.8 ms at Pillow's default 6,
# for 4.5 % more bytes (measured on the default renders; encoding was 73 % of a render
# job). It is part of the render key: a judge's request key hashes the image bytes, so
# the same pixels encoded otherwise are another request, and a cache hit must give the
# bytes a fresh draw would.
PNG_OPTIONS: dict[str, Any] = {"format": "PNG", "compress_level": 1}
# A render's bytes are a function of this module's code, of the project modules it
# imports and of the numeric libraries' versions (Pillow encodes): all in the render key.
MANIPULATION_CODE = "judgebias.studies.frame.manipulate"
# The weights' digests, remembered by file identity (judgebias.io.filedigest), beside the
# cache's entries (whose folders are two hex characters).
MEMO = "file-sha256"


def grid_jobs(items: pd.DataFrame, manipulation: str, values: Sequence[Any]) -> pd.DataFrame:
    """(item_id, recipe) for every item of a domain the manipulation applies to and every
    grid value of it (`values`, in the order params lists them)."""
    recipes = [step(manipulation, value).id for value in values]
    rows = [(item, recipe) for item, domain in zip(items["item_id"], items["domain"],
                                                   strict=True)
            if applies(manipulation, domain) for recipe in recipes]
    return pd.DataFrame(rows, columns=["item_id", "recipe"])


def combination_jobs(items: pd.DataFrame, best: pd.DataFrame, sizes: Sequence[int]
                     ) -> pd.DataFrame:
    """Tables 6 and 11: every combination of each size of `sizes` (frame.combinations:
    pairs, triples) of the analysis judge's best single recipes of each domain, for every
    item of that domain."""
    rows = []
    for domain, chosen in best.groupby("domain", sort=False):
        steps = [step for recipe in chosen["recipe"] for step in parse_recipe(recipe)]
        combos = [recipe_id(list(c)) for size in sizes
                  for c in itertools.combinations(sorted(steps), size)]
        ids = items.loc[items["domain"] == domain, "item_id"]
        rows += [(item, recipe) for item in ids for recipe in combos]
    return pd.DataFrame(rows, columns=["item_id", "recipe"])


def _restorer(beauty: Beauty, name: str) -> Any:
    from judgebias.studies.frame.manipulate import restorer

    if name == "gfpgan":
        return restorer(name, weights=beauty.weights, face_models=beauty.face_models,
                        upscale=beauty.upscale, device=beauty.device)
    return restorer(name)


def beauty_key(beauty: Beauty, restorer: Any, memo: Path) -> dict[str, Any]:
    """What of the GFPGAN beauty filter changes its renders, for the render key: the
    weights' and the face models' content (sha256, remembered in `memo` by the files'
    identity: judgebias.io.filedigest), not their paths; the upscale; the versions of the
    libraries that run it; and the torch device type it draws on (GFPGAN's decoder draws
    noise, and CPU and CUDA draw different noise from one seed). Not the ``device``
    setting (``auto`` and ``cuda`` on a GPU job draw alike) nor ``gpus`` (issue 39)."""
    from importlib.metadata import PackageNotFoundError, version

    from judgebias.io.filedigest import file_sha256
    from judgebias.studies.frame.manipulate import FACE_MODEL_FILES

    def installed(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "not installed"

    weights, face_models = beauty.weights, beauty.face_models
    assert weights is not None and face_models is not None, "GFPGAN loaded without its files"
    faces = Path(face_models)
    return {"weights": file_sha256(weights, memo),
            "face_models": {name: file_sha256(faces / name, memo) for name in FACE_MODEL_FILES},
            "upscale": beauty.upscale,
            "libraries": {p: installed(p) for p in ("torch", "spandrel", "facexlib")},
            "device": getattr(restorer, "device_type", None)}


def render_key(image_bytes: bytes, recipe: str, context: Mapping[str, Any]) -> str:
    """The cache key of one manipulated image: the image's bytes, the recipe, what the
    recipe reads of its item and options (`context`; for GFPGAN :func:`beauty_key`), the
    manipulation code's version and the PNG options."""
    parts = [hashlib.sha256(image_bytes).hexdigest(), recipe, dict(context),
             code_version(MANIPULATION_CODE),
             PNG_OPTIONS]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


def render(frame: FrameParams, items: pd.DataFrame, jobs: pd.DataFrame, out_dir: Path
           ) -> pd.DataFrame:
    """Draw (or copy from the cache ``frame.render_cache``) every (item, recipe) of `jobs`
    into ``out_dir/<recipe>/<item_id>.png``; one RENDERS row each.

    A beauty-filter recipe whose face-restoration model cannot be loaded (GFPGAN without
    its package or weights) gets status "unavailable" with the message that says what to
    install; every other recipe still renders.
    """
    from judgebias.studies.frame import manipulate
    from judgebias.studies.frame.concepts import keyword

    cache_dir = Path(frame.render_cache)
    out_dir.mkdir(parents=True, exist_ok=True)  # the rule's output, even with no image to draw
    by_id = items.set_index("item_id")
    restorers: dict[str | None, Any] = {}  # by beauty filter (None: the recipe has none)
    beauty_keys: dict[str, dict[str, Any]] = {}  # the filter's part of the key, once a job
    rows: list[tuple[Any, str, str | None, str, str]] = []
    drawn = copied = 0
    sources: dict[Any, bytes] = {}  # each item's image read once (jobs list many recipes)
    picture: tuple[Any, Image.Image] | None = None  # the last item's decoded image
    for item_id, recipe in zip(jobs["item_id"], jobs["recipe"], strict=True):
        item = by_id.loc[item_id]
        steps = parse_recipe(recipe)
        beauty = next((s.setting for s in steps if s.manipulation == "beauty_filter"), None)
        if beauty is not None and beauty not in restorers:
            try:
                restorers[beauty] = _restorer(frame.beauty, beauty)
            except manipulate.BeautyFilterUnavailable as exc:
                restorers[beauty] = exc
        if isinstance(restorers.get(beauty), Exception):
            rows.append((item_id, recipe, None, STATUS_UNAVAILABLE, str(restorers[beauty])))
            continue
        concepts = json.loads(item["concepts"]) if item["concepts"] else {}
        boxes = _boxes(item["boxes"])
        missing = _missing(steps, keyword(item["domain"], concepts), boxes)
        if missing:
            rows.append((item_id, recipe, None, STATUS_UNAVAILABLE, missing))
            continue
        if beauty == "gfpgan" and beauty not in beauty_keys:
            beauty_keys[beauty] = beauty_key(frame.beauty, restorers[beauty],
                                             cache_dir / MEMO)
        context = {"instruction": item["instruction"],
                   "keyword": keyword(item["domain"], concepts), "boxes": boxes,
                   "resize_back": frame.resize_back,
                   "beauty": beauty_keys.get(beauty) if beauty == "gfpgan" else None}
        if item_id not in sources:
            sources[item_id] = Path(item["image"]).read_bytes()
        key = render_key(sources[item_id], recipe, context)
        cached = cache_dir / key[:2] / f"{key}.png"
        if not cached.exists():
            if picture is None or picture[0] != item_id:  # apply copies, never edits it
                picture = item_id, Image.open(item["image"]).convert("RGB")
            manipulated = manipulate.apply(
                picture[1], steps,
                manipulate.ItemContext(context["instruction"], context["keyword"], boxes,
                                       restorers.get(beauty), frame.resize_back))
            write_bytes(_png(manipulated), cached)
            drawn += 1
        else:
            copied += 1
        target = out_dir / recipe / f"{item_id}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        _place(cached, target)
        rows.append((item_id, recipe, str(target), STATUS_OK, ""))
    log.info("%d images: %d drawn, %d from the render cache, %d unavailable",
             len(rows), drawn, copied, sum(r[3] != STATUS_OK for r in rows))
    return pd.DataFrame(rows, columns=["item_id", "recipe", "image", "status", "message"])


def _place(cached: Path, target: Path) -> None:
    """Put a cached render at `target`: a hard link where the cache and the output share a
    filesystem (no second copy of thousands of renders, and no copying time), else a copy.
    The cache never rewrites an entry in place (write_bytes renames a new file over it),
    so a linked output keeps its bytes whatever the cache does later."""
    target.unlink(missing_ok=True)
    try:
        os.link(cached, target)
    except OSError:
        shutil.copyfile(cached, target)


def _boxes(column: Any) -> tuple[Box, ...]:
    """An item's boxes from its JSON ``boxes`` cell; an item without boxes (an imported
    table's empty cell, read back as null or NaN) has none."""
    if not isinstance(column, str) or not column:
        return ()
    return tuple((int(x0), int(y0), int(x1), int(y1)) for x0, y0, x1, y1 in json.loads(column))


def _missing(steps: tuple, keyword: str | None, boxes: tuple) -> str:
    """Why an item cannot get a recipe ("" if it can): a keyword overlay needs the item's
    object concept, a bounding box its box annotations."""
    names = {s.manipulation for s in steps}
    if "keyword_overlay" in names and not keyword:
        return "no object concept to overlay (the item has no 'object' in its concepts)"
    if "bounding_box" in names and not boxes:
        return "no box annotation (the item's 'boxes' is empty)"
    return ""


def _png(image: Image.Image) -> bytes:
    import io

    buffer = io.BytesIO()
    image.save(buffer, **PNG_OPTIONS)
    return buffer.getvalue()
