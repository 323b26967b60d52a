"""How a table fits its terminal: each column's width, and text cut to it with an ellipsis.

Headless (no textual), so the arithmetic is tested on its own. A column that does not fit is
narrowed in a stated order down to its minimum, so the columns that name a run's configuration
(strategy, workers, sweep) stay whole while a long finding name gives way first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ELLIPSIS = "…"


def fit_widths(
    natural: Mapping[str, int], available: int, shrink: Sequence[tuple[str, int]]
) -> dict[str, int]:
    """The width of each column: its ``natural`` width, less what the columns of ``shrink``
    (``(name, minimum)``, in the order they give way) lose until the total fits ``available``.

    Columns not in ``shrink`` keep their natural width; when even the minimums do not fit, the
    table is wider than ``available`` (and scrolls)."""
    widths = dict(natural)
    excess = sum(widths.values()) - available
    for name, minimum in shrink:
        if excess <= 0:
            break
        cut = max(0, min(excess, widths[name] - minimum))
        widths[name] -= cut
        excess -= cut
    return widths


def shorten(text: str, width: int, *, keep_end: bool = False) -> str:
    """``text`` in at most ``width`` characters: cut at the end, or in the middle with
    ``keep_end`` (for ids whose end tells them apart: ``sweep-…mirrored-n4-r0``; two thirds of
    what is kept is the end), marked with ``…``."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    if not keep_end:
        return text[: width - 1] + ELLIPSIS
    head = (width - 1) // 3
    return text[:head] + ELLIPSIS + text[len(text) - (width - 1 - head) :]
