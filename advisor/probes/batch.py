"""The size of a batch: its leading dimension and the bytes its arrays hold (any nesting)."""

from __future__ import annotations

from typing import Any


def leading_dim(batch: Any) -> int | None:
    """Size of the first axis of the first array-like leaf of a (nested) batch."""
    stack = [batch]
    while stack:
        item = stack.pop(0)
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif item is not None:
            shape = getattr(item, "shape", None)
            if shape is not None and len(shape) > 0 and shape[0] is not None:
                return int(shape[0])
    return None


def nbytes(batch: Any) -> int:
    """Bytes held by the array leaves of a (nested) batch; 0 when unknown."""
    if isinstance(batch, dict):
        return sum(nbytes(v) for v in batch.values())
    if isinstance(batch, (list, tuple)):
        return sum(nbytes(v) for v in batch)
    size = getattr(batch, "nbytes", None)
    try:
        return int(size) if size is not None else 0
    except (TypeError, ValueError):
        return 0
