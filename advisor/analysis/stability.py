"""Throughput stability on runs of any length: windows that adapt, and a robust spread.

Ten-second windows judge a long run well, but a 20 s run has two or three of them — too few for a
coefficient of variation. The throughput collector also records half-second *slices* inside its
first windows; when a run has fewer than ``MIN_FULL_WINDOWS`` full windows, consecutive slices
are joined into ``TARGET_WINDOWS`` windows of equal length (at least ``MIN_WINDOW_S``), so the
windows adapt to the run's length.

The spread is robust: the interdecile range over the median, scaled to read as a coefficient
of variation (``(p90 − p10) ÷ (2.563 × p50)``, which is σ ÷ μ for normal noise). One stalled
window of ten — a scheduler hiccup on a shared machine, a checkpoint — moves the 10th percentile
by a tenth of its drop; stalls are the step-outlier rule's (M150) to count. A throughput that
changes for a fifth of the run or more (an input that slows down part of the time, a second
phase) moves a decile and fails M103. (A median absolute deviation would miss a slowdown in 30 %
of the windows altogether: its median deviation is then zero.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.stats import percentile

MIN_FULL_WINDOWS = 6  # below this many full regular windows, judge stability on slices
TARGET_WINDOWS = 10  # adaptive windows a short run is cut into
MIN_WINDOW_S = 1.0  # an adaptive window is never shorter than this
MIN_WINDOWS = 5  # fewer windows than this decide nothing
DECILES_TO_SIGMA = 2.563  # p90 − p10 of a normal distribution, in σ


@dataclass(frozen=True)
class Stability:
    cv: float  # robust coefficient of variation of the windows' rates
    windows: int
    window_s: float  # mean length of the windows judged
    adaptive: bool  # windows joined from slices (a short run) rather than the recorded windows


def robust_cv(rates: Sequence[float]) -> float | None:
    """(p90 − p10) ÷ (2.563 × p50) of ``rates``; None without a positive median."""
    if not rates:
        return None
    p10, p50, p90 = (percentile(rates, q) for q in (10, 50, 90))
    if p50 <= 0:
        return None
    return (p90 - p10) / (DECILES_TO_SIGMA * p50)


def stability(
    windows: Sequence[tuple[float, float]], slices: Sequence[tuple[float, float]]
) -> Stability | None:
    """Stability from full windows (steps, seconds) or, for a short run, from its slices."""
    if len(windows) >= MIN_FULL_WINDOWS:
        return _judge(windows, adaptive=False)
    total = sum(seconds for _, seconds in slices)
    if total <= 0:
        return _judge(windows, adaptive=False) if len(windows) >= MIN_WINDOWS else None
    length = max(MIN_WINDOW_S, total / TARGET_WINDOWS)
    joined: list[tuple[float, float]] = []
    steps = seconds = 0.0
    for s_steps, s_seconds in slices:
        steps += s_steps
        seconds += s_seconds
        if seconds >= length:
            joined.append((steps, seconds))
            steps = seconds = 0.0
    if seconds >= 0.5 * length:
        joined.append((steps, seconds))
    if len(joined) < MIN_WINDOWS:
        return _judge(windows, adaptive=False) if len(windows) >= MIN_WINDOWS else None
    return _judge(joined, adaptive=True)


def _judge(windows: Sequence[tuple[float, float]], adaptive: bool) -> Stability | None:
    rates = [steps / seconds for steps, seconds in windows if seconds > 0]
    cv = robust_cv(rates)
    if cv is None or len(rates) < MIN_WINDOWS:
        return None
    return Stability(cv, len(rates), sum(s for _, s in windows) / len(windows), adaptive)
