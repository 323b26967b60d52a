"""Interval arithmetic over trace events (one implementation for XProf, JAX, torch and Horovod).

Intervals are ``(start, end)`` pairs in one clock; "merged" lists are sorted and disjoint. Every
operation is linear in the lengths of its inputs after the sort in :func:`merge`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Interval = tuple[float, float]


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, non-overlapping union of intervals."""
    out: list[Interval] = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def measure(merged: Sequence[Interval]) -> float:
    return sum(end - start for start, end in merged)


def intersect(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    """Intersection of two merged interval lists."""
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        start = max(a[i][0], b[j][0])
        end = min(a[i][1], b[j][1])
        if end > start:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def clip(merged: Sequence[Interval], start: float, end: float) -> list[Interval]:
    return intersect(merged, [(start, end)])


def subtract(ranges: Sequence[Interval], holes: Sequence[Interval]) -> list[Interval]:
    """``ranges`` less ``holes`` (both merged)."""
    out: list[Interval] = []
    j = 0
    for start, end in ranges:
        cur = start
        while j < len(holes) and holes[j][1] <= cur:
            j += 1
        k = j
        while k < len(holes) and holes[k][0] < end:
            if holes[k][0] > cur:
                out.append((cur, holes[k][0]))
            cur = max(cur, holes[k][1])
            k += 1
        if cur < end:
            out.append((cur, end))
    return out


def overlap(ranges: Sequence[Interval], windows: Sequence[Interval]) -> float:
    """Total length of ``ranges`` inside ``windows`` (both merged)."""
    return measure(intersect(ranges, windows))
