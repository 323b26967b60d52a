"""The shift between two samples of one figure, and how far to trust it.

Two runs give two samples of a figure: samples/s per steady window, milliseconds per step of a
part of the fit per epoch. The change between the runs is the **Hodges–Lehmann shift**, the
median of all pairwise differences ``y − x``, and its interval is the **Mann–Whitney confidence
interval**: the order statistics ``d(k)`` and ``d(N+1−k)`` of those ``N = m·n`` differences, with
``k`` from the rank-sum statistic's normal approximation.

Why this estimator and not a t-interval or a bootstrap: on a shared machine a window sometimes
stalls (10–100× slower for a moment) and window rates are not normal. A mean, and so a
t-interval, moves with one stalled window; the rank interval does not, and it assumes nothing
about the noise's shape beyond the two samples being of the same shape. A bootstrap over 5–10
windows undercovers (its percentile interval is too narrow at that size) and is random; this
interval is exact order statistics and deterministic. Rates are compared as logarithms, so the
shift is a ratio and a change reads as a percentage of the baseline; times per step are compared
as they are (a part that cost nothing on the baseline has no ratio).

Windows of one run are not independent draws (load comes in bursts), so the interval holds the
within-run noise only; the comparison (``advisor.analysis.comparison``) sets the host's
contention beside it for the noise between runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

CONFIDENCE = 0.95
MIN_OBSERVATIONS = 3  # fewer on either side: no interval (a 95 % rank interval needs m·n ≥ 9)


@dataclass(frozen=True)
class Shift:
    """``current − baseline`` on the scale compared (log for rates), with its interval."""

    estimate: float
    low: float
    high: float
    baseline_n: int
    current_n: int

    @property
    def half_width(self) -> float:
        return 0.5 * (self.high - self.low)

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def rank_k(m: int, n: int, confidence: float = CONFIDENCE) -> int:
    """The 1-based order statistic of the m·n differences that bounds the interval (0: none)."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    sd = math.sqrt(m * n * (m + n + 1) / 12.0)
    k = math.floor(m * n / 2.0 - z * sd)
    return max(0, k)


def shift(
    baseline: Sequence[float], current: Sequence[float], confidence: float = CONFIDENCE
) -> Shift | None:
    """The Hodges–Lehmann shift ``current − baseline`` and its Mann–Whitney interval; None when
    either side has fewer than ``MIN_OBSERVATIONS`` values (too few for an interval)."""
    xs = [float(v) for v in baseline if math.isfinite(v)]
    ys = [float(v) for v in current if math.isfinite(v)]
    m, n = len(xs), len(ys)
    if m < MIN_OBSERVATIONS or n < MIN_OBSERVATIONS:
        return None
    diffs = sorted(y - x for x in xs for y in ys)
    k = rank_k(m, n, confidence)
    if k < 1:
        return None
    mid = len(diffs) // 2
    estimate = diffs[mid] if len(diffs) % 2 else 0.5 * (diffs[mid - 1] + diffs[mid])
    return Shift(estimate, diffs[k - 1], diffs[len(diffs) - k], m, n)


def log_shift(baseline: Sequence[float], current: Sequence[float]) -> Shift | None:
    """:func:`shift` of the logarithms of positive values (a ratio); None as there."""
    xs = [math.log(v) for v in baseline if v > 0 and math.isfinite(v)]
    ys = [math.log(v) for v in current if v > 0 and math.isfinite(v)]
    return shift(xs, ys)


def as_percent(log_ratio: float) -> float:
    """A difference of logarithms as a percentage change (0.1 → +10.5 %)."""
    return (math.exp(log_ratio) - 1.0) * 100.0
