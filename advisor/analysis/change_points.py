"""Change points in a noisy performance series: E-divisive means, confirmed by a t-test.

The method is the one MongoDB's Hunter (now Apache Otava) uses on benchmark histories, after
Matteson and James' E-divisive: in a segment of the series, the split that maximises the energy
distance between the values before and after it (``τ(n−τ)/n · ê``, with α = 1: means and spread
both count, and no distribution is assumed) is the candidate; it is kept when Welch's t-test
between the two sides gives a p-value below ``max_pvalue``, and the search recurses into both
sides. Hunter replaced the original permutation test by the t-test: it is deterministic, fast,
and on performance series (a few steps between long flat stretches) it finds the same points.

Each change point says where it is (the index of the first value after it), the means on either
side, its size in percent, its confidence (1 − p) and how many values lie on either side within
its segment. Pure and deterministic: the same series gives the same points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MAX_PVALUE = 0.001
MIN_SIZE = 3  # values on either side of a change point, at least


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first value after the change
    before_mean: float
    after_mean: float
    pvalue: float
    before_n: int  # values between the previous change point (or the start) and this one
    after_n: int

    @property
    def change_pct(self) -> float | None:
        if self.before_mean == 0:
            return None
        return (self.after_mean - self.before_mean) / abs(self.before_mean) * 100.0

    @property
    def confidence(self) -> float:
        return 1.0 - self.pvalue


def energy_split(values: Sequence[float], min_size: int = MIN_SIZE) -> tuple[int, float] | None:
    """The split τ (values[:τ] | values[τ:]) with the largest E-divisive statistic, and that
    statistic; None when the segment is too short to split. O(n²): the sums of distances within
    the left side, within the right side and between them are updated as τ moves."""
    n = len(values)
    if n < 2 * min_size:
        return None
    dist = [[abs(a - b) for b in values] for a in values]
    total = sum(sum(row) for row in dist) / 2.0
    left = sum(dist[i][j] for i in range(min_size) for j in range(i + 1, min_size))
    right = sum(dist[i][j] for i in range(min_size, n) for j in range(i + 1, n))
    best: tuple[int, float] | None = None
    for tau in range(min_size, n - min_size + 1):
        m, k = tau, n - tau
        between = total - left - right
        stat = (m * k / n) * (
            between * 2.0 / (m * k) - left * 2.0 / (m * m) - right * 2.0 / (k * k)
        )
        if best is None or stat > best[1]:
            best = (tau, stat)
        row = dist[tau]  # value tau moves from the right side to the left
        left += sum(row[:tau])
        right -= sum(row[tau + 1 :])
    return best


def welch_pvalue(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Two-sided p-value of Welch's t-test that ``xs`` and ``ys`` have the same mean."""
    m, n = len(xs), len(ys)
    mx, my = sum(xs) / m, sum(ys) / n
    vx = sum((v - mx) ** 2 for v in xs) / (m - 1)
    vy = sum((v - my) ** 2 for v in ys) / (n - 1)
    se2 = vx / m + vy / n
    if se2 <= 0:
        return 0.0 if mx != my else 1.0
    t = abs(mx - my) / math.sqrt(se2)
    df = se2**2 / ((vx / m) ** 2 / (m - 1) + (vy / n) ** 2 / (n - 1))
    return t_sf2(t, df)


def t_sf2(t: float, df: float) -> float:
    """P(|T| ≥ t) for Student's t with ``df`` degrees of freedom (the regularised incomplete beta
    function ``I_{df/(df+t²)}(df/2, ½)``)."""
    return _betainc(df / 2.0, 0.5, df / (df + t * t))


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function by its continued fraction (Lentz)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for i in range(1, 300):
        for num in (
            i * (b - i) * x / ((a + 2 * i - 1) * (a + 2 * i)),
            -(a + i) * (a + b + i) * x / ((a + 2 * i) * (a + 2 * i + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-12:
            break
    return front * h / a


def change_points(
    values: Sequence[float], max_pvalue: float = MAX_PVALUE, min_size: int = MIN_SIZE
) -> list[ChangePoint]:
    """The change points of ``values``, in order of position."""
    found: list[int] = []
    _split(list(values), 0, len(values), max_pvalue, min_size, found)
    found.sort()
    bounds = [0, *found, len(values)]
    points = []
    for i, index in enumerate(found, start=1):
        before, after = values[bounds[i - 1] : index], values[index : bounds[i + 1]]
        points.append(
            ChangePoint(
                index=index,
                before_mean=sum(before) / len(before),
                after_mean=sum(after) / len(after),
                pvalue=welch_pvalue(before, after),
                before_n=len(before),
                after_n=len(after),
            )
        )
    return points


def _split(
    values: list[float], start: int, end: int, max_pvalue: float, min_size: int, found: list[int]
) -> None:
    segment = values[start:end]
    best = energy_split(segment, min_size)
    if best is None or best[1] <= 0:
        return
    tau = best[0]
    if welch_pvalue(segment[:tau], segment[tau:]) >= max_pvalue:
        return
    found.append(start + tau)
    _split(values, start, start + tau, max_pvalue, min_size, found)
    _split(values, start + tau, end, max_pvalue, min_size, found)
