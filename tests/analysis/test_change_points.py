"""E-divisive means with a t-test on fixed series: steps found where they are, none in noise."""

from __future__ import annotations

import random

import pytest

from advisor.analysis.change_points import change_points, energy_split, t_sf2, welch_pvalue


@pytest.mark.parametrize(
    ("t", "df", "p"),
    [(2.228, 10, 0.05), (2.5706, 5, 0.05), (12.706, 1, 0.05), (3.169, 10, 0.01), (0.0, 7, 1.0)],
)
def test_t_tail_matches_the_tables(t, df, p):
    assert t_sf2(t, df) == pytest.approx(p, abs=2e-4)


def test_welch_pvalue_separates_shifted_means_and_not_equal_ones():
    xs = [10.0, 10.5, 9.5, 10.2, 9.8]
    assert welch_pvalue(xs, [v + 5 for v in xs]) < 1e-4
    assert welch_pvalue(xs, list(reversed(xs))) == pytest.approx(1.0)


def test_energy_split_finds_a_single_step():
    series = [1.0] * 8 + [2.0] * 8
    assert energy_split(series) is not None
    assert energy_split(series)[0] == 8
    assert energy_split([1.0] * 5) is None  # too short to split


def _noisy(levels: list[tuple[float, int]], cv: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [level * (1 + rng.gauss(0, cv)) for level, n in levels for _ in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_two_steps_in_thirty_noisy_runs_are_found_at_their_runs(seed):
    series = _noisy([(100.0, 10), (75.0, 10), (55.0, 10)], 0.05, seed)
    points = change_points(series)
    assert [p.index for p in points] == [10, 20]
    first, second = points
    assert first.change_pct == pytest.approx(-25, abs=6)
    assert (first.before_n, first.after_n) == (10, 10) and (second.before_n, second.after_n) == (
        10,
        10,
    )
    assert all(p.confidence > 0.999 for p in points)


@pytest.mark.parametrize("seed", range(5))
def test_a_flat_noisy_series_has_no_change_point(seed):
    assert change_points(_noisy([(100.0, 30)], 0.10, seed)) == []


def test_a_single_outlier_is_not_a_change_point():
    series = [100.0, 101.0, 99.0, 100.5, 99.5] * 4
    series[11] = 40.0
    assert change_points(series) == []


def test_energy_split_statistic_matches_its_definition():
    values = _noisy([(10.0, 7), (14.0, 6)], 0.1, 3)
    n = len(values)

    def statistic(tau: int) -> float:
        xs, ys = values[:tau], values[tau:]
        m, k = len(xs), len(ys)
        between = sum(abs(a - b) for a in xs for b in ys) * 2 / (m * k)
        within_x = sum(abs(a - b) for a in xs for b in xs) / (m * m)
        within_y = sum(abs(a - b) for a in ys for b in ys) / (k * k)
        return m * k / n * (between - within_x - within_y)

    tau, stat = energy_split(values)
    best = max(range(3, n - 2), key=statistic)
    assert tau == best and stat == pytest.approx(statistic(best))
