"""Memory growth over epochs: the steady-state rate, its noise band, and when memory runs out.

One reading per epoch (bytes at the same point of every epoch: its end). The rate is the median
of the epoch-to-epoch differences and its band the order-statistic band of those differences
(``advisor.noise``: no assumption about the noise's shape; a few epochs give the band of their
whole range). Memory *grows* when the rate is above zero by more than its band.

What is expected to grow and then stop is left out before the rate is taken:

- the first epoch (the step is compiled, allocators and the input's buffers fill);
- growth that stopped: when the last half of the epochs does not grow (a ``cache()`` filling over
  its first pass, a shuffle buffer filling), the epochs before the plateau are left out and the
  growth is called *filling*, not a leak.

A leak is growth that goes on to the last epochs. The in-fit warning (the memory collector) and
the facts (``analysis/facts/memory.py``) both call :func:`analyse`, so the log and
``advisor check`` say the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advisor.noise import Band, band
from advisor.stats import median

MB = 1024.0 * 1024.0
PLATEAU_NOISE_MB = 2.0  # a difference this small is noise, whatever the band
MIN_STEADY_EPOCHS = 4  # readings after the first epoch: three differences give a band
MIN_LATE_DIFFS = 3  # a leak is called once the last half of the epochs has 3 differences (7 epochs)
# Growth slower than this is the fit's own per-epoch bookkeeping (Keras's History, logs, the
# advisor's readings: 8 KB an epoch measured on a flat fit), not growth, however steady it is.
MIN_GROWTH_MB = 0.25


@dataclass(frozen=True)
class Growth:
    """The steady-state growth of one per-epoch series."""

    rate_mb: float  # MB per epoch (median difference)
    band_mb: float  # the ± of the rate
    growing: bool  # the rate is above zero by more than its band, to the last epochs
    filled: bool  # it grew, then stopped (expected growth, not a leak)
    first_epoch: int  # the first epoch of the steady state (what comes before is left out)
    left_out: str  # which epochs were left out and why
    epochs: int  # epochs in the steady state


def _diffs(values: Sequence[float]) -> list[float]:
    return [(b - a) / MB for a, b in zip(values, values[1:])]


def _grows(diffs: Sequence[float]) -> Band | None:
    found = band(diffs)
    grows = found is not None and found.above_zero and found.value >= MIN_GROWTH_MB
    return found if grows else None


def analyse(
    epochs: Sequence[int], values: Sequence[float], fill_reason: str | None = None
) -> Growth | None:
    """The growth of ``values`` (bytes, one per epoch of ``epochs``, in order); None with too few
    epochs. ``fill_reason`` names what in the fit fills and stops (e.g. the input's ``cache()``)."""
    if len(values) < MIN_STEADY_EPOCHS + 1:
        return None
    epochs, values = list(epochs[1:]), [float(v) for v in values[1:]]
    left_out = [f"epoch {epochs[0] - 1} (the first: compiling, allocators and buffers fill)"]
    diffs = _diffs(values)
    whole = band(diffs)
    if whole is None:
        return None
    half = diffs[len(diffs) // 2 :]  # the growth must go on in the last half of the epochs
    late = _grows(half) if len(half) >= MIN_LATE_DIFFS else None
    start = _plateau(diffs) if late is None else 0  # grew, then stopped: left out
    filled = start > 0
    if filled:
        why = fill_reason or "growth that stopped: a buffer or cache filling once"
        span = f"epoch {epochs[0]}" if start == 1 else f"epochs {epochs[0]}–{epochs[start - 1]}"
        left_out.append(f"{span} ({why})")
    steady = diffs[start:]
    steady_band = band(steady) or whole
    return Growth(
        rate_mb=steady_band.value,
        band_mb=steady_band.half_width,
        growing=late is not None,
        filled=filled,
        first_epoch=epochs[start],
        left_out="; ".join(left_out),
        epochs=len(steady) + 1,
    )


def _plateau(diffs: Sequence[float]) -> int:
    """Index of the first difference from which the series stays within the noise of its last
    half (at most ``len - 3``, so that a steady state keeps three differences)."""
    tail = diffs[len(diffs) // 2 :]
    centre = median(tail) or 0.0
    noise = max(PLATEAU_NOISE_MB, abs(centre) + 4 * (median([abs(d - centre) for d in tail]) or 0))
    for start in range(len(diffs) - 2):
        if max(diffs[start:]) <= noise:
            return start
    return max(0, len(diffs) - 3)


@dataclass(frozen=True)
class Deadline:
    """When memory runs out at a steady rate."""

    epochs_left: float  # epochs until the headroom is gone
    hours_left: float | None  # the same in hours, when the epoch's length is known
    at_epoch: float  # the epoch at which it runs out
    before_end: bool | None  # before the fit's planned last epoch (None: the plan is unknown)


def deadline(
    rate_mb: float,
    headroom_bytes: float,
    last_epoch: int,
    epoch_seconds: float | None,
    planned_epochs: int | None,
) -> Deadline | None:
    """When ``headroom_bytes`` is used up at ``rate_mb`` per epoch, from ``last_epoch`` on."""
    if rate_mb <= 0 or headroom_bytes <= 0:
        return None
    left = headroom_bytes / MB / rate_mb
    at = last_epoch + left
    hours = left * epoch_seconds / 3600.0 if epoch_seconds else None
    before = None if not planned_epochs else at < planned_epochs - 1
    return Deadline(epochs_left=left, hours_left=hours, at_epoch=at, before_end=before)


def describe(
    growth: Growth, due: Deadline, epoch_seconds: float | None, planned: int | None
) -> str:
    """One line: the rate, its band, and when memory runs out at that rate."""
    per_hour = (
        f", {growth.rate_mb * 3600.0 / epoch_seconds / 1024.0:,.1f} GB/hour"
        if epoch_seconds
        else ""
    )
    when = f" (in {due.hours_left:,.1f} h)" if due.hours_left is not None else ""
    end = (
        f", before the fit's {planned} epochs end"
        if due.before_end
        else (f", after the fit's {planned} epochs end" if planned else "")
    )
    return (
        f"memory grows {growth.rate_mb:,.1f} ± {growth.band_mb:,.1f} MB per epoch{per_hour} "
        f"from epoch {growth.first_epoch} on; at this rate it runs out at epoch "
        f"~{due.at_epoch:,.0f}{when}{end}"
    )


def unbounded_cache(stages: Any) -> str | None:
    """An in-memory ``cache()`` of a tf.data pipeline whose first pass never ends: one placed after
    ``repeat()`` without a count (the pipeline's stages, source first, as the tf.data inspection
    lists them). It keeps every element it is given, for as long as the fit runs."""
    if not isinstance(stages, list):
        return None
    endless = False
    for stage in stages:
        if not isinstance(stage, dict):
            continue
        if stage.get("kind") == "repeat" and stage.get("count") in (-1, None):
            endless = True
        elif stage.get("kind") == "cache" and not stage.get("to_file") and endless:
            return (
                "the input's in-memory cache() after repeat(): its first pass never ends, so it "
                "keeps every element it is given (cache before repeat(), or cache to a file)"
            )
    return None


def attribute(
    between_mb: float,
    within_mb: float,
    after: Sequence[str],
    before: Sequence[str],
    loop: bool,
    hooks: Sequence[dict[str, Any]] = (),
    inner: Sequence[dict[str, Any]] = (),
    cache: str | None = None,
) -> str:
    """Where the growth happens, and who could be keeping it. ``hooks``: the memory grown across
    each callback's hooks (``{"name", "mb"}``, sampled by the goodput wrappers); one that holds at
    least half the growth is named alone. ``inner``: ``model.predict``/``evaluate`` calls made
    inside a hook (``{"where", "calls"}``). ``cache``: an input cache without a bound
    (:func:`unbounded_cache`), named when no callback holds the growth. Else: between epochs (the
    epoch hooks of callbacks that run after the advisor's) or inside them (steps, validation,
    batch hooks and the epoch-end hooks that run before the advisor's). ``loop``: a custom loop
    (advisor.track)."""
    total = between_mb + within_mb
    if loop:
        return (
            "the loop's own code: something kept across steps (a list of losses or outputs kept "
            "as tensors, a history of batches)"
        )
    calls = "; ".join(f"{c['where']} ({c['calls']}×)" for c in inner)
    top = max(hooks, key=lambda h: h.get("mb") or 0.0, default=None)
    if top is not None and total > 0 and (top.get("mb") or 0.0) >= 0.5 * total:
        mine = [c for c in inner if str(c["where"]).startswith(f"{top['name']}.")]
        also = f"; {mine[0]['where']}" if mine else ""
        return (
            f"the callback {top['name']} (the memory grew {top['mb']:.0f} MB across its hooks, "
            f"of {total:.0f} MB in all{also})"
        )
    if cache:
        return cache
    if calls:
        return (
            f"a predict or evaluate inside a callback: {calls} (each call can build and keep a "
            "function, its buffers and outputs)"
        )
    if total > 0 and between_mb >= 0.5 * total and after:
        return f"the epoch hooks of {', '.join(after)} (the memory grows between epochs)"
    if before or after:
        names = ", ".join([*before, *after])
        return (
            f"the callbacks {names} (their hooks: anything they keep, a predict or evaluate "
            "inside them), or the training step"
        )
    return "the training step or the input (no callback of the fit has epoch or batch hooks)"
