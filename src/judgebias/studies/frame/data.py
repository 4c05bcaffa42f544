"""FRAME's input dataset, the benchmark: the importer of the FRAME table format and the
construction stages of §4.1, both ending in the item table (tables.ITEMS).

The FRAME table format
----------------------
What a researcher with the real FRAME release (or any scored text-to-image set) writes:
one row per instance, as CSV (a header line, then one row per line) or JSON lines (one
object per line; a ``.json`` file may also hold one JSON array of objects). Columns:

``item_id``             required; unique text id
``domain``              required; people | animal | illustration | indoor | outdoor
``instruction``         required; the instruction the image is judged against
``image``               required; image file, relative to ``image_root`` (an absolute
                        path, or a ``..`` that climbs out of ``image_root``, is an error)
``human_score``         1-5; or ``annotator_1`` and ``annotator_2`` (each 1-5), whose mean
                        is then the human score (half points possible). Optional: a table
                        without scores is judged, only the human correlations are left out
``concepts``            optional; JSON object slot -> value (Table 8 slots of the domain:
                        people object/number/color/background/action, animal
                        object/number/background/action, outdoor
                        terrain/time_of_day/climate/season, indoor
                        space_type/object/color/number/angle, illustration
                        art_style/object/number/background); the keyword overlay writes its
                        ``object``
``perturbed_concepts``  optional; JSON object, the concepts of the prompt actually rendered
``n_perturbed``         optional; how many concepts were perturbed (integer)
``prompt``              optional; the perturbed prompt the image was generated from
``boxes``               optional; JSON list of [x0, y0, x1, y1] pixel boxes of the key
                        objects (x0 < x1, y0 < y1, inside the image); needed by the
                        bounding-box manipulation (seed 004 App. B.3: drawn by hand with
                        makesense.ai)
``image_b``             optional; a second image of the same prompt (Fig. 3's set B)
``alignment``           optional; a known true alignment in [0, 1] (synthetic sets only)
``source``              optional; where the row comes from (default: the file name)

In CSV the JSON columns are JSON text; in JSON lines they may be JSON text or plain
lists/objects. Empty cells are missing values. Other columns are ignored (with a warning
naming them). A bad row is an error naming the file, the row (1-based: CSV rows counted
after the header, JSON lines by line) and the key, before any image is judged.

Construction (§4.1), each stage its own job
-------------------------------------------
1. :func:`draw_concepts`: per item, one value per Table 8 slot, k of them perturbed
   (k ~ ``k_weights``): the more perturbed, the lower the alignment (Table 2's spread).
2. :func:`write_instructions`: the instruction judged, written from the ORIGINAL concepts,
   and the prompt rendered, written from the perturbed ones, by the offline template or a
   panel model (GPT-4o in the paper; judgebias.studies.frame.writer).
3. :func:`generate_images`: set A and set B images of each prompt (DALL-E 3 in the paper;
   judgebias.studies.frame.imagegen); the offline renderer also knows the true alignment
   and the object boxes.
4. :func:`attach_humans`: two simulated annotators (judgebias.studies.frame.annotators),
   or human scores imported by ``item_id`` from a file (the same columns as above:
   ``item_id`` with ``human_score`` or ``annotator_1`` and ``annotator_2``).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from judgebias.data.paths import input_files, resolve_inside
from judgebias.data.rows import csv_records, json_records, read_text, row_error
from judgebias.io.artifacts import write_bytes
from judgebias.io.filedigest import files_sha256, sha256_column
from judgebias.judging.answers import STATUS_OK
from judgebias.studies.frame.annotators import simulate_annotators
from judgebias.studies.frame.concepts import VOCABULARY, perturb, sample_concepts
from judgebias.studies.frame.recipes import DOMAINS
from judgebias.studies.frame.tables import ITEMS

if TYPE_CHECKING:
    from judgebias.models.context import RunContext

log = logging.getLogger(__name__)

# P(k perturbed concepts), k = 0..4 (the params default): with 4-5 slots per domain the
# true alignments spread over the whole range and average near Table 2's 2.57 of 5.
DEFAULT_K_WEIGHTS = (0.05, 0.15, 0.3, 0.3, 0.2)
STATUS_IMAGE_REFUSED = "image_refused"
_SYNTHETIC = "frame.dataset.synthetic"


def dataset_files(dataset: Mapping[str, Any]) -> list[str]:
    """Every file the items step reads for the ``frame.dataset`` block: an imported
    table and every file under its ``image_root`` (:func:`read_frame_table` resolves
    ``image`` and ``image_b`` there and reads the sizes of images with boxes; the judges
    and renders read them through the item table), or, for the constructed benchmark,
    the human-scores file where one is named (``synthetic.annotators.scores``); the
    constructed images are an earlier job's output.

    The `frame_items` rule declares them as inputs, so that a corrected score or a
    replaced image reruns the items job and everything after it: Snakemake stat()s them,
    and dvc.yaml lists the image folder as one dep (judgebias.workflow.dvc_export)."""
    if dataset["name"] == "table":
        table = dataset["table"]
        return input_files([table["path"]], [table["image_root"]])
    annotators = (dataset.get("synthetic") or {}).get("annotators") or {}
    return input_files([annotators.get("scores")])


# -- 1. concepts -------------------------------------------------------------------------------

def _counts(n_per_domain: Mapping[str, int] | int,
            domains: Sequence[str] | None) -> dict[str, int]:
    if isinstance(n_per_domain, Mapping):
        counts = {d: int(n) for d, n in n_per_domain.items()}
    else:
        counts = {d: int(n_per_domain) for d in (domains or DOMAINS)}
    unknown = [d for d in counts if d not in DOMAINS]
    if unknown:
        raise ValueError(f"{_SYNTHETIC}.domains: unknown domain(s) {unknown}; one of "
                         f"{', '.join(DOMAINS)}")
    if any(n < 0 for n in counts.values()):
        raise ValueError(f"{_SYNTHETIC}.n_per_domain: counts must be >= 0, got {counts}")
    return counts


def draw_concepts(n_per_domain: Mapping[str, int] | int,
                  k_weights: Sequence[float] = DEFAULT_K_WEIGHTS, *legacy: Any,
                  seed: int = 0, domains: Sequence[str] | None = None) -> pd.DataFrame:
    """Stage 1: per item its Table 8 concepts and the perturbed concepts its image is
    generated from, with k ~ `k_weights` (P(k), k = 0, 1, ...; capped at the domain's
    number of slots) perturbed (§4.1: the more, the lower the alignment).

    `n_per_domain` is a count per domain, or one count for every domain of `domains`
    (default: all five). Columns: item_id ("people-007"), domain, concepts,
    perturbed_concepts (JSON), n_perturbed. The older positional form
    ``draw_concepts(n, domains, k_weights, seed)`` is accepted too.
    """
    if k_weights and all(isinstance(d, str) for d in k_weights):  # the older form
        domains, k_weights = [str(d) for d in k_weights], legacy[0]
        legacy = legacy[1:]
    if legacy:
        seed = int(legacy[0])
    counts = _counts(n_per_domain, domains)
    weights = np.asarray(k_weights, dtype=float)
    if weights.ndim != 1 or not len(weights) or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError(f"{_SYNTHETIC}.k_weights: need non-negative weights with a positive "
                         f"sum, got {list(k_weights)}")
    weights = weights / weights.sum()
    rng = np.random.default_rng(seed)
    rows = []
    for domain, n in counts.items():
        for i in range(n):
            concepts = sample_concepts(domain, rng)
            k = min(int(rng.choice(len(weights), p=weights)), len(VOCABULARY[domain]))
            rows.append({"item_id": f"{domain}-{i:03d}", "domain": domain,
                         "concepts": json.dumps(concepts),
                         "perturbed_concepts": json.dumps(perturb(domain, concepts, k, rng)),
                         "n_perturbed": k})
    return pd.DataFrame(rows, columns=["item_id", "domain", "concepts", "perturbed_concepts",
                                       "n_perturbed"])


# -- 2. instructions ---------------------------------------------------------------------------

def write_instructions(run: RunContext, concepts_df: pd.DataFrame,
                       writer: str | None) -> pd.DataFrame:
    """Stage 2: ``instruction`` (written from the original concepts: what the image is
    judged against) and ``prompt`` (from the perturbed concepts: what is rendered), by the
    offline template (`writer` None) or the panel model `writer` as a journaled judge task
    (`run`: the journal and the panel, judgebias.models.context; unread without a writer).

    Every row is kept with a ``status``: an item whose writer answer failed, was not one
    line, or lost a concept value has a status other than "ok" and no text; it is left
    out of the images (and counted in a log line), never replaced by the template.
    """
    from judgebias.studies.frame.writer import write

    items = concepts_df.reset_index(drop=True).copy()
    instruction, status_i = write(run, writer, items["domain"], items["concepts"])
    prompt, status_p = write(run, writer, items["domain"], items["perturbed_concepts"])
    status = [a if a != STATUS_OK else b for a, b in zip(status_i, status_p, strict=True)]
    items["instruction"] = [t if s == STATUS_OK else None for t, s in zip(instruction, status,
                                                                          strict=True)]
    items["prompt"] = [t if s == STATUS_OK else None for t, s in zip(prompt, status,
                                                                     strict=True)]
    items["status"] = status
    dropped = items["status"] != STATUS_OK
    if dropped.any():
        log.warning("%d of %d items left out: the writer's answer was unusable %s",
                    int(dropped.sum()), len(items),
                    items.loc[dropped, "status"].value_counts().to_dict())
    log.info("%d instructions written by %s", int((~dropped).sum()),
             writer or "the offline template")
    return items


# -- 3. images ---------------------------------------------------------------------------------

def item_seeds(item_id: str, seed: int) -> tuple[int, int]:
    """The set A and set B generation seeds of an item (from its id and the study seed)."""
    digest = np.random.SeedSequence([seed, *item_id.encode("utf-8")]).generate_state(2)
    return int(digest[0]), int(digest[1])


def generate_images(prompts_df: pd.DataFrame, out_dir: str | Path,
                    backend_spec: Mapping[str, Any], seed: int) -> pd.DataFrame:
    """Stage 3: a set A and a set B image (another seed; Fig. 3) of each usable item's
    prompt, written atomically as ``out_dir/a/<item_id>.png`` and ``out_dir/b/...``; each
    item's two seeds come from its id and the study `seed` (item_seeds).

    `backend_spec` is an ``images`` params block (imagegen.backend): the offline renderer
    also yields ``alignment`` (true alignment of image A with the instruction) and
    ``boxes``; other backends leave both null and go through the never-pay-twice cache
    (``cache_dir``). Items whose status is not "ok" are skipped, and an image the backend
    refuses (imagegen.ImageRefused) leaves its item out; both are counted in a log line.
    """
    from judgebias.studies.frame.concepts import parse_instruction
    from judgebias.studies.frame.imagegen import (
        DEFAULT_CACHE_DIR,
        ImageRefused,
        OfflineRenderer,
        backend,
        cached_generate,
    )
    from judgebias.studies.frame.scene import alignment

    generator = backend(backend_spec)  # bad configuration fails here, before any call
    cache_dir = Path(backend_spec.get("cache_dir") or DEFAULT_CACHE_DIR)
    out_dir = Path(out_dir)
    status = prompts_df["status"] if "status" in prompts_df else pd.Series(
        STATUS_OK, index=prompts_df.index)
    usable = prompts_df[status == STATUS_OK]
    rows, refused = [], []
    for item in usable.to_dict("records"):
        paths, drawn, boxes = [], None, None
        try:
            for name, item_seed in zip(("a", "b"), item_seeds(item["item_id"], seed),
                                       strict=True):
                path = out_dir / name / f"{item['item_id']}.png"
                if isinstance(generator, OfflineRenderer):
                    scene = generator.scene(item["prompt"], item_seed)
                    if name == "a":
                        drawn, boxes = scene.drawn, [list(map(int, b)) for b in scene.boxes]
                    data = _png_bytes(scene.image)
                else:
                    data = cached_generate(generator, cache_dir, item["prompt"], item_seed)
                write_bytes(data, path)
                paths.append(str(path))
        except ImageRefused as exc:
            refused.append(item["item_id"])
            log.warning("%s: %s", item["item_id"], exc)
            continue
        wanted = parse_instruction(item["instruction"], item["domain"])
        rows.append({**item, "image": paths[0], "image_b": paths[1],
                     "alignment": alignment(wanted, drawn) if drawn else None,
                     "boxes": json.dumps(boxes) if boxes is not None else None,
                     "status": STATUS_OK})
    skipped = len(prompts_df) - len(usable)
    if skipped or refused:
        log.warning("%d items left out: %d without a usable instruction, %d refused by the "
                    "%s backend %s", skipped + len(refused), skipped, len(refused),
                    generator.name, refused[:5])
    log.info("%d items, 2 images each (%s)", len(rows), generator.name)
    columns = [*prompts_df.columns, *(c for c in ("image", "image_b", "alignment", "boxes",
                                                  "status") if c not in prompts_df.columns)]
    return pd.DataFrame(rows, columns=columns)


def _png_bytes(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


# -- 4. human scores ---------------------------------------------------------------------------

def attach_humans(generated: pd.DataFrame, *, sds: Sequence[float] = (0.6, 0.9),
                  bias: Sequence[float] = (0.0, 0.2), seed: int = 0,
                  scores: str | Path | None = None) -> pd.DataFrame:
    """Stage 4: the item table (:data:`ITEMS`) of a constructed benchmark with its human
    scores: two simulated annotators scoring each image's true alignment (offline renderer
    only), or, with `scores`, the scores of a file (CSV or JSON lines: ``item_id`` and
    ``human_score`` or ``annotator_1`` and ``annotator_2``) matched by ``item_id``."""
    items = generated.reset_index(drop=True).copy()
    for column in ITEMS.names:
        if column not in items:
            items[column] = None
    if scores is not None:
        imported = read_scores(scores, known=set(items["item_id"]))
        missing = [i for i in items["item_id"] if i not in imported]
        if missing:
            log.warning("%s: %d items have no human score %s", scores, len(missing),
                        missing[:5])
        triples = [imported.get(i, (None, None, None)) for i in items["item_id"]]
        items["annotator_1"], items["annotator_2"], items["human_score"] = (
            [t[j] for t in triples] for j in range(3))
        items["source"] = f"synthetic; human scores {Path(scores).name}"
    else:
        truth = pd.to_numeric(items["alignment"], errors="coerce")
        if truth.isna().any():
            raise ValueError(f"{_SYNTHETIC}.images: simulated annotators need the true "
                             "alignment, which only the offline renderer knows; score the "
                             "generated images by hand and import the scores")
        rng = np.random.default_rng([seed, 1])
        first, second = simulate_annotators(truth.to_numpy(), rng, sds=tuple(sds),
                                            bias=tuple(bias))
        items["annotator_1"], items["annotator_2"] = first, second
        items["human_score"] = (first + second) / 2
        items["source"] = "synthetic"
    return _typed(items)


def _typed(items: pd.DataFrame) -> pd.DataFrame:
    """The item table in :data:`ITEMS`' columns and types, with the sha256 of each image
    file (constructed and imported alike: a replaced image must change the table, or
    `dvc repro` would keep the judges' scores of the old one)."""
    items = items.assign(**{sha256_column(c): files_sha256(items[c])
                            for c in ("image", "image_b")})[ITEMS.names].copy()
    items["n_perturbed"] = pd.array(
        [None if v is None or pd.isna(v) else int(v) for v in items["n_perturbed"]],
        dtype="Int64")
    for column in ("human_score", "annotator_1", "annotator_2", "alignment"):
        items[column] = pd.to_numeric(items[column], errors="coerce").astype(float)
    return items


def read_scores(path: str | Path, known: set[str] | None = None
                ) -> dict[str, tuple[float | None, float | None, float]]:
    """Human scores by item_id from a CSV or JSON-lines file: (annotator_1, annotator_2,
    human_score); errors name the file, row and key (an item_id not in `known`, if
    given, too)."""
    out: dict[str, tuple[float | None, float | None, float]] = {}
    for line, row in _records(path):
        item_id = _text(row, "item_id")
        if item_id is None:
            raise row_error(path, line, "item_id", "missing")
        if known is not None and item_id not in known:
            raise row_error(path, line, "item_id", f"{item_id!r} is not in the benchmark")
        if item_id in out:
            raise row_error(path, line, "item_id", f"{item_id!r} appears twice")
        first, second, human = _human(row, str(path), line)
        if human is None:
            raise row_error(path, line, "human_score", "missing (give human_score or "
                             "annotator_1 and annotator_2)")
        out[item_id] = (first, second, human)
    return out


# -- the importer ------------------------------------------------------------------------------

_DIGESTS = frozenset(sha256_column(c) for c in ("image", "image_b"))  # computed, not read
_KNOWN = frozenset(ITEMS.names) - _DIGESTS | {"status"}


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and np.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _text(row: Mapping[str, Any], key: str) -> str | None:
    value = row.get(key)
    if _missing(value):
        return None
    return str(value).strip()


def _records(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(row number, record) of a CSV, JSON-lines or JSON-array file."""
    source = Path(path)
    if not source.is_file():
        raise FileNotFoundError(2, "No such file", str(source))
    suffix = source.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return csv_records(source, sep="\t" if suffix == ".tsv" else ",")
    if suffix not in (".jsonl", ".ndjson", ".json"):
        raise ValueError(f"{path}: a FRAME table is .csv, .tsv, .jsonl or .json")
    return json_records(path, read_text(source), array=suffix == ".json")


def _json(value: Any, path: str, line: int, key: str) -> Any:
    """A JSON column's value (None if missing); text is parsed, lists/objects kept."""
    if _missing(value):
        return None
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise row_error(path, line, key, f"not JSON ({exc.msg})") from exc
    return value


def _number(row: Mapping[str, Any], key: str, path: str, line: int) -> float | None:
    value: Any = row.get(key)
    if _missing(value):
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise row_error(path, line, key, f"{value!r} is not a number") from exc
    if np.isnan(number):
        raise row_error(path, line, key, "is not a number")
    return number


def _score(row: Mapping[str, Any], key: str, path: str, line: int) -> float | None:
    score = _number(row, key, path, line)
    if score is not None and not 1 <= score <= 5:
        raise row_error(path, line, key, f"{score} is outside 1-5")
    return score


def _human(row: Mapping[str, Any], path: str, line: int
           ) -> tuple[float | None, float | None, float | None]:
    first, second = (_score(row, k, path, line) for k in ("annotator_1", "annotator_2"))
    human = _score(row, "human_score", path, line)
    if human is None and (first is None) != (second is None):
        key = "annotator_2" if second is None else "annotator_1"
        raise row_error(path, line, key, "missing (two annotators, or a human_score)")
    if human is None and first is not None and second is not None:
        human = (first + second) / 2
    return first, second, human


def _concepts(row: Mapping[str, Any], key: str, domain: str, path: str, line: int
              ) -> dict[str, str] | None:
    concepts = _json(row.get(key), path, line, key)
    if concepts is None:
        return None
    if not isinstance(concepts, dict) or not all(
            isinstance(v, str) for v in concepts.values()):
        raise row_error(path, line, key, "must be a JSON object slot -> text value")
    unknown = sorted(set(concepts) - set(VOCABULARY[domain]))
    if unknown:
        raise row_error(path, line, key, f"{unknown} are not {domain} slots "
                         f"({', '.join(VOCABULARY[domain])})")
    return concepts


def _image_size(path: Path) -> tuple[int, int] | None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            return image.size
    except (UnidentifiedImageError, OSError):
        return None  # judged later; the importer does not decode images


def _boxes(row: Mapping[str, Any], image: Path, path: str, line: int
           ) -> list[list[int]] | None:
    boxes = _json(row.get("boxes"), path, line, "boxes")
    if boxes is None:
        return None
    shape = "must be a list of [x0, y0, x1, y1]"
    if not isinstance(boxes, list) or not all(
            isinstance(b, list) and len(b) == 4
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in b)
            for b in boxes):
        raise row_error(path, line, "boxes", shape)
    size = _image_size(image) if boxes else None
    for number, (x0, y0, x1, y1) in enumerate(boxes, start=1):
        if not (0 <= x0 < x1 and 0 <= y0 < y1):
            raise row_error(path, line, "boxes", f"box {number} {[x0, y0, x1, y1]}: "
                             "need 0 <= x0 < x1 and 0 <= y0 < y1")
        if size is not None and (x1 > size[0] or y1 > size[1]):
            raise row_error(path, line, "boxes", f"box {number} {[x0, y0, x1, y1]} lies "
                             f"outside the {size[0]}x{size[1]} image")
    return [[round(v) for v in b] for b in boxes]


def _required(row: Mapping[str, Any], key: str, path: str, line: int) -> str:
    text = _text(row, key)
    if text is None:
        raise row_error(path, line, key, "missing")
    return text


def _image(row: Mapping[str, Any], key: str, image_root: str, path: str, line: int
           ) -> Path | None:
    name = _text(row, key)
    if name is None:
        return None
    image = resolve_inside(image_root, name, what=f"{path}: row {line}: {key}")
    if not image.is_file():
        raise row_error(path, line, key, f"file {image} does not exist")
    return image


def read_frame_table(path: str | Path, image_root: str | Path) -> pd.DataFrame:
    """Import a FRAME-format table (module docstring) as the item table (:data:`ITEMS`)."""
    path, image_root = str(path), str(image_root)
    records = _records(path)
    if not records:
        raise ValueError(f"{path}: the FRAME table has no rows")
    ignored = sorted({k for _, r in records for k in r} - _KNOWN)
    if ignored:
        log.warning("%s: columns %s are not FRAME columns and are ignored", path, ignored)
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for line, row in records:
        item_id = _required(row, "item_id", path, line)
        domain = _required(row, "domain", path, line)
        for key in ("instruction", "image"):
            _required(row, key, path, line)
        if item_id in seen:
            raise row_error(path, line, "item_id", f"{item_id!r} is also row {seen[item_id]}")
        seen[item_id] = line
        if domain not in DOMAINS:
            raise row_error(path, line, "domain", f"{domain!r} is not one of "
                             f"{', '.join(DOMAINS)}")
        image = _image(row, "image", image_root, path, line)
        assert image is not None  # required above
        image_b = _image(row, "image_b", image_root, path, line)
        concepts = _concepts(row, "concepts", domain, path, line)
        perturbed = _concepts(row, "perturbed_concepts", domain, path, line)
        boxes = _boxes(row, image, path, line)
        first, second, human = _human(row, path, line)
        n_perturbed = _number(row, "n_perturbed", path, line)
        if n_perturbed is not None and (n_perturbed < 0 or not n_perturbed.is_integer()):
            raise row_error(path, line, "n_perturbed", f"{n_perturbed} is not a count")
        truth = _number(row, "alignment", path, line)
        if truth is not None and not 0 <= truth <= 1:
            raise row_error(path, line, "alignment", f"{truth} is outside [0, 1]")
        rows.append({"item_id": item_id, "domain": domain,
                     "instruction": _text(row, "instruction"),
                     "concepts": json.dumps(concepts or {}),
                     "perturbed_concepts": json.dumps(perturbed) if perturbed else None,
                     "prompt": _text(row, "prompt"), "n_perturbed": n_perturbed,
                     "image": str(image), "image_b": str(image_b) if image_b else None,
                     "human_score": human, "annotator_1": first, "annotator_2": second,
                     "alignment": truth,
                     "boxes": json.dumps(boxes) if boxes is not None else None,
                     "source": _text(row, "source") or Path(path).name})
    _check_domain_sizes(rows, seen, path)
    if not any(r["image_b"] for r in rows):
        log.warning("%s: no row has image_b, so Fig. 3's pairwise comparison (set A vs "
                    "set B) has nothing to compare", path)
    return _typed(pd.DataFrame(rows, columns=ITEMS.names))


def _check_domain_sizes(rows: list[dict[str, Any]], lines: Mapping[str, int], path: str
                        ) -> None:
    """Every domain needs two items (the synthetic benchmark's minimum too): Table 3's
    cross-fitted effects choose a setting on one half of a domain's items and score it on
    the other, so a lone item's cells would be paid for and come out empty."""
    items: dict[str, list[str]] = {}
    for row in rows:
        items.setdefault(row["domain"], []).append(row["item_id"])
    for domain, ids in items.items():
        if len(ids) < 2:
            raise row_error(path, lines[ids[0]], "domain", f"{domain!r} has only this "
                             "item; a domain needs at least 2 (cross-fitting chooses on "
                             "one half of its items and scores on the other)")
