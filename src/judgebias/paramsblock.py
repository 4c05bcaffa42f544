"""Each params.yaml key of a study declared once: the typed view *is* the declaration.

A study's block of params.yaml (``birch:``, ``mmb:``...) is declared as the typed view its
steps receive: a frozen pydantic dataclass (``@view``) whose fields are the block's keys,
each with its type, default, bounds and description (the attribute's docstring). From
that one declaration come

- the block's JSON schema (:func:`block_schema`), which judgebias.config validates
  params.yaml against (with jsonschema, so every message names the key) and fills the
  defaults from, and from which the docs' ``params.yaml`` reference is generated;
- the typed view a step receives (``View.from_params(params)``: the validated block's
  values, and the fields the view derives from other keys, :func:`derived`);
- the keys a rule declares (:func:`block_keys`).

So a new key is one field: nothing else to keep in step. Why pydantic, not a hand-written
schema emitter or the other way round (views generated from a JSON-schema file): pydantic
derives JSON Schema (draft 2020-12) from type hints, bounds, literals and docstrings, and
its dataclasses are standard dataclasses (``dataclasses.fields`` works), so the view stays
what the steps and the params-read recorder (judgebias.workflow.paramsread) already use;
a generated view would be code nobody wrote and a type checker reads only once generated.

The emitted schema is the plain JSON Schema a reader of the reference expects: pydantic's
titles are dropped, ``Optional[X]`` becomes ``type: [x, "null"]``, nested blocks are
inlined (a dict of blocks as ``additionalProperties``), a ``Literal`` is an ``enum`` (or a
``const``) without pydantic's ``type``, a ``dict[str, Any]`` a plain ``type: object``, and a
nested block's default is ``{}`` (judgebias.config fills its keys' own defaults in).
Constraints JSON Schema has and pydantic does not (``uniqueItems``, ``propertyNames``,
``x-run-setting``) are given with :func:`key`.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from itertools import pairwise
from types import UnionType
from typing import (
    Annotated,
    Any,
    TypeVar,
    Union,
    dataclass_transform,
    get_args,
    get_origin,
    get_type_hints,
)

from pydantic import ConfigDict, Field, TypeAdapter
from pydantic.dataclasses import dataclass as pydantic_dataclass

from judgebias.io.pysource import module_tree

DERIVED = "x-derived"  # a view field computed from other keys: no key of the block
ABSENT = "x-absent"  # a key with no default: None in the view where params.yaml omits it
RUN_SETTING = "x-run-setting"  # a key that changes how a run goes, never an answer
PARAMS_KEY = "PARAMS_KEY"  # a view's class attribute: its block's top-level key

View = TypeVar("View", bound=type)
Positive = Annotated[float, Field(gt=0)]  # an item of a list of positive numbers


def _schema_words(schema: dict[str, Any], cls: type) -> None:
    """A view's keys in the order it declares them (pydantic puts some first: the order
    of the params reference), each described by the docstring under its field."""
    properties = schema.get("properties", {})
    described = _attribute_docstrings(cls)
    for name, node in properties.items():
        if name in described and "description" not in node:
            node["description"] = described[name]
    order = [f.name for f in dataclasses.fields(cls) if f.name in properties]
    schema["properties"] = {name: properties[name] for name in order}


def _attribute_docstrings(cls: type) -> dict[str, str]:
    """The docstring under each field of `cls`, read from its module's source.

    Read here, when the schema is written, rather than by pydantic's
    ``use_attribute_docstrings`` when each class is made: that re-reads the source for
    every class, a third of a second added to every job's start."""
    try:
        tree = module_tree(inspect.getsourcefile(cls) or "")
    except TypeError:
        return {}
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
                 and n.name == cls.__name__), None) if tree else None
    found: dict[str, str] = {}
    body = node.body if node else []
    for statement, after in pairwise(body):
        if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            found[statement.target.id] = inspect.cleandoc(after.value.value)
    return found


VIEW_CONFIG = ConfigDict(extra="forbid", arbitrary_types_allowed=True,
                         json_schema_extra=_schema_words)


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(Field,))
def view(cls: View) -> View:
    """Declare `cls` a params block (or a nested part of one): a frozen pydantic
    dataclass whose unknown keys are errors and whose attribute docstrings are the
    schema's descriptions (:func:`_attribute_docstrings`)."""
    return pydantic_dataclass(frozen=True, kw_only=True, config=VIEW_CONFIG)(cls)  # type: ignore[return-value]


def key(default: Any = ..., *, unique: bool = False, run_setting: bool = False,
        names: str | None = None, absent: bool = False,
        default_factory: Callable[[], Any] | None = None,
        schema: Mapping[str, Any] | None = None, **constraints: Any) -> Any:
    """A block key with what pydantic's ``Field`` cannot say in JSON Schema: `unique`
    items (``uniqueItems``), a `run_setting` (``x-run-setting``: changes how a run goes,
    never an answer; no rule declares it), the pattern its mapping's `names` match
    (``propertyNames``), or any other `schema` words. With `absent`, the key may be left
    out and has no default (its type is ``X | None``, None where it is absent, but null is
    no value to write). `constraints` are ``Field``'s (``ge``, ``gt``, ``min_length``...)."""
    extra: dict[str, Any] = dict(schema or {})
    if absent:
        extra[ABSENT] = True
        default = None
    if unique:
        extra["uniqueItems"] = True
    if run_setting:
        extra[RUN_SETTING] = True
    if names is not None:
        extra["propertyNames"] = {"pattern": names}
    if default_factory is not None:
        return Field(default_factory=default_factory, json_schema_extra=extra or None,
                     **constraints)
    return Field(default, json_schema_extra=extra or None, **constraints)


def part(cls: type) -> Any:
    """A nested block that may be left out (``downsampling: {}``): each of its keys then
    takes its own default."""
    return Field(default_factory=cls, json_schema_extra={"default": {}})


def derived() -> Any:
    """A view field its ``from_params`` computes from other keys (the judges a study
    resolves from the panel, the top-level seed): not a key of the block, so neither in
    its schema nor among the keys a rule declares for it."""
    return Field(json_schema_extra={DERIVED: True})


def block_fields(cls: type) -> list[str]:
    """The names of `cls`'s fields that are keys of its block, in declaration order."""
    return [f.name for f in dataclasses.fields(cls) if not _is_derived(cls, f.name)]


def block_keys(cls: type, *, only: Iterable[str] | None = None,
               exclude: Iterable[str] = ()) -> list[str]:
    """The dotted params keys of view `cls`'s block (``birch.variants``...), `only` those
    named (a name may go into a nested part: ``"dataset.synthetic.seed"``) or all but those
    `exclude`d: what a rule declares for a step that reads them. A name that is no key of
    the block is an error, so a rule cannot go on declaring a key that was renamed or
    removed."""
    names = block_fields(cls)
    chosen = list(only) if only is not None else names
    skip = set(exclude)
    unknown = sorted(skip - set(names))
    unknown += [path for path in chosen if not _declares(cls, path.split("."))]
    if unknown:
        raise ValueError(f"{cls.__name__} ({getattr(cls, PARAMS_KEY)}): no key "
                         f"{', '.join(unknown)} (its keys: {', '.join(names)})")
    prefix = getattr(cls, PARAMS_KEY)
    return [f"{prefix}.{path}" for path in chosen if path not in skip]


def _declares(cls: type | None, path: list[str]) -> bool:
    """Whether view `cls` has the key at `path` (field names, down nested parts)."""
    if cls is None or path[0] not in block_fields(cls):
        return False
    return len(path) == 1 or _declares(_part(get_type_hints(cls)[path[0]]), path[1:])


def _part(hint: Any) -> type | None:
    """The view class a field's type names (``Grow`` for ``Grow | None`` or an
    ``Annotated`` one), or None."""
    if get_origin(hint) is Annotated:
        return _part(get_args(hint)[0])
    if get_origin(hint) in (Union, UnionType):
        parts = [p for a in get_args(hint) if (p := _part(a)) is not None]
        return parts[0] if len(parts) == 1 else None
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def block_values(params: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Block `name` of the validated `params` as a plain dict, to build its view from.

    While a step's reads are recorded (judgebias.workflow.paramsread), this reads
    nothing: a field of the view records its own key when the step uses it."""
    block = params[name]
    plain = getattr(block, "unrecorded", None)
    return copy.deepcopy(dict(plain() if callable(plain) else block))


def _is_derived(cls: type, name: str) -> bool:
    extra = cls.__pydantic_fields__[name].json_schema_extra  # type: ignore[attr-defined]
    return isinstance(extra, Mapping) and bool(extra.get(DERIVED))


def block_schema(cls: type) -> dict[str, Any]:
    """View `cls`'s block as the JSON-Schema fragment judgebias.config validates it with
    (module docstring)."""
    schema = TypeAdapter(cls).json_schema(mode="validation")
    definitions = schema.pop("$defs", {})
    return _plain(schema, definitions)


def _plain(node: Any, definitions: Mapping[str, Any]) -> Any:
    """`node` with pydantic's references inlined and its own words made plain."""
    if isinstance(node, list):
        return [_plain(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    reference = node.pop("$ref", None)
    if reference is not None:
        node = {**copy.deepcopy(definitions[reference.rsplit("/", 1)[-1]]), **node}
    node.pop("title", None)
    if isinstance(node.get("description"), str):
        node["description"] = " ".join(node["description"].split())
    if "enum" in node or "const" in node:  # a Literal: its values say the type
        node.pop("type", None)
    if node.get("additionalProperties") is True:  # JSON Schema's default: a plain mapping
        del node["additionalProperties"]
    if node.pop(ABSENT, False):
        return _plain(_not_null(node), definitions)  # its one branch may be a reference
    properties = node.get("properties")
    if isinstance(properties, dict):
        derived_names = [k for k, v in properties.items() if v.get(DERIVED)]
        for name in derived_names:
            del properties[name]
        if "required" in node:
            node["required"] = [k for k in node["required"] if k not in derived_names]
            if not node["required"]:
                del node["required"]
    out = {k: (v if k in ("default", "enum", "const") else _plain(v, definitions))
           for k, v in node.items()}
    return _nullable(out)


def _not_null(node: dict[str, Any]) -> dict[str, Any]:
    """An `absent` key's schema: no default, and null no value of it."""
    node.pop("default", None)
    branches = node.pop("anyOf", None)
    if branches is not None:
        other = [b for b in branches if b != {"type": "null"}]
        node = {**other[0], **node} if len(other) == 1 else {**node, "anyOf": other}
    return node


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, {type: null}]`` as ``type: [x, "null"]`` with X's other words,
    where X is one type (JSON Schema's other words apply to their own type only)."""
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or {"type": "null"} not in branches:
        return node
    other = next(b for b in branches if b != {"type": "null"})
    if not isinstance(other.get("type"), str) or set(other) & (set(node) - {"anyOf"}):
        return node
    merged = {k: v for k, v in node.items() if k != "anyOf"}
    return {**other, **merged, "type": [other["type"], "null"]}
