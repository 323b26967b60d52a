"""What every input feed shares: the Feeds record, its error, and small batch helpers.

Used by :mod:`advisor.collectors.input_feeds` (arrays, generators, PyDataset, torch),
:mod:`advisor.collectors.tfdata_feeds` and the baseline's rounds; imports none of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.collectors.baseline_rounds import Segment

INFINITE = -1
UNKNOWN = -2
MAX_SLICE_BYTES = 256 * 2**20  # a real feed sliced from arrays copies at most this much

DataOnly = Callable[[int, float, int, float], "Segment | None"]


class InputError(AdvisorError):
    """The training input cannot be measured: empty, failing, infinite without steps, unreadable."""


def one_line(exc: BaseException) -> str:
    """``TypeName: first line of the message``, without TF's op-trace decorations."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    first = first.split(" [[")[0].split("\tEncountered when")[0]
    first = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", first)
    first = re.sub(r"\s*\[Op:[^\]]*\].*$", "", first)
    first = re.sub(r" with iterator: \S+:", ":", first).strip()
    return f"{type(exc).__name__}: {first[:300]}" if first else type(exc).__name__


@dataclass
class Feeds:
    """What the baseline can train on and iterate, for one input."""

    kind: str
    batch_size: int
    cached: dict[str, Any]  # fit kwargs: the first batch repeated from memory (endless)
    real: dict[str, Any] | None = None  # fit kwargs: the real input
    real_batches: int | None = None  # batches in one pass of a finite real feed (None: endless)
    data_only: DataOnly | None = None  # (warm, seconds, min batches, deadline) → a timed segment
    source_cached: Callable[[int], dict[str, Any] | None] | None = None  # (batches) → kwargs; pre-reads
    notes: list[str] = field(default_factory=list)
    first: Any = None  # the first batch (builds an unbuilt model before the state snapshot)
    resize: Callable[[int], None] | None = None  # size a sliced real feed to hold this many batches

    def batch_bytes(self) -> int:
        """Bytes of the first batch (0 when unknown): bounds what a resized feed may copy."""
        return nbytes(self.first)


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
