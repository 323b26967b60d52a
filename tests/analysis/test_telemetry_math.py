"""Telemetry numerics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from advisor.analysis.telemetry_math import (
    EnergySeries,
    counter_usable,
    growth_points,
    histogram,
    js_distance,
    max_pairwise_js,
    moving_average,
    percentile,
    trapezoid,
)


def test_percentiles_interpolate_like_numpy() -> None:
    values = [10, 20, 30, 40, 50]
    assert percentile(values, 50) == 30
    assert percentile(values, 5) == pytest.approx(12.0)  # pos 0.2 between 10 and 20
    assert percentile(values, 95) == pytest.approx(48.0)  # pos 3.8 between 40 and 50
    assert percentile([7], 95) == 7
    with pytest.raises(ValueError):
        percentile([], 50)


def test_trapezoid_power_integration_by_hand() -> None:
    # 100 W for 2 s, then a ramp 100 → 300 W over 2 s: 200 + 400 = 600 J.
    times, power = [0.0, 1.0, 2.0, 4.0], [100.0, 100.0, 100.0, 300.0]
    assert trapezoid(times, power) == pytest.approx(600.0)
    # Only [1, 3]: 100 J, then 1 s of the ramp from 100 to 200 W = 150 J.
    assert trapezoid(times, power, 1.0, 3.0) == pytest.approx(250.0)
    assert trapezoid(times, power, 10.0, 20.0) == 0.0
    assert trapezoid([0.0], [5.0]) == 0.0


def test_energy_prefers_the_counter_and_falls_back_to_power() -> None:
    times = [0.0, 1.0, 2.0]
    counter = [1000.0, 1250.0, 1600.0]  # joules since driver load
    power = [999.0, 999.0, 999.0]  # ignored while the counter is usable
    assert EnergySeries(times, counter, power).joules() == (pytest.approx(600.0), "counter")
    # Interpolated counter over [0.5, 1.5]: 1125 → 1425.
    assert EnergySeries(times, counter, power).joules(0.5, 1.5) == (pytest.approx(300.0), "counter")
    # A missing reading or a reset (driver reload) makes the counter unusable: power × Δt instead.
    assert EnergySeries(times, [1000.0, None, 1600.0], [100.0, 200.0, 300.0]).joules() == (
        pytest.approx(400.0),
        "power-integration",
    )
    assert EnergySeries(times, [1000.0, 10.0, 20.0], [100.0, 100.0, 100.0]).joules() == (
        pytest.approx(200.0),
        "power-integration",
    )
    assert EnergySeries(times, [None] * 3, [None] * 3).joules() is None
    assert not counter_usable([5.0])


def test_memory_growth_uses_a_moving_average() -> None:
    assert moving_average([1, 2, 3, 4], 2) == [1.5, 2.5, 3.5]
    flat = [50.0] * 25
    assert growth_points(flat, 10) == 0.0
    rising = [50.0] * 10 + [60.0] * 10  # first window mean 50, last 60
    assert growth_points(rising, 10) == pytest.approx(10.0)
    assert growth_points([50.0] * 19, 10) is None  # fewer than two windows: no verdict


def test_jensen_shannon_distance_by_hand() -> None:
    assert histogram([0, 5, 95, 100]) == [0.5] + [0.0] * 8 + [0.5]
    same = histogram([50.0] * 10)
    assert js_distance(same, same) == 0.0
    # Disjoint histograms: divergence ln 2, distance √ln2.
    assert js_distance([1.0, 0.0], [0.0, 1.0]) == pytest.approx(math.sqrt(math.log(2)))
    # p = (1, 0), q = (½, ½): m = (¾, ¼); JS = ½[ln(4/3)] + ½[½ ln(2/3) + ½ ln 2].
    expected = 0.5 * math.log(4 / 3) + 0.5 * (0.5 * math.log(2 / 3) + 0.5 * math.log(2))
    assert js_distance([1.0, 0.0], [0.5, 0.5]) == pytest.approx(math.sqrt(expected))
    busy, idle = [95.0] * 20, [5.0] * 20
    assert max_pairwise_js([busy, busy, idle]) == pytest.approx(math.sqrt(math.log(2)))
    assert max_pairwise_js([busy]) is None
