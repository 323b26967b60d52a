"""Peak memory at several batch sizes, the line through them, and the largest batch under a
limit (see the package's docstring)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor.probes.memory import HostMemory, device_memory

MARGIN = 0.10  # the largest batch leaves this share of the limit free (fragmentation, spikes)
STEPS = 3  # training steps per batch size: the first compiles, the peak is reached by the second
CHECK_HEADROOM = 0.5  # the check needs at most this share of what is still available …
CHECK_MAX_BYTES = 1 << 30  # … and at most this much more than the measured peaks (a shared host)
CHECK_MAX_FACTOR = 2  # … at most twice the largest batch measured (its steps' time)


@dataclass(frozen=True)
class MemoryPoint:
    batch: int
    peak_bytes: int


@dataclass
class BatchMemory:
    """What the memory what-if measured and predicts."""

    where: str  # "device" or "host": whose peak was measured
    points: list[MemoryPoint] = field(default_factory=list)
    fixed_bytes: float | None = None  # the line's intercept
    per_sample_bytes: float | None = None  # its slope
    limit_bytes: int | None = None  # the device's memory, or what the process could reach
    margin: float = MARGIN
    largest_batch: int | None = None  # under limit × (1 − margin)
    check_batch: int | None = None
    check_predicted_bytes: float | None = None
    check_measured_bytes: int | None = None
    error: str | None = None

    def predict(self, batch: int) -> float | None:
        if self.fixed_bytes is None or self.per_sample_bytes is None:
            return None
        return self.fixed_bytes + self.per_sample_bytes * batch


def resize_batch(batch: Any, size: int) -> Any:
    """The batch's rows repeated (or cut) to ``size`` rows, in every array of its structure."""
    import numpy as np

    if isinstance(batch, dict):
        return {k: resize_batch(v, size) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(resize_batch(v, size) for v in batch)
    if batch is None:
        return None
    array = np.asarray(batch)
    if array.ndim == 0:
        return array
    reps = math.ceil(size / max(1, array.shape[0]))
    return np.concatenate([array] * reps, axis=0)[:size]


def fit_line(points: Sequence[MemoryPoint]) -> tuple[float, float] | None:
    """(intercept, slope) of the least-squares line of peak against batch; None if degenerate."""
    n = len(points)
    if n < 2:
        return None
    mean_b = sum(p.batch for p in points) / n
    mean_m = sum(p.peak_bytes for p in points) / n
    var = sum((p.batch - mean_b) ** 2 for p in points)
    if var <= 0:
        return None
    slope = sum((p.batch - mean_b) * (p.peak_bytes - mean_m) for p in points) / var
    return mean_m - slope * mean_b, slope


class Peaks:
    """Resets and reads the peak of the device (when the backend has counters) or the host."""

    def __init__(self, backend: str | None, host: HostMemory) -> None:
        self.backend, self.host = backend, host
        self.where = "device" if device_memory(backend, reset=False) else "host"

    def reset(self) -> None:
        if self.where == "device":
            device_memory(self.backend, reset=True)
        else:
            self.host.release_free()
            self.host.reset_peak()

    def read(self) -> int | None:
        if self.where == "device":
            return max((d["peak"] for d in device_memory(self.backend, reset=False)), default=None)
        return self.host.peak()

    def limit(self) -> int | None:
        if self.where == "device":
            totals = [d.get("total") for d in device_memory(self.backend, reset=False)]
            return min((t for t in totals if t), default=None)
        available = self.host.available()
        return None if available is None else self.host.rss() + available


def peak_at(model: Any, batch: Any, size: int, peaks: Peaks, steps: int) -> int | None:
    data = resize_batch(batch, size)
    x, y = (
        (data[0], data[1] if len(data) > 1 else None) if isinstance(data, tuple) else (data, None)
    )
    peaks.reset()
    for _ in range(steps):
        model.train_on_batch(x, y)
    peak = peaks.read()
    del data, x, y
    return peak


def measure_batch_memory(
    model: Any,
    first_batch: Any,
    batch_size: int,
    *,
    backend: str | None = None,
    sizes: Sequence[int] | None = None,
    steps: int = STEPS,
    limit_bytes: int | None = None,
    margin: float = MARGIN,
    check: bool = True,
    host: HostMemory | None = None,
) -> BatchMemory:
    """Peaks at ``sizes`` (default: the batch, twice and four times it), the line through them,
    the largest batch under ``limit_bytes`` (default: the device's memory, or what the process can
    reach on the host) less ``margin``, and a check at a predicted batch. The model's training
    state and the global random generators are restored, whatever happens."""
    from advisor.experiments.cleanup import own_garbage
    from advisor.experiments.model_state import ModelState, ensure_built
    from advisor.experiments.random_state import GlobalRandomState

    peaks = Peaks(backend, host or HostMemory())
    result = BatchMemory(where=peaks.where, margin=margin)
    if peaks.where == "host" and not peaks.host.peak_resets:
        result.error = "this platform keeps no resettable peak of the process's memory"
        return result
    sizes = sorted(set(sizes or (batch_size, 2 * batch_size, 4 * batch_size)))
    with own_garbage():
        ensure_built(model, first_batch)
        state, randomness = ModelState(model), GlobalRandomState()
        try:
            for size in sizes:
                peak = peak_at(model, first_batch, size, peaks, steps)
                if peak is not None:
                    result.points.append(MemoryPoint(size, int(peak)))
            _predict(result, limit_bytes or peaks.limit())
            if check and result.largest_batch:
                _check(model, first_batch, result, peaks, steps)
        finally:
            state.restore()
            randomness.restore()
    return result


def _predict(result: BatchMemory, limit: int | None) -> None:
    line = fit_line(result.points)
    if line is None:
        result.error = "fewer than two batch sizes were measured"
        return
    result.fixed_bytes, result.per_sample_bytes = line
    result.limit_bytes = limit
    if result.per_sample_bytes <= 0:
        result.error = "the peaks did not grow with the batch (memory freed earlier was reused)"
        return
    if limit and result.per_sample_bytes > 0:
        room = limit * (1.0 - result.margin) - result.fixed_bytes
        result.largest_batch = max(0, int(room // result.per_sample_bytes))


def _check(model: Any, batch: Any, result: BatchMemory, peaks: Peaks, steps: int) -> None:
    """A run at the predicted largest batch when its memory is safely available here; else at the
    largest batch whose predicted peak needs at most CHECK_HEADROOM of what is left and at most
    CHECK_MAX_BYTES more than the largest peak measured, and at most CHECK_MAX_FACTOR times the
    largest batch measured."""
    largest = max(p.batch for p in result.points)
    now = peaks.read() or 0
    free = (result.limit_bytes or 0) - now
    per_sample = result.per_sample_bytes or 0.0
    extra = min(CHECK_HEADROOM * free, CHECK_MAX_BYTES)
    affordable = largest + int(extra / per_sample) if per_sample > 0 else largest
    target = min(result.largest_batch or 0, affordable, CHECK_MAX_FACTOR * largest)
    if target <= largest:
        return
    result.check_batch = target
    result.check_predicted_bytes = result.predict(target)
    measured = peak_at(model, batch, target, peaks, steps)
    result.check_measured_bytes = int(measured) if measured is not None else None
