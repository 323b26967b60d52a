"""What every input feed shares: the Feeds record and its error (batch helpers: ``probes.batch``).

Used by :mod:`advisor.experiments.feeds.python` (arrays, generators, PyDataset, torch),
:mod:`advisor.experiments.feeds.tfdata` and the baseline's rounds; imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError
from advisor.probes.batch import nbytes

if TYPE_CHECKING:
    from advisor.experiments.segments import Segment

INFINITE = -1
UNKNOWN = -2
MAX_SLICE_BYTES = 256 * 2**20  # a real feed sliced from arrays copies at most this much

DataOnly = Callable[[int, float, int, float], "Segment | None"]


class InputError(AdvisorError):
    """The training input cannot be measured: empty, failing, infinite without steps, unreadable."""


@dataclass
class Feeds:
    """What the baseline can train on and iterate, for one input."""

    kind: str
    batch_size: int
    cached: dict[str, Any]  # fit kwargs: the first batch repeated from memory (endless)
    real: dict[str, Any] | None = None  # fit kwargs: the real input
    real_batches: int | None = None  # batches in one pass of a finite real feed (None: endless)
    data_only: DataOnly | None = None  # (warm, seconds, min batches, deadline) → a timed segment
    source_cached: Callable[[int], dict[str, Any] | None] | None = (
        None  # (batches) → kwargs; pre-reads
    )
    notes: list[str] = field(default_factory=list)
    first: Any = None  # the first batch (builds an unbuilt model before the state snapshot)
    resize: Callable[[int], None] | None = None  # size a sliced real feed to hold this many batches

    def batch_bytes(self) -> int:
        """Bytes of the first batch (0 when unknown): bounds what a resized feed may copy."""
        return nbytes(self.first)
