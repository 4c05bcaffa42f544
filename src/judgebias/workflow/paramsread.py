"""Which params keys a step reads, to check them against the keys its rule declares.

"Edit a parameter and only what depends on it is recomputed" (docs/design.md) holds only
if every step reads nothing but the params keys its rule declares under ``params:
dvc_params=``: those keys' values are Snakemake's rerun trigger and DVC's params stamp, so
a key a step reads undeclared can change its answer and neither front door reruns it.
This module closes that loop:

* :class:`RecordingParams` is the params mapping a step receives when recording is on
  (``$JUDGEBIAS_RECORD_PARAMS``, read by judgebias.workflow.step_dispatch): read-only, and it notes
  the dotted path of what the step reads;
* :func:`recording_views` makes a study's typed views (``PhilautiaParams.from_params``)
  built from it record by field: using a field of the view reads the keys the field was
  computed from, not everything the view's constructor looked at;
* judgebias.workflow.paramscheck matches each job's record with the keys its rule
  declares in the Snakemake DAG and names every read no declared key covers.

What counts as a read (:class:`Reads`), and why:

* ``value`` PATH: a value the step used. Looking up a leaf (``block["seed"]``,
  ``block.get("seed")``, a list) reads it; looking up a block returns a recording view of
  the block and reads nothing yet, so ``params["panel"]["m"]["sampling"]["seed"]`` reads
  ``panel.m.sampling.seed`` only. A block used whole reads the whole block: compared
  (``==``), copied (``copy.deepcopy``, pickling), printed.
* ``keys`` PATH: the set of keys of a block: iterating it, ``len``, ``keys()``. Listing
  the panel's models is a read of which models there are, not of every model's settings;
  ``items()`` and ``values()`` read the key set and then each value (a block value again
  as a recording view, so only what is used of it is read). ``dict(block)`` and
  ``{**block}`` therefore read the key set and each leaf at the top of the block.
* ``present`` PATH: ``key in block`` for a key the block holds. A step that tests for an
  optional key behaves differently when it is there, so its rule must declare something
  at, within or above it (philautia's ``also_in``, declared where params.yaml states it):
  the key's going away then changes the declaration too.
* ``empty`` PATH: the truth of a block: whether it is empty. Covered as ``present`` is,
  or by the step's looking inside the block: then the truth was a guard
  (``block.get("by_judge") or {}``), and what it read inside is judged on its own.
* ``absent`` PATH: a key looked up and not there (``block.get("also_in")`` without it),
  and the truth of an empty block. Noted, not checked: a key absent from this params file
  has no value to declare, and the rules declare an optional key where params.yaml
  states it (judgebias.config.answer_keys, philautia's ``FAMILY_KEYS``), so whether a
  rule would declare it once present is a question for a params file that has it (run the
  check on that one).

Typed views. A study's steps mostly receive its typed view, the declaration of its params
block (judgebias.paramsblock): a field that is a key of the block is named after the key,
so using it reads exactly that key (``view.downsampling.seed`` reads
``birch.downsampling.seed``; an entry of a mapping field, its own key; a key left out,
its absence), and the view is built from the block's data without reading anything
(``block_values``). The view's ``derived()`` fields (the judges resolved from the panel,
the families per model, the top-level seed) and the other views (PanelModel, which the
judging core resolves: a sim judge's world asks of a model it prefers only whether it is
simulated) are computed in ``from_params`` from the whole params, eagerly; recording
those reads as the step's would report every step that uses one field. So each read made
while ``from_params`` runs is credited to the field its value flows into
(:class:`_ViewBuild`): the running instruction of ``from_params``'s frame (its source
position, Python's ``co_positions``) lies inside one keyword argument of the constructor
call it returns (``judges=tuple(study_models(params, ...))``; nested constructors give
nested fields, and so does a helper whose call is a field's whole value and which returns
a constructor call itself), or inside an assignment to a local name (``models = ...``),
whose reads every field naming that local inherits. The step's view is the same
dataclass, of a subclass that reads a field's keys when the step uses the field. This
holds for the view a step is handed, for one it builds itself from the params mapping
and for the panel models: :func:`recording_views` covers the view classes
judgebias.workflow.step_dispatch names to it. A read outside any field or assignment (an
``if`` in ``from_params``) is credited to the step at once, and a field built in a
helper's own locals is credited whole: wider than the step's use, never narrower. Two
splits are by name. A nested view built by ``**`` (``Part(**{key: block[key] for key in
...})``) credits a read whose last key names one of its fields to that field, any other
to all of them. A field holding a dict built in ``from_params`` (philautia's families per
model) reads, for one entry, the reads naming that entry's key in their path and those
naming none of its keys (a key set holding the entry's key read as whether it holds it).
That is what ``**{key: block[key]}`` and ``{name: f(block[name]) for name in block}``
read; a value computed from a key named after another field or entry would go unseen.

A module of its own, importing only the standard library (and judgebias.io's pysource,
to read a source's tree, and atomicfile, to write a record), because the step dispatcher
(judgebias.workflow.step_dispatch) imports it for every job; the check, which asks
Snakemake for the DAG, is judgebias.workflow.paramscheck.

Why this module is long: the recording mapping, the two ways a view's field reads its keys
(by name for a declared block, by source position for what ``from_params`` derives) and
the records are one mechanism, each part crediting what the others read, and the step
dispatcher imports it for every job, so it must stay one module of the standard library.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import hashlib
import json
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from itertools import pairwise
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, Literal

from judgebias.io.pysource import module_tree

RECORD_ENV = "JUDGEBIAS_RECORD_PARAMS"  # a folder: each step job writes what it read there
Kind = Literal["value", "keys", "present", "empty", "absent"]
KINDS: tuple[Kind, ...] = ("value", "keys", "present", "empty", "absent")
Read = tuple[Kind, str]  # (kind, dotted path; "" is the whole params)
VIEW_CONSTRUCTOR = "from_params"  # a study's typed view: View.from_params(params)


def key_path(path: str, key: Any) -> str:
    """The dotted path of `key` in the block at `path` ("" the whole params)."""
    return f"{path}.{key}" if path else str(key)


def value_at(params: Mapping[str, Any], path: str) -> Any:
    """The value at dotted `path` of `params` ("": all of them)."""
    node: Any = params
    for part in path.split(".") if path else ():
        node = node[part]
    return node


class Reads:
    """The reads of one job (module docstring: what counts as a read).

    While a typed view is built (:func:`recording_view`) its reads go to the view's
    fields instead (:class:`_ViewBuild`), so that the step reads them when it uses them:
    the views being built are per thread (a model job's calls run in several).
    """

    def __init__(self) -> None:
        self.reads: set[Read] = set()
        self._local = threading.local()

    def _builds(self) -> list[_ViewBuild]:
        if not hasattr(self._local, "builds"):
            self._local.builds = []
        builds: list[_ViewBuild] = self._local.builds
        return builds

    def add(self, kind: Kind, path: str) -> None:
        builds = self._builds()
        if builds:
            builds[-1].credit((kind, path))
        else:
            self.reads.add((kind, path))

    @contextmanager
    def building(self, build: _ViewBuild) -> Iterator[None]:
        self._builds().append(build)
        try:
            yield
        finally:
            self._builds().pop()

    def as_json(self) -> dict[str, list[str]]:
        return {kind: sorted(p for k, p in self.reads if k == kind) for kind in KINDS}


class RecordingParams(Mapping[str, Any]):
    """A read-only view of the params (or of one block of them, at `path`) that notes in
    `reads` what is read of it; a drop-in for the validated params dict a step receives.
    """

    def __init__(self, data: Mapping[str, Any], reads: Reads, path: str = "") -> None:
        self._data, self.reads, self._path = data, reads, path

    def __getitem__(self, key: str) -> Any:
        path = key_path(self._path, key)
        try:
            value = self._data[key]
        except KeyError:
            self.reads.add("absent", path)
            raise
        if isinstance(value, Mapping):
            return RecordingParams(value, self.reads, path)
        self.reads.add("value", path)
        return value

    def __contains__(self, key: object) -> bool:
        found = key in self._data
        self.reads.add("present" if found else "absent", key_path(self._path, key))
        return found

    def __bool__(self) -> bool:
        self.reads.add("empty" if self._data else "absent", self._path)
        return bool(self._data)

    def __iter__(self) -> Iterator[str]:
        self.reads.add("keys", self._path)
        return iter(self._data)

    def __len__(self) -> int:
        self.reads.add("keys", self._path)
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return self.whole() == (other.whole() if isinstance(other, RecordingParams)
                                else other)

    __hash__ = None  # type: ignore[assignment]  # a mapping, as dict: unhashable

    def __repr__(self) -> str:
        return f"RecordingParams({self.whole()!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # copy.copy, copy.deepcopy and pickle: the copy is a plain dict, read whole
        return dict, (self.whole(),)

    def whole(self) -> dict[str, Any]:
        """The block as a plain dict (a deep copy), read whole."""
        self.reads.add("value", self._path)
        return copy.deepcopy(dict(self._data))

    def unrecorded(self) -> Mapping[str, Any]:
        """The block's data, reading nothing: a view declared by its block
        (judgebias.paramsblock.block_values) is built from it, and each of its fields
        records its own key when the step uses it (:meth:`_ViewBuild.field_reads`)."""
        return self._data


# ---- typed views -----------------------------------------------------------------------

FieldPath = tuple[str, ...]
SPREAD = "**"  # the last name of a field path: the constructor's `**` argument
Position = tuple[int, int, int, int]  # line, column, end line, end column
Locals = frozenset[str]  # the local names an assignment binds


def _span(node: ast.expr | ast.stmt) -> Position:
    return node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0


def _inside(inner: Position, outer: Position) -> bool:
    return outer[:2] <= inner[:2] and inner[2:] <= outer[2:]


def _names(node: ast.AST) -> set[str]:
    """The names `node` reads (a field's value naming a local inherits its reads)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Load)}


def _values(node: ast.expr) -> list[ast.expr]:
    """The expressions whose value is `node`'s (`X(...) if c else None`: X(...) and None)."""
    if isinstance(node, ast.IfExp):
        return [*_values(node.body), *_values(node.orelse)]
    if isinstance(node, ast.BoolOp):
        return [value for part in node.values for value in _values(part)]
    return [node]


@dataclasses.dataclass(frozen=True)
class _Layout:
    """Where a function building a view computes what, by source position: each field's
    keyword value in the constructor call it returns (`fields`), the calls whose result
    is a field's whole value (`calls`: a nested constructor or a helper) and those of
    them with a ``**`` argument (`spreads`: the call itself unpacks a mapping), each
    assignment to locals (`assigns`), and the locals each field and local names
    (`uses`)."""

    positions: list[tuple[int | None, int | None, int | None, int | None]]
    fields: list[tuple[Position, FieldPath]]
    calls: dict[Position, FieldPath]
    spreads: dict[Position, FieldPath]
    assigns: list[tuple[Position, Locals]]
    uses: dict[FieldPath | str, set[str]]

    def position(self, frame: FrameType) -> Position | None:
        line, end_line, column, end_column = self.positions[frame.f_lasti // 2]
        if line is None or end_line is None or column is None or end_column is None:
            return None
        return line, column, end_line, end_column

    def place(self, position: Position) -> FieldPath | Locals | None:
        """The innermost field whose value holds `position` (the ``**`` argument where
        the call unpacks it), else the locals of the assignment that does, else None."""
        if position in self.spreads:
            return (*self.spreads[position], SPREAD)
        fields = [(span, path) for span, path in self.fields if _inside(position, span)]
        if fields:
            return min(fields, key=lambda item: (item[0][2] - item[0][0],
                                                 item[0][3] - item[0][1]))[1]
        return next((names for span, names in self.assigns if _inside(position, span)), None)


@cache
def _layout(code: CodeType) -> _Layout | None:
    """The layout of the function of `code` (None where its source is not found)."""
    tree = module_tree(code.co_filename)
    node = tree and next((n for n in ast.walk(tree)
                          if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                          and n.name == code.co_name
                          and min([n.lineno, *(d.lineno for d in n.decorator_list)])
                          == code.co_firstlineno), None)
    if node is None:
        return None
    fields: list[tuple[Position, FieldPath]] = []
    calls: dict[Position, FieldPath] = {}
    spreads: dict[Position, FieldPath] = {}
    uses: dict[FieldPath | str, set[str]] = {}

    def visit(call: ast.Call, path: FieldPath) -> None:
        if any(keyword.arg is None for keyword in call.keywords):
            spreads[_span(call)] = path
        for keyword in call.keywords:
            below = (*path, keyword.arg or SPREAD)
            fields.append((_span(keyword.value), below))
            uses.setdefault(below, set()).update(_names(keyword.value))
            for value in _values(keyword.value) if keyword.arg else ():
                if isinstance(value, ast.Call):
                    calls[_span(value)] = below
                    visit(value, below)

    assigns: list[tuple[Position, Locals]] = []
    for statement in ast.walk(node):
        if isinstance(statement, ast.Return) and isinstance(statement.value, ast.Call):
            visit(statement.value, ())
        elif isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value:
            targets = statement.targets if isinstance(statement, ast.Assign) \
                else [statement.target]
            names = frozenset(n.id for t in targets for n in ast.walk(t)
                              if isinstance(n, ast.Name))
            assigns.append((_span(statement), names))
            for name in names:
                uses.setdefault(name, set()).update(_names(statement.value))
    return _Layout(list(code.co_positions()), fields, calls, spreads, assigns, uses)


class _ViewBuild:
    """The reads of one ``from_params`` call, credited to the fields and locals whose
    source was running when each was made (module docstring, "Typed views")."""

    def __init__(self, code: CodeType, params: RecordingParams) -> None:
        self.code, self.layout = code, _layout(code)
        self.reads, self.params = params.reads, params._data
        self.credited: dict[FieldPath | str, set[Read]] = {}
        self._field_reads: dict[FieldPath, frozenset[Read]] = {}  # once built, per field
        # A view declared by its block (judgebias.paramsblock): the block's key and the
        # fields that are its keys, each of which reads exactly its own key.
        self.block: tuple[str, frozenset[str]] | None = None

    def credit(self, read: Read) -> None:
        place = self._place()
        if place is None:  # not in a field or an assignment: the step reads it
            self.reads.reads.add(read)
        elif isinstance(place, frozenset):
            for name in place:
                self.credited.setdefault(name, set()).add(read)
        else:
            self.credited.setdefault(place, set()).add(read)

    def _place(self) -> FieldPath | Locals | None:
        """Where in ``from_params`` the running read is made: the field, extended into a
        helper whose call is the field's whole value (and on into its helpers), or the
        assigned locals."""
        inner: list[FrameType] = []
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and frame.f_code is not self.code:
            inner.append(frame)
            frame = frame.f_back
        position = self.layout.position(frame) if frame and self.layout else None
        if frame is None or self.layout is None or position is None:
            return None
        place = self.layout.place(position)
        if not isinstance(place, tuple):
            return place
        path: FieldPath = place
        relative: FieldPath | Locals | None = place
        for outer, callee in pairwise([frame, *reversed(inner)]):
            outer_layout, layout = _layout(outer.f_code), _layout(callee.f_code)
            at = outer_layout.position(outer) if outer_layout else None
            if outer_layout is None or at is None or outer_layout.calls.get(at) != relative:
                break  # the callee's result is not the field's value as it stands
            within = layout.position(callee) if layout else None
            relative = layout.place(within) if layout and within else None
            if not isinstance(relative, tuple) or not relative:
                break
            path = (*path, *relative)
        return path

    def field_reads(self, path: FieldPath, fields: Iterable[str]) -> frozenset[Read]:
        """What using the field at `path` reads, `fields` the names of it and its
        siblings: its own reads and those of the fields above it; of its constructor's
        ``**`` argument, the reads whose last key is its name or no sibling's; and those
        of the locals any of them names, transitively."""
        if path not in self._field_reads:
            self._field_reads[path] = (
                frozenset({("value", self.block_key(path))}) if self.is_block_key(path)
                else frozenset(self._gather(path, set(fields))))
        return self._field_reads[path]

    def is_block_key(self, path: FieldPath) -> bool:
        """Whether the field at `path` is a key of the view's block (or within one)."""
        return self.block is not None and bool(path) and path[0] in self.block[1]

    def block_key(self, path: FieldPath) -> str:
        """The dotted params key of the block field at `path`."""
        assert self.block is not None
        return ".".join([self.block[0], *path])

    def _gather(self, path: FieldPath, fields: set[str]) -> set[Read]:
        above = [path[:i] for i in range(len(path) + 1)]
        spread = (*path[:-1], SPREAD)
        found = {read for at in above for read in self.credited.get(at, ())}
        for read in self.credited.get(spread, ()):
            last = read[1].rsplit(".", 1)[-1]
            if last == path[-1] or last not in fields:
                found.add(read)
        uses = self.layout.uses if self.layout else {}
        seen: set[str] = set()
        todo = [name for at in [*above, spread] for name in uses.get(at, ())]
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                found |= self.credited.get(name, set())
                todo += uses.get(name, ())
        return found


class _FieldDict(Mapping[Any, Any]):
    """A view field's dict built in ``from_params``: looking up one entry (or whether
    there is one) reads what names its key (``frame.manipulations.gamma`` for
    ``["gamma"]``) and what names none of the dict's keys, the key set of a params block
    holding that key read as whether the block holds it (the entry does not depend on
    the block's other keys); any other use reads everything the field was computed
    from. `params` are the whole params, to tell which blocks hold the key."""

    def __init__(self, data: Mapping[Any, Any], reads: frozenset[Read], sink: Reads,
                 params: Mapping[str, Any]) -> None:
        self._data, self._reads, self._sink, self._params = data, reads, sink, params
        keys = {str(key) for key in data}
        self._shared = {r for r in reads if not keys & set(r[1].split("."))}
        self._entries: dict[Any, set[Read]] = {}

    def _entry(self, key: Any) -> None:
        if key not in self._entries:
            found = {r for r in self._reads if str(key) in r[1].split(".")}
            for kind, path in self._shared:
                block = value_at(self._params, path) if kind == "keys" else None
                found.add(("present", key_path(path, key))
                          if isinstance(block, Mapping) and key in block else (kind, path))
            self._entries[key] = found
        self._sink.reads |= self._entries[key]

    def __getitem__(self, key: Any) -> Any:
        value = self._data[key]
        self._entry(key)
        return value

    def __contains__(self, key: object) -> bool:
        found = key in self._data
        if found:
            self._entry(key)
        else:
            self._sink.reads |= self._shared
        return found

    def __iter__(self) -> Iterator[Any]:
        self._sink.reads |= self._reads
        return iter(self._data)

    def __len__(self) -> int:
        self._sink.reads |= self._reads
        return len(self._data)

    def __repr__(self) -> str:
        self._sink.reads |= self._reads
        return repr(self._data)

    def __reduce__(self) -> tuple[Any, ...]:
        # copy, deepcopy (dataclasses.asdict) and pickle: a plain dict, read whole
        self._sink.reads |= self._reads
        return dict, (dict(self._data),)


_STATE = "_judgebias_params_read"  # a recording view's (build, field path) in its __dict__


def _view_getattribute(self: Any, name: str) -> Any:
    value = object.__getattribute__(self, name)
    state = object.__getattribute__(self, "__dict__").get(_STATE)
    if state is None or name not in type(self).__dataclass_fields__:
        return value
    build, path = state
    if build.is_block_key((*path, name)):
        return _block_value(value, build, (*path, name))
    reads = build.field_reads((*path, name), type(self).__dataclass_fields__)
    if type(value) is dict:
        return _FieldDict(value, reads, build.reads, build.params)
    build.reads.reads |= reads
    return value


def _block_value(value: Any, build: _ViewBuild, path: FieldPath) -> Any:
    """A block field's value as the step uses it: a nested part (already recording)
    reads nothing until its own fields are used, a dict of entries reads an entry's key
    when it is looked up (:class:`_BlockDict`), anything else its own key."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value
    if type(value) is dict:
        return _BlockDict(value, build, path)
    dotted = build.block_key(path)
    build.reads.add("value" if _holds(build.params, dotted) else "absent", dotted)
    return value


def _holds(params: Mapping[str, Any], dotted: str) -> bool:
    """Whether `params` hold the key at `dotted` (a view holds None for one left out)."""
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


class _BlockDict(Mapping[Any, Any]):
    """A block field's mapping (BIRCH's ``datasets`` by name): an entry read is its own
    key (``birch.datasets.vl``), an entry that is a part reads its own fields' keys;
    the key set reads the mapping's keys."""

    def __init__(self, data: Mapping[Any, Any], build: _ViewBuild, path: FieldPath) -> None:
        self._data, self._build, self._path = data, build, path

    def __getitem__(self, key: Any) -> Any:
        value = self._data[key]
        path = (*self._path, str(key))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return _recording_instance(value, self._build, path)
        return _block_value(value, self._build, path)

    def __contains__(self, key: object) -> bool:
        found = key in self._data
        self._build.reads.add("present" if found else "absent",
                              self._build.block_key((*self._path, str(key))))
        return found

    def __iter__(self) -> Iterator[Any]:
        self._build.reads.add("keys", self._build.block_key(self._path))
        return iter(self._data)

    def __len__(self) -> int:
        self._build.reads.add("keys", self._build.block_key(self._path))
        return len(self._data)

    def __repr__(self) -> str:
        self._build.reads.add("value", self._build.block_key(self._path))
        return repr(self._data)

    def __reduce__(self) -> tuple[Any, ...]:
        self._build.reads.add("value", self._build.block_key(self._path))
        return dict, (dict(self._data),)


def _plain_type(value: Any) -> type:
    """The view class of `value`, recording (:func:`_recording_class`) or not."""
    kind = type(value)
    return kind.__mro__[1] if kind.__dict__.get("__getattribute__") is _view_getattribute \
        else kind


def _view_eq(self: Any, other: object) -> bool:
    """Equal to the same view, recording or not (the dataclass's own ``__eq__`` wants
    the very same class); comparing reads every field."""
    if not dataclasses.is_dataclass(other) or _plain_type(other) is not _plain_type(self):
        return NotImplemented
    names = [field.name for field in dataclasses.fields(self)]
    return [getattr(self, n) for n in names] == [getattr(other, n) for n in names]


def _view_reduce(self: Any) -> tuple[Any, ...]:
    """copy, deepcopy and pickle: the plain view, every field read."""
    values = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
    return _plain_view, (_plain_type(self), {name: dict(value) if isinstance(
        value, _FieldDict) else value for name, value in values.items()})


def _plain_view(view: type, values: Mapping[str, Any]) -> Any:
    plain: Any = object.__new__(view)
    for name, value in values.items():
        object.__setattr__(plain, name, value)
    return plain


@cache
def _recording_class(view: type) -> type:
    """`view`'s subclass whose instances read a field's keys when it is used."""
    return type(view.__name__, (view,), {
        "__getattribute__": _view_getattribute, "__eq__": _view_eq,
        "__hash__": view.__hash__, "__reduce__": _view_reduce,
        "__qualname__": view.__qualname__, "__module__": view.__module__})


def _recording_instance(value: Any, build: _ViewBuild, path: FieldPath) -> Any:
    """`value` (a dataclass instance) as an instance of its recording subclass, its
    dataclass fields likewise (so ``view.report.seed`` reads only what ``seed`` does)."""
    view: type = type(value)
    recording: Any = object.__new__(_recording_class(view))
    for field in dataclasses.fields(value):
        item = object.__getattribute__(value, field.name)
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            item = _recording_instance(item, build, (*path, field.name))
        object.__setattr__(recording, field.name, item)
    object.__setattr__(recording, _STATE, (build, path))
    return recording


def recording_view(from_params: Callable[..., Any], params: RecordingParams,
                   *args: Any) -> Any:
    """``from_params(params, *args)`` (a bound classmethod), the view a step receives,
    with each of its fields reading what it was computed from when the step uses it
    (module docstring, "Typed views")."""
    build = _ViewBuild(from_params.__func__.__code__, params)  # type: ignore[attr-defined]
    with params.reads.building(build):
        view = from_params(params, *args)
    if not dataclasses.is_dataclass(view) or isinstance(view, type):
        params.reads.reads.update(r for found in build.credited.values() for r in found)
        return view
    from judgebias.paramsblock import PARAMS_KEY, block_fields  # pydantic: recording only

    block_key = getattr(type(view), PARAMS_KEY, None)
    if isinstance(block_key, str):
        build.block = block_key, frozenset(block_fields(type(view)))
    return _recording_instance(view, build, ())


def views_of(namespace: Mapping[str, Any]) -> set[type]:
    """The view classes `namespace` names: dataclasses with a ``from_params`` classmethod
    of their own."""
    return {value for value in namespace.values() if isinstance(value, type)
            and dataclasses.is_dataclass(value)
            and isinstance(value.__dict__.get(VIEW_CONSTRUCTOR), classmethod)}


@contextmanager
def recording_views(views: Iterable[type]) -> Iterator[None]:
    """While the block runs, each of `views` (:func:`views_of`) builds a recording view
    (:func:`recording_view`) when its ``from_params`` is called on recording params:
    the view a step is handed (judgebias.workflow.step_dispatch.bind), one a step builds itself
    from the params mapping it also passes on to a model job, and the panel models the judging
    core resolves."""
    originals = {view: view.__dict__[VIEW_CONSTRUCTOR] for view in views}

    def recording(original: classmethod) -> classmethod:
        def from_params(cls: type, params: Any, *args: Any) -> Any:
            bound = original.__get__(None, cls)
            if isinstance(params, RecordingParams):
                return recording_view(bound, params, *args)
            return bound(params, *args)
        return classmethod(from_params)

    try:
        for view, original in originals.items():
            setattr(view, VIEW_CONSTRUCTOR, recording(original))
        yield
    finally:
        for view, original in originals.items():
            setattr(view, VIEW_CONSTRUCTOR, original)


# ---- records ---------------------------------------------------------------------------


def record_name(target: str, outputs: Sequence[str], wildcards: Mapping[str, str]) -> str:
    """The record file of step `target`'s job: the step, its wildcards' values and a hash
    of its outputs (one job writes them; the wildcards alone may not tell jobs apart)."""
    digest = hashlib.sha256("\n".join(sorted(outputs)).encode()).hexdigest()[:12]
    words = re.sub(r"[^A-Za-z0-9._-]", "_", ".".join([target, *wildcards.values()]))
    return f"{words}.{digest}.json"


def write_record(folder: Path, target: str, outputs: Sequence[str],
                 wildcards: Mapping[str, str], reads: Reads) -> Path:
    """Write what step `target`'s job read into `folder`, atomically (jobs run at once)."""
    from judgebias.io.atomicfile import atomic_path

    path = folder / record_name(target, outputs, wildcards)
    record = {"step": target, "outputs": sorted(outputs), "wildcards": dict(wildcards),
              **reads.as_json()}
    with atomic_path(path, durable=False) as tmp:
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path
