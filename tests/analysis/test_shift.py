"""The Hodges–Lehmann shift and its Mann–Whitney interval, on fixed data."""

from __future__ import annotations

import math

import pytest

from advisor.analysis.shift import as_percent, log_shift, rank_k, shift


def test_rank_k_matches_the_tables_where_the_approximation_is_exact():
    assert rank_k(5, 5) == 3  # the exact 95 % table: U = 2, so d(3) and d(23)
    assert rank_k(2, 2) == 0  # no 95 % interval from four differences
    assert rank_k(10, 10) == 24  # exact table: U = 23


def test_shift_of_a_constant_offset_is_that_offset_and_its_interval_holds_it():
    base = [10.0, 11.0, 9.5, 10.5, 10.2, 9.8]
    found = shift(base, [v + 2.0 for v in base])
    assert found is not None
    assert found.estimate == pytest.approx(2.0)
    assert found.low <= 2.0 <= found.high and found.excludes_zero


def test_identical_samples_give_a_shift_of_zero_within_noise():
    base = [10.0, 11.0, 9.5, 10.5, 10.2, 9.8]
    found = shift(base, list(reversed(base)))
    assert found is not None and found.estimate == 0.0 and not found.excludes_zero


def test_one_stalled_observation_does_not_move_the_interval_much():
    base = [10.0, 10.1, 9.9, 10.2, 9.8, 10.0, 10.1, 9.9]
    stalled = [10.0, 10.1, 9.9, 10.2, 9.8, 10.0, 10.1, 100.0]  # one window 10x slower
    found = shift(base, stalled)
    assert found is not None
    assert found.estimate == pytest.approx(0.05, abs=0.1) and not found.excludes_zero


def test_too_few_observations_give_no_interval():
    assert shift([1.0, 2.0], [1.0, 2.0, 3.0]) is None
    assert shift([1.0, 2.0, float("nan")], [1.0, 2.0, 3.0]) is None


def test_log_shift_reads_as_a_percentage_of_the_baseline():
    base = [100.0, 102.0, 98.0, 101.0, 99.0]
    found = log_shift(base, [v * 0.8 for v in base])
    assert found is not None
    assert as_percent(found.estimate) == pytest.approx(-20.0)
    assert as_percent(math.log(1.1)) == pytest.approx(10.0)
