"""The noise band of paired rounds (advisor.noise): order statistics, exact error rates."""

from __future__ import annotations

import random

import pytest

from advisor import noise


def test_rank_and_coverage_follow_the_binomial():
    # k = 1 (the full range) up to 11 rounds; 12 rounds drop one value on each side.
    assert [noise.order_rank(r) for r in (3, 5, 8, 11, 12, 15, 18)] == [1, 1, 1, 1, 2, 3, 4]
    assert noise.coverage(12) == pytest.approx(1 - 2 * (1 + 12) / 4096)
    assert all(noise.coverage(r) >= noise.COVERAGE for r in range(8, 30))


def test_band_of_known_values():
    values = [0.30, 0.31, 0.29, 0.32, 0.28, 0.30, 0.31, 0.33, 0.27, 0.30, 0.29, 0.31]
    band = noise.band(values)
    assert band is not None and band.rounds == 12
    assert band.value == pytest.approx(0.30)
    assert (band.low, band.high) == (0.28, 0.32)  # the 2nd smallest and the 2nd largest
    assert band.half_width == pytest.approx(0.02) and band.above_zero is True


def test_one_stalled_round_on_each_side_does_not_move_the_band():
    steady = [0.30, 0.31, 0.29, 0.32, 0.28, 0.30, 0.31, 0.33, 0.27, 0.30]
    clean = noise.band([*steady, 0.30, 0.31])
    stalled = noise.band([*steady, -3.0, 0.99])  # a stalled cached segment, a stalled real one
    assert clean is not None and stalled is not None
    assert stalled.value == pytest.approx(clean.value, abs=0.005)
    assert stalled.half_width < 0.05 and stalled.above_zero is True


def test_rounds_where_an_arm_stalled_are_set_aside():
    # Four of twelve cached segments crawled at 1–20 % of their usual speed (a busy host), the real
    # input (which mostly waits) did not: a 97 % cost that the stalls would have hidden.
    cached = [
        28000.0,
        313.0,
        29000.0,
        398.0,
        29400.0,
        22000.0,
        4973.0,
        28800.0,
        29500.0,
        758.0,
        24600.0,
        22000.0,
    ]
    real = [820.0, 800.0, 830.0, 790.0, 815.0, 805.0, 810.0, 825.0, 800.0, 812.0, 818.0, 808.0]
    assert noise.stalled_count(real, cached) == 4
    costs = noise.paired(real, cached, noise.input_cost)
    band = noise.band(costs)
    assert band is not None and band.rounds == 8 and band.above_zero and band.value > 0.95
    # Every arm slow in more than half of the rounds is no stall: all rounds count.
    assert noise.stalled_count([1.0] * 6, [1.0, 1.0, 0.1, 0.1, 0.1, 0.1]) == 0


def test_a_cost_inside_its_band_is_not_above_zero():
    band = noise.band([0.05, -0.04, 0.12, -0.02, 0.01, 0.30, -0.10, 0.02, 0.00, 0.03, -0.01, 0.04])
    assert band is not None and band.value > 0 and band.above_zero is False


def test_too_few_rounds_give_no_band():
    assert noise.band([0.5, 0.6]) is None
    assert noise.band([0.5, float("nan"), 0.6]) is None
    assert noise.band([0.5, 0.6, 0.7]) is not None


def test_paired_values_skip_rounds_where_an_arm_measured_nothing():
    real, cached = [50.0, None, 40.0, 0.0], [100.0, 100.0, None, 100.0]
    assert noise.paired(real, cached, noise.input_cost) == [0.5]
    assert noise.relative_gain(150.0, 100.0) == pytest.approx(0.5)


@pytest.mark.parametrize("shape", ["normal", "heavy-tailed", "skewed stalls"])
def test_identical_arms_are_outside_the_band_no_more_often_than_the_binomial_bound(shape):
    """A/A: both arms the same, the rounds' costs are pure noise. Whatever its shape, as long as
    the noise is symmetric between arms, "outside" happens at most P(Bin(12, ½) ≤ 1) = 0.32 %."""
    rng = random.Random(13)  # a fixed seed: the test is deterministic

    def segment() -> float:
        if shape == "normal":
            return 1.0 + rng.gauss(0.0, 0.05)
        if shape == "heavy-tailed":
            return 1.0 + 0.05 * rng.gauss(0.0, 1.0) / max(
                abs(rng.gauss(0.0, 1.0)), 0.05
            )  # Cauchy-like
        return 1.0 / (
            1.0 + (rng.expovariate(1.0) if rng.random() < 0.2 else 0.0)
        )  # a stall now and then

    trials, outside = 20000, 0
    for _ in range(trials):
        costs = noise.paired(
            [segment() for _ in range(12)], [segment() for _ in range(12)], noise.input_cost
        )
        band = noise.band(costs)
        assert band is not None
        outside += band.above_zero
    bound = (1 + 12) / 2**12
    # 20,000 trials: the count's standard deviation at the bound is ~8, so 2× leaves > 7 σ.
    assert outside / trials <= 2 * bound
