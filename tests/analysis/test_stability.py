"""Throughput stability on short runs: windows joined from slices, and a spread that one stall
barely moves but a slow stretch does."""

from __future__ import annotations

import pytest

from advisor.analysis.stability import MIN_FULL_WINDOWS, robust_cv, stability


def test_the_spread_reads_as_a_coefficient_of_variation_and_ignores_one_stall():
    import numpy as np

    normal = np.random.default_rng(0).normal(100.0, 10.0, 4000)
    assert robust_cv(list(normal)) == pytest.approx(0.10, abs=0.01)
    assert robust_cv([100.0] * 9 + [10.0]) < 0.05  # one stalled window in ten
    assert (
        robust_cv([100.0] * 7 + [50.0] * 3) > 0.15
    )  # a slow stretch: 30% of the run at half speed


def test_a_short_run_is_judged_on_windows_joined_from_its_slices():
    # 20 s of half-second slices at 100 steps/s: two recorded windows are too few.
    slices = [(50.0, 0.5)] * 40
    judged = stability([(1000.0, 10.0), (1000.0, 10.0)], slices)
    assert judged is not None and judged.adaptive and judged.windows == 10
    assert judged.window_s == pytest.approx(2.0) and judged.cv == pytest.approx(0.0)
    # The second half runs at a third of the speed: the spread fails M103's 15%.
    slowed = [(50.0, 0.5)] * 20 + [(50.0, 1.5)] * 14
    assert stability([], slowed).cv > 0.3


def test_long_runs_keep_their_windows_and_too_little_decides_nothing():
    windows = [(1000.0, 10.0)] * MIN_FULL_WINDOWS
    judged = stability(windows, [(50.0, 0.5)] * 10)
    assert judged is not None and not judged.adaptive and judged.windows == MIN_FULL_WINDOWS
    assert stability([(100.0, 1.0)], [(50.0, 0.5)] * 4) is None  # 2 s: fewer than five windows
