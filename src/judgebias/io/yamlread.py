"""params.yaml and the project's other YAML, read strictly: ``yaml.safe_load`` through
libyaml's C parser, rejecting a key stated twice in one mapping.

Why a module of its own, in io: reading YAML is a primitive of the layers below the
params checks (judgebias.config), such as the core schema file, and it imports nothing
of judgebias.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml


def key_text(parts: Iterable[Any]) -> str:
    """``frame.models[2]``: mapping keys joined by dots, list positions in brackets."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "<top level>"


class DuplicateKeyError(yaml.YAMLError):
    """A YAML mapping states a key twice; the message names the key path and both lines."""


_FastSafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SPECIAL_KEY_TAGS = frozenset({"tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"})


class _UniqueKeyLoader(_FastSafeLoader):
    """``yaml.safe_load`` that rejects a key stated twice in one mapping.

    PyYAML keeps the last of two equal keys, so a second ``birch:`` block or a panel
    model defined twice would silently replace the first. Parsing stays in libyaml's C
    parser where PyYAML was built with it (the PyPI wheels are; the pure-Python parser
    was most of a job's start-up, benchmarks/job_startup.py): only the construction of
    mappings, Python code in every loader, gains the check. Keys are compared as
    constructed values (``yes`` and ``true`` are one key); ``<<`` merges may still
    override merged keys, as YAML intends.
    """

    def construct_document(self, node: yaml.Node) -> Any:
        self._document_root = node
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        own = list(node.value)  # before `<<` merges are flattened into node.value
        mapping = super().construct_mapping(node, deep=deep)
        if len(mapping) < len(node.value):  # two equal keys, or a merge overridden
            self._check_unique_keys(node, own)
        return mapping

    def _check_unique_keys(self, node: yaml.MappingNode,
                           own: list[tuple[yaml.Node, yaml.Node]]) -> None:
        first_nodes: dict[Any, yaml.Node] = {}
        for key_node, _ in own:
            if key_node.tag in _SPECIAL_KEY_TAGS:
                continue
            key = self.construct_object(key_node)  # already constructed: from the cache
            try:
                first = first_nodes.setdefault(key, key_node)
            except TypeError:  # an unhashable key: the base constructor reports it
                continue
            if first is not key_node:
                where = key_text([*_node_path(self._document_root, node), key_node.value])
                raise DuplicateKeyError(
                    f"{where}: stated twice (lines {first.start_mark.line + 1} and "
                    f"{key_node.start_mark.line + 1}); YAML would silently keep only the "
                    "second")


def _node_path(root: yaml.Node, target: yaml.Node) -> list[Any]:
    """The keys and indices leading from `root` to the node `target` (for messages)."""
    stack: list[tuple[yaml.Node, list[Any]]] = [(root, [])]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if isinstance(node, yaml.MappingNode):
            stack += [(value, [*path, key.value]) for key, value in node.value]
        elif isinstance(node, yaml.SequenceNode):
            stack += [(value, [*path, i]) for i, value in enumerate(node.value)]
    return []


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` through libyaml's C parser, rejecting duplicate mapping keys
    (DuplicateKeyError, naming the key path and both lines; _UniqueKeyLoader)."""
    return yaml.load(text, Loader=_UniqueKeyLoader)
