"""Facts computed from other facts (patterns, gates). Derived last; owned by the rules issue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS: tuple[Fact, ...] = ()


def derive(run: Run, facts: dict[str, Any]) -> dict[str, Any]:
    return {}
