"""The window arithmetic the callback's throughput collector and custom loops (``advisor.track``)
share: per-step statistics of a window's batch-end times, its stability slices, and the
periodic rate line."""

from __future__ import annotations

import logging
import math
import sys
from typing import Any

SLICE_S = 0.5  # length of the stability slices recorded inside a window

log = logging.getLogger("advisor")


def ensure_log_handler() -> None:
    """The periodic rate line goes to stderr unless the user configured logging."""
    if not log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


class WindowClock:
    """The time side of a throughput window, as the callback and custom loops both keep it: when
    it opened (``t0``), the step ends inside it (``stamps``, its opening first) and when it is
    due to close (``close_at``). Appending to ``stamps`` is the whole per-step cost."""

    __slots__ = ("length", "t0", "stamps", "close_at")

    def __init__(self, length: float) -> None:
        if not length > 0:
            raise ValueError("a window's length must be positive")
        self.length = float(length)
        self.t0 = 0.0
        self.stamps: list[float] = [-math.inf]
        self.close_at = math.inf

    def open(self, now: float) -> None:
        """A new window begins at ``now``."""
        self.t0 = now
        self.stamps = [now]
        self.close_at = now + self.length

    def steps_begin(self, now: float) -> None:
        """The window's steps begin at ``now``, later than it opened (an epoch's first step,
        after the epoch's start): its first stamp and its end move there, ``t0`` stays."""
        self.stamps[0] = now
        self.close_at = now + self.length

    def due(self, now: float) -> bool:
        return now >= self.close_at


def rate_line(
    samples_per_s: float, price_per_hour: float | None, goodput: float | None = None
) -> str:
    """The periodic log line:
    ``advisor: 1,234.5 samples/s, 4,415,000 samples/$ at $1.01/h, goodput 91%``
    (goodput: the share of the fit's wall clock so far spent in training steps)."""
    text = f"advisor: {samples_per_s:,.1f} samples/s"
    if price_per_hour:
        text += (
            f", {samples_per_s * 3600.0 / price_per_hour:,.0f} samples/$ at ${price_per_hour:.2f}/h"
        )
    if goodput is not None:
        text += f", goodput {100.0 * goodput:.0f}%"
    return text


MAX_OUTLIER_SPANS = 50  # outlier intervals kept per window, with their times


def interval_stats(
    stamps: list[float], steps_per_call: int = 1, wall_offset: float | None = None
) -> dict[str, Any]:
    """Mean, σ, max and 3σ outliers of the per-step time between consecutive batch ends; with
    ``wall_offset`` (wall clock − the stamps' clock) also each outlier's begin, length and time
    beyond the mean, so that the analysis can match them with what ran then."""
    n = len(stamps) - 1
    if n < 1:
        return {}
    intervals = [(b - a) / steps_per_call for a, b in zip(stamps, stamps[1:])]
    mean = sum(intervals) / n
    var = sum((x - mean) ** 2 for x in intervals) / n
    std = math.sqrt(var)
    limit = mean + 3 * std
    slow = [x for x in intervals if x > limit] if n >= 10 and std > 0 else []
    out: dict[str, Any] = {
        "step_count": n,
        "step_time_mean": mean,
        "step_time_std": std,
        "step_time_max": max(intervals),
        "step_outliers": len(slow),
        "step_outlier_seconds": sum(x - mean for x in slow) * steps_per_call,
    }
    if wall_offset is not None and slow:
        out["step_outlier_spans"] = [
            [
                round(stamps[i] + wall_offset, 4),
                round(x * steps_per_call, 4),
                round((x - mean) * steps_per_call, 4),
            ]
            for i, x in enumerate(intervals)
            if x > limit
        ][:MAX_OUTLIER_SPANS]
    return out


FIRST_WAIT_RATIO = 3.0  # an epoch's first step this many times the median step waited for input
FIRST_WAIT_MIN_S = 0.02  # and by at least this long
FIRST_WAIT_MIN_STEPS = 5  # steps after it to judge the usual step by


def first_step_wait(stamps: list[float]) -> float:
    """How long an epoch's first step (``stamps[0]`` to ``stamps[1]``) took beyond the median of
    the steps after it, when it stands out (``FIRST_WAIT_RATIO`` times that median and above
    their mean + 3σ): the wait for the new iterator's first batch. 0 when it does not."""
    if len(stamps) < FIRST_WAIT_MIN_STEPS + 2:
        return 0.0
    first = stamps[1] - stamps[0]
    rest = sorted(b - a for a, b in zip(stamps[1:], stamps[2:]))
    median = rest[len(rest) // 2]
    mean = sum(rest) / len(rest)
    std = math.sqrt(sum((x - mean) ** 2 for x in rest) / len(rest))
    if first < FIRST_WAIT_RATIO * median or first <= mean + 3 * std:
        return 0.0
    wait = first - median
    return wait if wait >= FIRST_WAIT_MIN_S else 0.0


def slices(stamps: list[float], steps_per_call: int) -> list[list[float]]:
    """[steps, seconds] of consecutive stretches of about SLICE_S between batch ends."""
    out: list[list[float]] = []
    begin, calls = stamps[0], 0
    for stamp in stamps[1:]:
        calls += 1
        if stamp - begin >= SLICE_S:
            out.append([calls * steps_per_call, round(stamp - begin, 6)])
            begin, calls = stamp, 0
    if calls:
        out.append([calls * steps_per_call, round(stamps[-1] - begin, 6)])
    return out
