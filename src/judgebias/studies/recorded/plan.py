"""The recorded study calls no model: `judgebias plan` counts nothing for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgebias.plan import NotCounted, PlannedCalls


def planned_calls(params: Mapping[str, Any]) -> list[PlannedCalls | NotCounted]:
    return []
