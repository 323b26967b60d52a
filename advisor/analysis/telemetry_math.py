"""Pure numerics for telemetry facts: percentiles, energy, moving averages, histogram distance.

Kept apart from the fact derivation so each piece is tested against hand-computed values.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from advisor.stats import percentile  # noqa: F401 — the facts read it from here

UTIL_BINS = 10  # utilization histogram: ten bins of 10 points, 100 % in the last


def trapezoid(
    times: Sequence[float],
    values: Sequence[float],
    t0: float | None = None,
    t1: float | None = None,
) -> float:
    """∫ value dt of the piecewise-linear series over [t0, t1] ∩ [times[0], times[-1]]."""
    if len(times) < 2:
        return 0.0
    lo = times[0] if t0 is None else max(t0, times[0])
    hi = times[-1] if t1 is None else min(t1, times[-1])
    if hi <= lo:
        return 0.0
    total = 0.0
    # Only the segments that meet [lo, hi] (binary search: windows × samples stays cheap).
    first = max(0, bisect.bisect_right(times, lo) - 1)
    last = min(len(times) - 1, bisect.bisect_left(times, hi))
    for i in range(first, last):
        ta, va, tb, vb = times[i], values[i], times[i + 1], values[i + 1]
        a, b = max(ta, lo), min(tb, hi)
        if b <= a or tb <= ta:
            continue
        fa = va + (vb - va) * (a - ta) / (tb - ta)
        fb = va + (vb - va) * (b - ta) / (tb - ta)
        total += (fa + fb) / 2.0 * (b - a)
    return total


def interpolate(times: Sequence[float], values: Sequence[float], t: float) -> float:
    """The piecewise-linear series at ``t`` (clamped to its ends)."""
    if t <= times[0]:
        return values[0]
    if t >= times[-1]:
        return values[-1]
    i = bisect.bisect_right(times, t)  # times[i-1] <= t < times[i]
    ta, va, tb, vb = times[i - 1], values[i - 1], times[i], values[i]
    return va if tb == ta else va + (vb - va) * (t - ta) / (tb - ta)


def counter_usable(values: Sequence[float | None]) -> bool:
    """An energy counter series that can be trusted: complete and never going back (no reset)."""
    if len(values) < 2 or any(v is None for v in values):
        return False
    return all(b >= a for a, b in zip(values, values[1:]))  # type: ignore[operator]


class EnergySeries:
    """One GPU's energy series prepared once, so that the energy of each of many windows costs a
    binary search, not a pass over every sample (which made a long run quadratic)."""

    def __init__(
        self,
        times: Sequence[float],
        counter: Sequence[float | None],
        power: Sequence[float | None],
        counter_ok: bool | None = None,
    ) -> None:
        self.times = list(times)
        ok = counter_usable(counter) if counter_ok is None else counter_ok
        self.counter = [float(v) for v in counter] if ok else None  # type: ignore[arg-type]
        points = [(t, p) for t, p in zip(times, power) if p is not None]
        self.power_times = [t for t, _ in points]
        self.power = [p for _, p in points]

    def joules(self, t0: float | None = None, t1: float | None = None) -> tuple[float, str] | None:
        """Energy over [t0, t1] (the whole series by default) and how it was measured."""
        if len(self.times) < 2:
            return None
        if self.counter is not None:
            lo = self.times[0] if t0 is None else t0
            hi = self.times[-1] if t1 is None else t1
            used = interpolate(self.times, self.counter, hi) - interpolate(
                self.times, self.counter, lo
            )
            return max(0.0, used), "counter"
        if len(self.power_times) < 2:
            return None
        return trapezoid(self.power_times, self.power, t0, t1), "power-integration"


def moving_average(values: Sequence[float], window: int) -> list[float]:
    """Trailing moving average; one value per full window."""
    if window < 1 or len(values) < window:
        return []
    out: list[float] = []
    total = sum(values[:window])
    out.append(total / window)
    for i in range(window, len(values)):
        total += values[i] - values[i - window]
        out.append(total / window)
    return out


def growth_points(percent_series: Sequence[float], window: int = 10) -> float | None:
    """Rise of the moving average from its first to its last full window, in percentage points.

    Needs two windows' worth of samples, so a start-up spike alone does not count as growth.
    """
    if len(percent_series) < 2 * window:
        return None
    ma = moving_average(percent_series, window)
    return ma[-1] - ma[0]


def histogram(
    values: Sequence[float], bins: int = UTIL_BINS, lo: float = 0.0, hi: float = 100.0
) -> list[float]:
    """Normalised histogram over [lo, hi] with equal bins; ``hi`` itself falls in the last bin."""
    counts = [0.0] * bins
    width = (hi - lo) / bins
    for v in values:
        i = int((min(max(v, lo), hi) - lo) / width)
        counts[min(i, bins - 1)] += 1
    n = sum(counts)
    return [c / n for c in counts] if n else counts


def js_distance(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen–Shannon distance (square root of the divergence, natural log: 0..√ln2 ≈ 0.83).

    The natural log matches ``scipy.spatial.distance.jensenshannon``'s default, which the
    load-balancing threshold (0.2) was set with.
    """
    m = [(a + b) / 2.0 for a, b in zip(p, q)]

    def kl(x: Sequence[float]) -> float:
        return sum(a * math.log(a / b) for a, b in zip(x, m) if a > 0 and b > 0)

    return math.sqrt(max(0.0, (kl(p) + kl(q)) / 2.0))


def max_pairwise_js(series: Sequence[Sequence[float]]) -> float | None:
    hists = [histogram(s) for s in series if s]
    if len(hists) < 2:
        return None
    return max(js_distance(a, b) for i, a in enumerate(hists) for b in hists[i + 1 :])
