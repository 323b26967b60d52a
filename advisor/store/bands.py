"""Noise bands of repeated, paired measurements (the cached-input baseline's rounds).

The baseline measures its arms (cached input, real input, …) in interleaved rounds, so each round
gives one *paired* value, e.g. the input's cost ``1 − real ÷ cached`` of that round: drift and
load that hit the round hit both of its arms. The figure is the **median** of the paired values;
its **band** is the distribution-free confidence interval of that median from order statistics
(the sign test's interval): ``[x(k), x(R+1−k)]`` of the R sorted values, with the largest ``k``
whose coverage ``1 − 2·P(Binomial(R, ½) ≤ k−1)`` is still at least 99 %. The band is shown as
``value ± half-width``, the larger of its two sides; a cost is *outside the band* when the value
minus that half-width is still above zero.

Why this estimator: a shared machine's noise is neither normal nor symmetric (one stalled
segment is far off), and with a handful of rounds a spread estimate such as the MAD is itself
too noisy — a band built from it calls one A/A comparison in five "different". The
order-statistic interval assumes nothing about the noise's shape and its error rate is exact:
with two identical arms, a cost lands outside the band in at most ``P(Binomial(R, ½) ≤ k−1)``
of measurements — 0.3 % with the baseline's 12 rounds (k = 2) — and one stalled round on each
side cannot move the band. Fewer rounds give wider bands (3–8 rounds: the full range).

This module defines the band for writers (the baseline's summary line) and readers (the facts),
so that both compute it from the per-round rates a ``baseline`` record stores.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

COVERAGE = 0.99  # two-sided coverage the band aims at
MIN_ROUNDS = 3  # fewer paired rounds give a figure but no band


def order_rank(rounds: int) -> int:
    """The ``k`` of the band ``[x(k), x(R+1−k)]``: the narrowest with coverage ≥ COVERAGE (≥ 1)."""
    best = 1
    for k in range(1, rounds // 2 + 1):
        tail = sum(math.comb(rounds, i) for i in range(k)) / 2**rounds
        if 1.0 - 2.0 * tail >= COVERAGE:
            best = k
        else:
            break
    return best


def coverage(rounds: int) -> float:
    """The coverage of the band for ``rounds`` paired values (e.g. 0.994 for 12)."""
    k = order_rank(rounds)
    return 1.0 - 2.0 * sum(math.comb(rounds, i) for i in range(k)) / 2**rounds


@dataclass(frozen=True)
class Band:
    """A median and its order-statistic band over ``rounds`` paired values."""

    value: float
    low: float
    high: float
    rounds: int

    @property
    def half_width(self) -> float:
        """The ``±`` of ``value ± half_width``: the larger side of the band."""
        return max(self.value - self.low, self.high - self.value)

    @property
    def above_zero(self) -> bool:
        """The value is positive by more than its band (a cost that noise does not explain)."""
        return self.value - self.half_width > 0.0


def band(values: Sequence[float]) -> Band | None:
    """The band of ``values`` (one per round); None with fewer than MIN_ROUNDS values."""
    data = sorted(float(v) for v in values if v is not None and math.isfinite(v))
    if len(data) < MIN_ROUNDS:
        return None
    n = len(data)
    mid = n // 2
    median = data[mid] if n % 2 else 0.5 * (data[mid - 1] + data[mid])
    k = order_rank(n)
    return Band(value=median, low=data[k - 1], high=data[n - k], rounds=n)


def paired(numerators: Sequence[float | None], denominators: Sequence[float | None],
           combine: Callable[[float, float], float]) -> list[float]:
    """``combine(a, b)`` for every round where both arms measured a positive rate."""
    out = []
    for a, b in zip(numerators, denominators):
        if a is not None and b is not None and a > 0 and b > 0:
            out.append(combine(a, b))
    return out


def input_cost(real: float, cached: float) -> float:
    """The share of step time the input costs in one round: 1 − real ÷ cached (may be < 0)."""
    return 1.0 - real / cached


def relative_gain(faster: float, real: float) -> float:
    return faster / real - 1.0


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator


def median(values: Sequence[float]) -> float | None:
    data = sorted(float(v) for v in values if v is not None and math.isfinite(v))
    if not data:
        return None
    mid = len(data) // 2
    return data[mid] if len(data) % 2 else 0.5 * (data[mid - 1] + data[mid])
