"""The memory what-if: the model's peak memory at two or three batch sizes, a fit of peak against
batch size, and the largest batch that fits under the device's memory (the host's available
memory on a CPU), with a stated margin — checked by a short run at a batch the fit predicts.

Each batch size trains a few steps (``train_on_batch``) on the first batch repeated to that size,
from the smallest to the largest, and reads the peak: the device allocator's peak where the
backend has one (reset before each size), else the process's resident high-water mark (Linux's
``VmHWM``, reset before each size). Peaks grow with the batch (activations, gradients' temporaries,
the batch itself); the fit is a line ``peak = fixed + per_sample × batch`` by least squares. The
model's state and the global random generators are put back afterwards, and what the steps made
is collected inside ``cleanup.own_garbage``.

Entry point: :func:`measure_batch_memory`; the collector ``collectors/memory_batch.py`` decides
when it runs (after the last epoch, when ``batch_memory=True``).
"""

from __future__ import annotations

from advisor.experiments.memory.batch import (
    BatchMemory,
    MemoryPoint,
    fit_line,
    measure_batch_memory,
)

__all__ = [
    "BatchMemory",
    "MemoryPoint",
    "fit_line",
    "measure_batch_memory",
    "measure_fit_batch_memory",
]


def measure_fit_batch_memory(model: object, data: object, backend: str | None) -> BatchMemory:
    """The memory what-if on a fit's own input (``session.data``): its first batch, at its batch
    size, twice and four times it."""
    from advisor.experiments.feeds.choose import feeds_from_session

    feeds = feeds_from_session(data, backend)
    return measure_batch_memory(model, feeds.first, feeds.batch_size, backend=backend)
