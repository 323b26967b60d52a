"""Rule selection, as in Ruff: a base ``select``, then ``extend-select`` and ``ignore``.

Selectors are rule codes or prefixes (``G5``, ``M10``, ``C401``) or ``ALL``. Layers apply in
order (defaults, then ``[tool.advisor]``, then the command line); a layer with its own
``select`` starts over, so the command line always wins. Within one layer the more specific
selector wins, and an ``ignore`` beats a ``select`` of the same length.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from advisor.errors import UsageError


@dataclass(frozen=True)
class Layer:
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = field(default_factory=tuple)
    ignore: tuple[str, ...] = field(default_factory=tuple)


def normalize(selectors: Iterable[str] | None) -> tuple[str, ...] | None:
    """Upper-case, split on commas, drop blanks. ``None`` stays ``None`` (not given)."""
    if selectors is None:
        return None
    out: list[str] = []
    for item in selectors:
        for part in str(item).split(","):
            part = part.strip().upper()
            if part:
                out.append(part)
    return tuple(out)


def validate(selectors: Iterable[str], codes: Sequence[str], origin: str) -> None:
    for sel in selectors:
        if sel != "ALL" and not any(code.startswith(sel) for code in codes):
            raise UsageError(f"{origin}: {sel!r} matches no rule code (see `advisor rules`)")


def _longest(code: str, selectors: Iterable[str]) -> int:
    best = -1
    for sel in selectors:
        if sel == "ALL":
            best = max(best, 0)
        elif code.startswith(sel):
            best = max(best, len(sel))
    return best


def select_codes(codes: Sequence[str], layers: Sequence[Layer]) -> list[str]:
    """The codes enabled after applying ``layers`` in order."""
    enabled = {code: False for code in codes}
    for layer in layers:
        positive = (*(layer.select or ()), *layer.extend_select)
        for code in codes:
            if layer.select is not None:
                enabled[code] = False
            p = _longest(code, positive)
            n = _longest(code, layer.ignore)
            if p > n:
                enabled[code] = True
            elif n >= 0:
                enabled[code] = False
    return [code for code in codes if enabled[code]]
