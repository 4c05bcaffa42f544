"""Importers of BIRCH's real pairwise VQA benchmarks into the pair table (tables.PAIRS).

Seed 003 Appendix B evaluates the judges on VL-RewardBench and on MLLM-as-a-Judge's pair
comparisons; the spec (birch.md, "VL-RewardBench labels") fixes how their labels are read:

* VL-RewardBench's ``human_ranking`` holds RANKS, 0 = preferred: the benchmark's own
  evaluation code treats the answer ranked 1 as the rejected one. Equal ranks are a tie.
* 1,245 of its 1,250 rows show the preferred answer first, so a judge that always says
  "first" would look accurate. The importers therefore randomise the order shown, per row,
  with a draw seeded by (study seed, pair id): the draw of a row does not change when other
  rows are added or removed. ``file_order`` records it ("ab": the file's order kept, "ba":
  swapped) and ``preference`` is given in the order shown.
* The four items the paper prints as human labelling errors (RLAIF-V-40322,
  wildvision-battle-2852, RLAIF-V-2190, RLHF-V-3339) all have ranks [0, 1]: the file's
  first answer is preferred; the paper read the ranks the wrong way round. No label is
  "corrected" by default; :func:`apply_overrides` applies an override file only when the
  caller passes one.

Every malformed row is an error naming the file, the row (1-based: JSON lines counted by
line, a JSON array by element) and the key, before anything is judged;
:func:`check_images` lists the pairs whose image file is missing, so that a run stops
before any paid call. Each pair's ``image_sha256`` records the bytes of its image (the
file is read, not decoded): DVC reruns what follows the data stage only when the table's
content changes, and a replaced image must rerun the judges.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
import yaml

from judgebias.data.paths import resolve_inside
from judgebias.data.rows import csv_records, json_records, read_text, row_error
from judgebias.io.filedigest import files_sha256
from judgebias.studies.birch.tables import PAIRS, PREFERENCES

log = logging.getLogger(__name__)

VL_REWARDBENCH = "vl_rewardbench"
MLLM_JUDGE = "mllm_judge"
_PLANTED = ("correct_a", "correct_b", "details_a", "details_b", "padding_a", "padding_b",
            "scene")
_FLIP = {"A": "B", "B": "A", "tie": "tie"}
_MLLM_LABELS = {"A": "A", "B": "B", "C": "tie"}


# -- shared helpers ------------------------------------------------------------------------------

def _records(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(row number, record) of a JSON-lines file or of a file holding one JSON array."""
    source = Path(path)
    if not source.is_file():
        raise FileNotFoundError(2, "No such file", str(source))
    records = json_records(path, read_text(source), array=True)
    if not records:
        raise ValueError(f"{path}: no rows")
    return records


def _get(row: Mapping[str, Any], key: str, path: str, line: int) -> Any:
    if key not in row or row[key] is None:
        raise row_error(path, line, key, "missing")
    return row[key]


def _string(row: Mapping[str, Any], key: str, path: str, line: int,
            empty: bool = False) -> str:
    value = _get(row, key, path, line)
    if not isinstance(value, str):
        raise row_error(path, line, key, f"must be text, got {type(value).__name__}")
    if not empty and not value.strip():
        raise row_error(path, line, key, "is empty")
    return value


def _identifier(row: Mapping[str, Any], key: str, path: str, line: int) -> str:
    """An id given as text or as an integer (MLLM-as-a-Judge numbers its rows)."""
    value = _get(row, key, path, line)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise row_error(path, line, key, f"must be text or an integer, got {value!r}")
    text = str(value).strip()
    if not text:
        raise row_error(path, line, key, "is empty")
    return text


def _image_path(row: Mapping[str, Any], images_root: str, path: str, line: int
                ) -> tuple[str, str]:
    """The row's ``image_path`` as given, and the file it names inside `images_root`: an
    absolute path or a ``..`` that climbs out of the folder is an error (data.paths)."""
    image = _string(row, "image_path", path, line)
    where = f"{path}: row {line}: image_path"
    return image, str(resolve_inside(images_root, image, what=where))


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed: must be a non-negative integer, got {seed!r}")
    return int(seed)


def _swapped(seed: int, pair_id: str) -> bool:
    """Whether the pair's answers are shown swapped: a draw seeded by (seed, pair id), so
    the draw of one pair does not depend on which other pairs the file holds."""
    ss = np.random.SeedSequence([seed, *pair_id.encode("utf-8")])
    return bool(np.random.default_rng(ss).integers(2))


def _pair_row(*, pair_id: str, source: str, domain: str, query: str, image: str,
              answers: tuple[str, str], models: tuple[str | None, str | None],
              preference: str, swap: bool) -> dict[str, Any]:
    """One PAIRS row from the file's order (`answers`, `models`, `preference`: "A" = the
    file's first answer), shown swapped if `swap`."""
    if swap:
        answers, models, preference = answers[::-1], models[::-1], _FLIP[preference]
    return {"pair_id": pair_id, "source": source, "domain": domain, "query": query,
            "image": image, "answer_a": answers[0], "answer_b": answers[1],
            "preference": preference, "file_order": "ba" if swap else "ab",
            "overridden": False, "model_a": models[0], "model_b": models[1],
            **dict.fromkeys(_PLANTED)}


def _typed(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The pair table of `rows`, with the sha256 of each image file that exists (a
    missing one is left None for :func:`check_images` to name)."""
    pairs = pd.DataFrame(rows, columns=PAIRS.names)
    pairs["image_sha256"] = files_sha256(
        image if Path(image).is_file() else None for image in pairs["image"])
    pairs["overridden"] = pairs["overridden"].astype(bool)
    for column in ("correct_a", "correct_b"):
        pairs[column] = pd.array(pairs[column], dtype="boolean")
    for column in ("details_a", "details_b", "padding_a", "padding_b"):
        pairs[column] = pd.array(pairs[column], dtype="Int64")
    return pairs


# -- VL-RewardBench ------------------------------------------------------------------------------

def _vl_domain(image: str, path: str, line: int) -> str:
    parts = PurePosixPath(image.replace("\\", "/")).parts
    if parts and parts[0] == "images":
        parts = parts[1:]
    if len(parts) < 2:
        raise row_error(path, line, "image_path", f"{image!r} has no folder under "
                         "images/ to name the domain")
    return parts[0]


def _vl_ranking(row: Mapping[str, Any], path: str, line: int) -> str:
    ranks = _get(row, "human_ranking", path, line)
    if (not isinstance(ranks, list) or len(ranks) != 2
            or any(isinstance(r, bool) or not isinstance(r, int) or r not in (0, 1)
                   for r in ranks)):
        raise row_error(path, line, "human_ranking", f"must be two ranks in {{0, 1}} "
                         f"(0 = preferred), got {ranks!r}")
    if ranks[0] == ranks[1]:
        return "tie"
    return "A" if ranks[0] == 0 else "B"


def _pair_of(row: Mapping[str, Any], key: str, path: str, line: int,
             nullable: bool = False) -> tuple[Any, Any]:
    value = _get(row, key, path, line)
    allowed = (str, type(None)) if nullable else (str,)
    if (not isinstance(value, list) or len(value) != 2
            or not all(isinstance(v, allowed) for v in value)):
        raise row_error(path, line, key, f"must be a list of two strings, got "
                         f"{_short(value)}")
    return value[0], value[1]


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}..."


def read_vl_rewardbench(path: str | Path, images_root: str, seed: int) -> pd.DataFrame:
    """Import VL-RewardBench (one JSON object per line) as the pair table.

    Parameters
    ----------
    path
        The benchmark file (``data/data.jsonl`` of vl-rewardbench/VL_RewardBench): rows
        ``{id, image_path, query, response: [two answers], human_ranking: [r0, r1],
        models: [m0, m1], query_source (absent in some rows), meta,
        human_error_analysis}``.
    images_root
        The folder holding the benchmark's ``images/`` folder: a pair's ``image`` is
        ``image_path`` inside it (an absolute ``image_path``, or one whose ``..`` climbs
        out of it, is an error). Images are hashed, not decoded; a missing one is
        left for :func:`check_images` to name.
    seed
        The order seed (a non-negative integer): each pair's answers are shown swapped
        or not by a draw seeded by (seed, pair id).

    Returns
    -------
    pandas.DataFrame
        The pair table (tables.PAIRS), one row per benchmark row, in the file's order:
        ``source`` "vl_rewardbench"; ``domain`` the folder of ``image_path`` under
        ``images/`` (e.g. "images/vlfeedback/x.jpg" -> "vlfeedback"; ``query_source`` is
        not used because 318 rows lack it); ``preference`` read from the ranks (0 =
        preferred, the benchmark's own convention; equal ranks -> "tie") and given in the
        order shown; ``file_order`` "ab" (kept) or "ba" (swapped); ``model_a`` and
        ``model_b`` from ``models`` in the order shown; ``overridden`` False; the planted
        columns null.

    Raises
    ------
    ValueError
        ``"{path}: row {line}: {key}: {message}"`` for a row that is not JSON, lacks a
        key, whose ``response`` or ``models`` is not a list of two strings, whose
        ``human_ranking`` is not two integers in {0, 1}, or whose ``image_path`` names no
        folder under ``images/`` or leaves `images_root`; and for a repeated row.

    Notes
    -----
    An ``id`` normally is the pair id. The released file repeats 18 ids (mathverse and
    MMMU-Pro questions), each time with a different pair of answers: those are distinct
    pairs, and each gets ``"{id}#{k}"`` (k = 1, 2, ... in the file's order) as its pair id.
    A row repeating another's id, answers and ranks is an error.
    """
    path, seed = str(path), _check_seed(seed)
    parsed = []
    for line, row in _records(path):
        item_id = _string(row, "id", path, line)
        image, image_file = _image_path(row, images_root, path, line)
        query = _string(row, "query", path, line, empty=True)
        answers = _pair_of(row, "response", path, line)
        preference = _vl_ranking(row, path, line)
        models = _pair_of(row, "models", path, line, nullable=True)
        domain = _vl_domain(image, path, line)
        parsed.append((line, item_id, image_file, query, answers, preference, models, domain))

    counts = Counter(p[1] for p in parsed)
    seen: dict[str, list[tuple[int, tuple[str, str], str]]] = {}
    rows = []
    for line, item_id, image, query, answers, preference, models, domain in parsed:
        earlier = seen.setdefault(item_id, [])
        for other, other_answers, other_preference in earlier:
            if other_answers == answers and other_preference == preference:
                raise row_error(path, line, "id", f"{item_id!r} repeats row {other} "
                                 "(the same answers and ranks)")
        earlier.append((line, answers, preference))
        pair_id = f"{item_id}#{len(earlier)}" if counts[item_id] > 1 else item_id
        rows.append(_pair_row(pair_id=pair_id, source=VL_REWARDBENCH, domain=domain,
                              query=query, image=image, answers=answers, models=models,
                              preference=preference, swap=_swapped(seed, pair_id)))
    repeated = sorted(i for i, n in counts.items() if n > 1)
    if repeated:
        log.info("%s: %d ids name more than one pair (pair ids '<id>#<k>'): %s", path,
                 len(repeated), repeated[:5])
    pairs = _typed(rows)
    log.info("%s: %d pairs, %d shown swapped (seed %d)", path, len(pairs),
             int((pairs["file_order"] == "ba").sum()), seed)
    return pairs


# -- MLLM-as-a-Judge -----------------------------------------------------------------------------

def _mllm_label(row: Mapping[str, Any], path: str, line: int) -> str:
    labels = {}
    for key in ("human_answer", "human"):
        value = row.get(key)
        if value is None:
            continue
        label = value.strip().upper() if isinstance(value, str) else None
        if label not in _MLLM_LABELS:
            raise row_error(path, line, key, f"{value!r} is not one of A, B, C")
        labels[key] = _MLLM_LABELS[label]
    if not labels:
        raise row_error(path, line, "human_answer", "missing (the human label is "
                         "'human_answer' or 'human': A, B or C)")
    if len(set(labels.values())) > 1:
        raise row_error(path, line, "human", f"{row['human']!r} disagrees with "
                         f"human_answer {row['human_answer']!r}")
    return next(iter(labels.values()))


def _mllm_answer(row: Mapping[str, Any], key: str, path: str, line: int
                 ) -> tuple[str, str | None]:
    value = _get(row, key, path, line)
    if not isinstance(value, dict):
        raise row_error(path, line, key, "must be an object {name, answer}")
    answer, name = value.get("answer"), value.get("name")
    if not isinstance(answer, str):
        raise row_error(path, line, f"{key}.answer", "missing" if answer is None else
                         f"must be text, got {type(answer).__name__}")
    if name is not None and not isinstance(name, str):
        raise row_error(path, line, f"{key}.name", f"must be text, got {name!r}")
    return answer, name


def read_mllm_judge(path: str | Path, images_root: str, seed: int | None) -> pd.DataFrame:
    """Import an MLLM-as-a-Judge pair-comparison file as the pair table.

    Parameters
    ----------
    path
        JSON lines, or one JSON array, of rows ``{id, pair_id, image_path,
        original_dataset, instruction, answer1: {name, answer}, answer2: {name, answer}}``
        with the human label, A, B or C (C: a tie), under ``human_answer`` (the lite
        file) or ``human`` (the full file). Both keys may be present if they agree.
    images_root
        The folder ``image_path`` is relative to: ``image`` is ``image_path`` inside it
        (an absolute ``image_path``, or one whose ``..`` climbs out of it, is an error).
    seed
        None keeps the file's order (every ``file_order`` "ab"); an integer shows each
        pair's answers swapped or not by a draw seeded by (seed, pair id).

    Returns
    -------
    pandas.DataFrame
        The pair table (tables.PAIRS) in the file's order: ``pair_id``
        ``"{id}:{pair_id}"`` (or ``str(id)`` for a row without ``pair_id``), ``source``
        "mllm_judge", ``domain`` the row's ``original_dataset``, ``query`` its
        ``instruction``, ``model_a``/``model_b`` the answers' ``name`` in the order shown,
        ``preference`` in the order shown, ``overridden`` False, the planted columns null.

    Raises
    ------
    ValueError
        ``"{path}: row {line}: {key}: {message}"`` for a malformed row, a missing or
        unknown label, ``human`` and ``human_answer`` disagreeing, or a repeated pair id.
    """
    path = str(path)
    seed = None if seed is None else _check_seed(seed)
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for line, row in _records(path):
        item_id = _identifier(row, "id", path, line)
        has_pair_id = row.get("pair_id") is not None
        pair_id = (f"{item_id}:{_identifier(row, 'pair_id', path, line)}"
                   if has_pair_id else item_id)
        if pair_id in seen:
            raise row_error(path, line, "pair_id" if has_pair_id else "id",
                             f"pair {pair_id!r} is also row {seen[pair_id]}")
        seen[pair_id] = line
        _, image = _image_path(row, images_root, path, line)
        domain = _string(row, "original_dataset", path, line)
        query = _string(row, "instruction", path, line, empty=True)
        first, first_name = _mllm_answer(row, "answer1", path, line)
        second, second_name = _mllm_answer(row, "answer2", path, line)
        preference = _mllm_label(row, path, line)
        rows.append(_pair_row(pair_id=pair_id, source=MLLM_JUDGE, domain=domain,
                              query=query, image=image,
                              answers=(first, second), models=(first_name, second_name),
                              preference=preference,
                              swap=seed is not None and _swapped(seed, pair_id)))
    pairs = _typed(rows)
    log.info("%s: %d pairs, %d shown swapped (seed %s)", path, len(pairs),
             int((pairs["file_order"] == "ba").sum()), seed)
    return pairs


# -- label overrides -----------------------------------------------------------------------------

def _override_entries(path: str) -> list[tuple[str, str, str]]:
    """(where, pair_id, label) of an override file; `where` names the entry in errors."""
    source = Path(path)
    if not source.is_file():
        raise FileNotFoundError(2, "No such file", str(source))
    suffix = source.suffix.lower()
    if suffix == ".csv":
        records = _csv_columns(path, ("pair_id", "preference"), "an override CSV")
        return [(f"row {line}: pair_id {r['pair_id'].strip()!r}", r["pair_id"].strip(),
                 r["preference"].strip()) for line, r in records]
    if suffix not in (".yaml", ".yml"):
        raise ValueError(f"{path}: an override file is .yaml/.yml (pair_id: A|B|tie) or "
                         ".csv (columns pair_id, preference)")
    mapping = _yaml_text_mapping(path)
    if mapping is None or mapping == "":
        return []
    if not isinstance(mapping, dict) or not all(isinstance(v, str)
                                                for v in mapping.values()):
        raise ValueError(f"{path}: an override YAML file is a mapping pair_id: A|B|tie")
    return [(f"pair_id {str(k).strip()!r}", str(k).strip(), v.strip())
            for k, v in mapping.items()]


def _csv_columns(path: str, columns: tuple[str, ...], what: str
                 ) -> list[tuple[int, dict[str, str]]]:
    """(row, record) of a CSV file that must have `columns` (rows counted from 1)."""
    records = csv_records(path)
    header = records[0][1] if records else {}
    missing = [c for c in columns if c not in header]
    if records and missing:
        raise ValueError(f"{path}: {what} needs the columns {', '.join(columns)}; "
                         f"missing {missing}")
    return records


def _yaml_text_mapping(path: str) -> Any:
    """A YAML file with every scalar kept as text (BaseLoader: "12:3" would otherwise load
    as a number); a syntax error names the file and its line."""
    try:
        return yaml.load(read_text(path), Loader=yaml.BaseLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ValueError(f"{path}: {where}not valid YAML ({problem})") from exc


def read_reference_labels(path: str | Path) -> pd.Series:
    """Human informativeness labels for the Table 7 analogue (``birch.reference_labels``):
    YAML ``pair_id: A|B``, or CSV/TSV with the columns ``pair_id`` and ``label``, labels in
    the order shown. Read by `validate` (before any call) and by the analysis.

    Raises ValueError naming the file and the entry (CSV rows counted from 1 after the
    header) for a syntax error, a missing column, a label other than A or B, or a pair
    id given twice.
    """
    path = str(path)
    if not Path(path).is_file():
        raise FileNotFoundError(2, "No such file", path)
    if path.endswith((".csv", ".tsv")):
        records = csv_records(path, sep="\t" if path.endswith(".tsv") else ",")
        if records and not {"pair_id", "label"} <= set(records[0][1]):
            raise ValueError(f"{path}: needs the columns pair_id and label")
        entries = [(f"row {line}", r["pair_id"].strip(), r["label"].strip())
                   for line, r in records]
    else:
        mapping = _yaml_text_mapping(path)
        if mapping in (None, ""):
            mapping = {}
        if not isinstance(mapping, dict):
            raise ValueError(f"{path}: reference labels in YAML are a mapping pair_id: A|B")
        entries = [(f"pair_id {k!r}", str(k).strip(), v.strip() if isinstance(v, str)
                    else v) for k, v in mapping.items()]
    labels: dict[str, str] = {}
    for where, pair_id, label in entries:
        if label not in ("A", "B"):
            raise ValueError(f"{path}: {where}: label {label!r} is not A or B")
        if pair_id in labels:
            raise ValueError(f"{path}: {where}: pair_id {pair_id!r} is given twice")
        labels[pair_id] = label
    return pd.Series(labels, dtype=object)


def apply_overrides(pairs: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """Set human preferences from a label-override file (off by default).

    The four items the paper prints as human labelling errors are NOT corrected by
    default: their ranks say the file's first answer is preferred, and the paper read the
    ranks the wrong way round (module docstring). A project that wants any label changed
    writes an override file and configures its path; only then is this called.

    Parameters
    ----------
    pairs
        A pair table (tables.PAIRS).
    path
        YAML mapping ``pair_id: A | B | tie``, or CSV with the columns ``pair_id`` and
        ``preference``. A label is given in the benchmark file's ORIGINAL order ("A" =
        the file's first answer) and is mapped through ``file_order`` to the order shown.

    Returns
    -------
    pandas.DataFrame
        A copy of `pairs` with those preferences set; ``overridden`` is True on the rows
        whose preference changed.

    Raises
    ------
    ValueError
        Naming the file and the pair id, for a pair id not in `pairs`, one given twice,
        or a label other than A, B, tie.
    """
    path = str(path)
    out = pairs.copy()
    index = {p: i for i, p in zip(out.index, out["pair_id"], strict=True)}
    seen: set[str] = set()
    changed = []
    for where, pair_id, label in _override_entries(path):
        if not pair_id:
            raise ValueError(f"{path}: {where}: empty pair_id")
        if pair_id not in index:
            raise ValueError(f"{path}: {where}: not in the pair table")
        if pair_id in seen:
            raise ValueError(f"{path}: {where}: given twice")
        seen.add(pair_id)
        if label not in PREFERENCES:
            raise ValueError(f"{path}: {where}: label {label!r} is not one of "
                             f"{', '.join(PREFERENCES)}")
        i = index[pair_id]
        shown = _FLIP[label] if out.at[i, "file_order"] == "ba" else label
        if shown != out.at[i, "preference"]:
            out.at[i, "preference"] = shown
            out.at[i, "overridden"] = True
            changed.append(pair_id)
    log.warning("%s: %d human preferences overridden %s", path, len(changed), changed[:5])
    return out


# -- images --------------------------------------------------------------------------------------

def check_images(pairs: pd.DataFrame, where: str) -> list[str]:
    """Error lines for the pairs whose image file does not exist (empty if none).

    Parameters
    ----------
    pairs
        A pair table (tables.PAIRS).
    where
        What the lines name as the place (e.g. the configured benchmark file).

    Returns
    -------
    list of str
        One line for each of the first five pairs with a missing image, then a count
        line; the caller stops before any model call if the list is not empty.
    """
    exists: dict[str, bool] = {}
    missing = []
    for pair_id, image in zip(pairs["pair_id"], pairs["image"], strict=True):
        if image not in exists:
            exists[image] = Path(image).is_file()
        if not exists[image]:
            missing.append((pair_id, image))
    if not missing:
        return []
    lines = [f"{where}: pair {p}: image {i} does not exist" for p, i in missing[:5]]
    more = f" ({len(missing) - 5} more not named)" if len(missing) > 5 else ""
    lines.append(f"{where}: {len(missing)} of {len(pairs)} pairs have no image file{more}")
    return lines
