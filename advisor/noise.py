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
side cannot move the band. Fewer rounds give wider bands (3–11 rounds: the full range).

Rounds in which an arm *stalled* — its whole segment ran at under a third of that arm's median
rate — are set aside before the band is taken (``steady_rounds``): on the project's 2-core
development VM with other work beside it, 2 to 4 of 12 cached-input segments of a 2.5 ms step
ran 10–100× slower in bursts, while the real input's segments, which mostly wait, barely moved
(seen while calibrating the band; benchmarks/RESULTS.md, "Baseline noise band
versus segment length", counts the stalled rounds of that benchmark).

This module defines the band for writers (the baseline's summary line) and readers (the facts),
so that both compute it from the per-round rates a ``baseline`` record stores.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.stats import median

COVERAGE = 0.99  # two-sided coverage the band aims at
MIN_ROUNDS = 3  # fewer paired rounds give a figure but no band
STALL_FACTOR = 3.0  # a round where an arm ran under a third of its median rate is a stall


@functools.lru_cache(maxsize=4096)
def order_rank(rounds: int) -> int:
    """The ``k`` of the band ``[x(k), x(R+1−k)]``: the narrowest with coverage ≥ COVERAGE (≥ 1).

    The binomial tail is summed term by term in exact integers (``C(R, i)`` from ``C(R, i−1)``),
    so a long series (a custom loop's thousands of epochs) costs O(k) big-integer steps, not
    O(k²) binomials, and each ``R`` is computed once per process."""
    best = 1
    total = 2**rounds
    term = 1  # C(rounds, 0)
    tail = 0  # sum of C(rounds, i) for i < k
    for k in range(1, rounds // 2 + 1):
        tail += term
        if 1.0 - 2.0 * (tail / total) >= COVERAGE:
            best = k
        else:
            break
        term = term * (rounds - k + 1) // k  # C(rounds, k)
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
    k = order_rank(n)
    return Band(value=median(data) or 0.0, low=data[k - 1], high=data[n - k], rounds=n)


def paired(
    numerators: Sequence[float | None],
    denominators: Sequence[float | None],
    combine: Callable[[float, float], float],
) -> list[float]:
    """``combine(a, b)`` for every steady round: both arms measured a positive rate and neither
    stalled (see ``steady_rounds``)."""
    rounds = [
        (a, b)
        for a, b in zip(numerators, denominators)
        if a is not None and b is not None and a > 0 and b > 0
    ]
    return [combine(a, b) for a, b in steady_rounds(rounds)]


def steady_rounds(rounds: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The rounds in which neither arm ran below 1/STALL_FACTOR of its own median rate.

    An arm's true rate is the same in every round (same input, same model), so a whole segment
    at a third of the arm's usual speed is the machine stalling (another process, memory
    reclaim), not the input; where cores are few and shared it hits CPU-bound arms, such as the
    cached one, far more than inputs that wait (as seen on the 2-core development VM). The rule
    treats both arms alike, so two identical arms stay exchangeable and the band's error rate
    holds. When fewer than MIN_ROUNDS rounds would remain, every round is kept (the band then
    shows the noise).
    """
    if len(rounds) < MIN_ROUNDS:
        return list(rounds)
    mid_a = median([a for a, _ in rounds]) or 0.0
    mid_b = median([b for _, b in rounds]) or 0.0
    steady = [(a, b) for a, b in rounds if a * STALL_FACTOR >= mid_a and b * STALL_FACTOR >= mid_b]
    return steady if len(steady) >= MIN_ROUNDS else list(rounds)


def stalled_count(numerators: Sequence[float | None], denominators: Sequence[float | None]) -> int:
    """How many measured rounds ``paired`` sets aside as stalled."""
    rounds = [
        (a, b)
        for a, b in zip(numerators, denominators)
        if a is not None and b is not None and a > 0 and b > 0
    ]
    return len(rounds) - len(steady_rounds(rounds))


def input_cost(real: float, cached: float) -> float:
    """The share of step time the input costs in one round: 1 − real ÷ cached (may be < 0)."""
    return 1.0 - real / cached


UNEXPLAINED_FACTOR = 2.0  # margin on the most the input's own CPU work can add to a step


def beyond_the_inputs_work(
    cost: float, real: float | None, data_only: float | None, cpus: Any, device: Any
) -> float | None:
    """The largest share of a CPU step the input's own work can cost, when ``cost`` is above it
    (a cost the host's noise made, not the input); else None. The input adds at most its CPU time
    for the step's samples: one over its data-only rate, on every core at once if it competes for
    all of them, with a margin of UNEXPLAINED_FACTOR (``cpus`` unknown: 64). Only on a CPU: on an
    accelerator a cached batch also skips the copy to the device, which the data-only rate does
    not see."""
    if device != "cpu" or not real or not data_only:
        return None
    cores = cpus if isinstance(cpus, int) and cpus > 0 else 64
    most = UNEXPLAINED_FACTOR * cores * real / data_only
    return most if cost > most else None


def relative_gain(faster: float, real: float) -> float:
    return faster / real - 1.0


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator
