"""Checks of the `_template:` params block that its schema cannot express."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def validate(params: Mapping[str, Any]) -> list[str]:
    """Judges named but not in the panel."""
    block = params["_template"]
    return [f"_template.models: {m!r} is not a panel model"
            for m in block.get("models", []) if m not in params["panel"]]
