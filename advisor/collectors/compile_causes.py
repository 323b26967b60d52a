"""Why a function was traced or compiled again: its new input signature against its previous one.

A signature is a list of :class:`Leaf` (a tensor's shape and dtype, or a Python value, by its
argument path). The cause is the first difference found, in this order: a dtype, a Python value,
the partial last batch (only the leading dimension shrank below the largest batch seen), another
shape, the structure (leaves added or removed); "other" when the signatures are equal (a captured
value or the tracing context changed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Causes, as events and facts name them.
CAUSES = (
    "first",
    "new_function",
    "dtype",
    "python_value",
    "partial_batch",
    "shape",
    "structure",
    "static_argument",
    "other",
    "unknown",
)


@dataclass(frozen=True)
class Leaf:
    path: str
    kind: str  # tensor | value | other
    shape: tuple[Any, ...] | None = None
    text: str = ""  # dtype of a tensor, repr of a value

    @property
    def batch(self) -> int:
        if self.kind == "tensor" and self.shape and isinstance(self.shape[0], int):
            return self.shape[0]
        return 0


def _shape(leaf: Leaf) -> str:
    if leaf.shape is None:
        return "?"
    return "(" + ", ".join("None" if d is None else str(d) for d in leaf.shape) + ")"


def cause_of(before: list[Leaf], now: list[Leaf], largest_batch: int) -> tuple[str, str]:
    """(cause, detail) of a trace whose signature went from ``before`` to ``now``."""
    old = {leaf.path: leaf for leaf in before}
    new = {leaf.path: leaf for leaf in now}
    if set(old) != set(new):
        added = sorted(set(new) - set(old))[:3]
        removed = sorted(set(old) - set(new))[:3]
        return "structure", "; ".join(
            part
            for part in (
                "new inputs " + ", ".join(added) if added else "",
                "inputs gone " + ", ".join(removed) if removed else "",
            )
            if part
        )
    changed = [(old[p], new[p]) for p in new if old[p] != new[p]]
    if not changed:
        return "other", "same input signature (a captured value or the context changed)"
    for a, b in changed:
        if a.kind == b.kind == "tensor" and a.text != b.text:
            return "dtype", f"{b.path}: {a.text} → {b.text}"
    for a, b in changed:
        if a.kind == "value" or b.kind == "value":
            return "python_value", f"{b.path}: {a.text} → {b.text}"
    shapes = [(a, b) for a, b in changed if a.kind == b.kind == "tensor"]
    if shapes and all(_only_batch_shrank(a, b, largest_batch) for a, b in shapes):
        a, b = shapes[0]
        return "partial_batch", f"{b.path}: {_shape(a)} → {_shape(b)} (a smaller last batch)"
    if shapes:
        a, b = shapes[0]
        more = f" (and {len(shapes) - 1} more)" if len(shapes) > 1 else ""
        return "shape", f"{b.path}: {_shape(a)} → {_shape(b)}{more}"
    a, b = changed[0]
    return "other", f"{b.path}: {a.text} → {b.text}"


class PartialBatches:
    """Tells the partial last batch from a batch size that varies: per function, the first smaller
    size is the partial batch (and the same size again, next epoch, too); another smaller size
    means the batch size varies, which is a shape cause."""

    def __init__(self) -> None:
        self._sizes: dict[str, int] = {}

    def refine(self, function: str, cause: str, size: int | None) -> str:
        if cause != "partial_batch" or size is None:
            return cause
        first = self._sizes.setdefault(function, size)
        return "partial_batch" if first == size else "shape"


def _only_batch_shrank(a: Leaf, b: Leaf, largest: int) -> bool:
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape) or not a.shape:
        return False
    if a.shape[1:] != b.shape[1:]:
        return False
    return isinstance(b.shape[0], int) and 0 < b.shape[0] < largest
