"""The ``params.yaml`` reference of the docs site, generated from the params schema.

``python -m judgebias.devtools.params_reference > docs/reference/params.md`` writes the
committed page; tests/core/test_docs.py fails when the page and the schema disagree.

The schema is :func:`judgebias.config.params_schema`: the core file
(``workflow/params.schema.yaml``), each registered study's block as its typed view declares
it (judgebias.paramsblock), named after the study, and the fields and client settings of
each registered backend.
Every key of an object's ``properties`` is one row (its dotted path, type, default,
whether it is required, its description), recursively, following ``$ref`` into
``$defs``. A mapping whose keys the user names (``panel``, ``families``, a study's
datasets) is written with a placeholder: ``panel.<key>.backend``. No pipeline job
imports this module.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

PLACEHOLDER = "<key>"
COMMAND = "python -m judgebias.devtools.params_reference > docs/reference/params.md"


@dataclass(frozen=True)
class Key:
    """One row of the reference: a key of params.yaml and what its schema says."""

    path: str  # dotted, with <key> where the user names the key
    type: str
    default: str  # "" where the schema gives none
    required: bool
    description: str
    run_setting: bool
    backends: tuple[str, ...] = ()  # the backends whose panel entries take this field


def _resolve(root: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    """`node` with its ``$ref`` (``#/$defs/name``) followed; the node's own keys (a
    description beside the ``$ref``) win over the target's."""
    seen = set()
    while "$ref" in node:
        ref = node["$ref"]
        if ref in seen:
            raise ValueError(f"schema: $ref cycle at {ref}")
        seen.add(ref)
        target: Any = root
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _alternatives(root: Mapping[str, Any], node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [_resolve(root, n) for n in node.get("oneOf", node.get("anyOf", []))]


def _type(root: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    """A short, readable type: ``integer``, ``string or null``, ``one of a, b``,
    ``list of integer``."""
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(v) if not isinstance(v, str) else v}`"
                                     for v in node["enum"])
    alternatives = _alternatives(root, node)
    if alternatives and "type" not in node:
        return " or ".join(dict.fromkeys(_type(root, a) for a in alternatives))
    kinds = node.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    words = []
    for kind in kinds:
        if kind == "array" and isinstance(node.get("items"), Mapping):
            words.append("list of " + _type(root, _resolve(root, node["items"])))
        elif kind == "object" and isinstance(node.get("additionalProperties"), Mapping) \
                and not node.get("properties"):
            words.append("mapping")
        else:
            words.append(kind)
    return " or ".join(words) or "any"


def _default(node: Mapping[str, Any]) -> str:
    if "default" not in node:
        return ""
    return json.dumps(node["default"], ensure_ascii=False)


def _rows(root: Mapping[str, Any], node: Mapping[str, Any], prefix: str,
          backends: Mapping[str, tuple[str, ...]]) -> Iterator[Key]:
    """The rows under the object schema `node`, whose path is `prefix`."""
    node = _resolve(root, node)
    objects = [node, *[a for a in _alternatives(root, node) if a.get("properties")
                       or isinstance(a.get("additionalProperties"), Mapping)]]
    for obj in objects:
        required = set(obj.get("required", []))
        for name, child in obj.get("properties", {}).items():
            yield from _key(root, child, f"{prefix}.{name}" if prefix else name,
                            name in required, backends.get(name, ()) if prefix ==
                            f"panel.{PLACEHOLDER}" else (), backends)
        extra = obj.get("additionalProperties")
        if isinstance(extra, Mapping):  # a mapping whose keys the user names
            yield from _key(root, extra, f"{prefix}.{PLACEHOLDER}", False, (), backends)
    items = node.get("items")
    if isinstance(items, Mapping) and _resolve(root, items).get("properties"):
        yield from _rows(root, items, f"{prefix}[]", backends)


def _key(root: Mapping[str, Any], child: Mapping[str, Any], path: str, required: bool,
         owners: tuple[str, ...], backends: Mapping[str, tuple[str, ...]]) -> Iterator[Key]:
    resolved = _resolve(root, child)
    yield Key(path=path, type=_type(root, resolved), default=_default(resolved),
              required=required, description=" ".join(
                  str(resolved.get("description", "")).split()),
              run_setting=bool(resolved.get("x-run-setting")), backends=owners)
    yield from _rows(root, resolved, path, backends)


def _backend_fields() -> dict[str, tuple[str, ...]]:
    """Panel-entry field -> the registered backends that add it."""
    from judgebias.models.backends import registered_backends

    owners: dict[str, list[str]] = {}
    for spec in registered_backends().values():
        for name in spec.fields:
            owners.setdefault(name, []).append(spec.name)
    return {name: tuple(specs) for name, specs in owners.items()}


def params_keys() -> list[Key]:
    """Every key of the params schema, in the schema's order (core, studies, backends)."""
    from judgebias.config import params_schema

    schema = params_schema()
    return list(_rows(schema, schema, "", _backend_fields()))


def _escape(text: str) -> str:
    """Markdown table cell text: `|` escaped, `<`/`>` outside code spans as entities (a
    ``panel.<m>`` in prose is not an HTML tag)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = html.escape(parts[i], quote=False)
    return "`".join(parts).replace("|", "\\|")


def _cell(key: Key) -> str:
    notes = []
    if key.required:
        notes.append("**Required.**")
    if key.backends:
        notes.append(f"*Backends: {', '.join(key.backends)}.*")
    if key.run_setting:
        notes.append("*Run setting: changing it reruns nothing.*")
    return " ".join([_escape(key.description), *notes]).strip()


def params_reference() -> str:
    """The reference page, as Markdown: one section per top-level key, one table row per
    key below it."""
    from judgebias.config import params_schema

    schema = params_schema()
    keys = params_keys()
    out = [
        "# params.yaml reference",
        "",
        "<!-- Generated from the params schema; do not edit. Regenerate with:",
        f"     {COMMAND} -->",
        "",
        "Every key `params.yaml` may hold, generated from the JSON schema that `judgebias "
        "validate` checks (`judgebias.config.params_schema`: "
        "`src/judgebias/workflow/params.schema.yaml`, each study's block as the typed "
        "view in `src/judgebias/studies/<study>/params.py` declares it, and the fields "
        "each backend of "
        "`judgebias.models.backends` adds to a panel entry). `<key>` stands for a name "
        "you choose (a panel model, a family, a dataset, a setting). A default is filled "
        "in when the key is absent; a key without one is optional unless marked "
        "required. A *run setting* changes how a run goes (budgets, prices, client "
        "limits, where a file lies), never what is answered, so changing it reruns no job.",
        "",
        "Study blocks are optional: a study runs when `params.yaml` has its block.",
        "",
    ]
    for top, node in schema["properties"].items():
        below = [k for k in keys if k.path == top or k.path.startswith((f"{top}.",
                                                                        f"{top}["))]
        head = below[0]
        out += [f"## `{top}`", ""]
        resolved = _resolve(schema, node)
        if resolved.get("description"):
            out += [_escape(" ".join(str(resolved["description"]).split())), ""]
        out += [f"Type: {head.type}." + (f" Default: `{head.default}`." if head.default
                                          else "")
                + (" Required." if head.required else ""), ""]
        rows = below[1:]
        if not rows:
            continue
        out += ["| key | type | default | description |", "|---|---|---|---|"]
        for key in rows:
            default = f"`{key.default}`" if key.default else ""
            out.append(f"| `{key.path}` | {_escape(key.type)} | {_escape(default)} | "
                       f"{_cell(key)} |")
        out.append("")
    return "\n".join(out)


def main() -> None:
    print(params_reference(), end="")


if __name__ == "__main__":
    main()
