"""baseline="auto", the default: how long it measures, when it skips, and the options around it.

Pure sizing functions and option parsing (no training here; the slow tests train with it).
"""

from __future__ import annotations

import pytest

import advisor
from advisor.collectors.options import AdvisorOptions, auto_profile_window
from advisor.collectors.registry import build_collectors
from advisor.experiments.baseline.auto import (
    auto_sizing,
    explicit_sizing,
    mean_step_seconds,
    minimum_seconds,
)
from advisor.experiments.settings import (
    AUTO_BASELINE_MIN_ALLOWANCE,
    AUTO_BASELINE_SHARE,
    AUTO_BASELINE_STEPS,
    BASELINE_SECONDS,
    measurement_allowance,
)
from advisor.store.schema import WindowRecord


def test_auto_is_the_default_and_none_turns_it_off():
    assert AdvisorOptions().baseline == "auto" and AdvisorOptions().baseline_seconds is None
    names = [c.name for c in build_collectors(AdvisorOptions())]
    assert "baseline" in names
    assert (
        next(c for c in build_collectors(AdvisorOptions()) if c.name == "baseline").mode == "auto"
    )
    assert "baseline" not in [c.name for c in build_collectors(AdvisorOptions(baseline=None))]
    assert (
        AdvisorOptions(baseline=True).baseline == "auto"
    )  # True: on, the default way (as whatif=True)
    cb = advisor.AdvisorCallback()
    assert cb.options.baseline == "auto"


def _allowance(fit: float) -> float:
    return AUTO_BASELINE_SHARE * measurement_allowance(fit)


def test_two_seconds_or_two_hundred_steps_whichever_is_longer():
    # A fast step: 2 s of measuring (200 steps of 1 ms would be 0.2 s of noise).
    fast = auto_sizing(100.0, 0.001)
    assert fast.skipped is None and fast.seconds == pytest.approx(2.0)
    # A 50 ms step: 200 steps take 10 s, cut to the measured share of the allowance.
    slow = auto_sizing(100.0, 0.05)
    assert slow.seconds == pytest.approx(min(AUTO_BASELINE_STEPS * 0.05, 0.6 * _allowance(100.0)))
    assert slow.max_seconds == pytest.approx(_allowance(100.0))


def test_capped_at_a_share_of_the_fit_and_at_the_absolute_allowance():
    sizing = auto_sizing(16.0, 0.01)
    assert sizing.max_seconds == pytest.approx(_allowance(16.0))
    assert sizing.seconds <= sizing.max_seconds
    long = auto_sizing(3600.0, 0.05, max_seconds=30.0)
    assert long.max_seconds == 30.0 and long.seconds <= 30.0


@pytest.mark.parametrize("fit", [60.0, 91.0, 300.0, 3600.0])
def test_defaults_together_take_a_tenth_of_a_fit_of_a_minute_or_more(fit):
    assert measurement_allowance(fit) <= 0.1 * fit + 1e-9
    assert _allowance(fit) < measurement_allowance(fit)  # the what-if gets the rest


def test_short_fits_get_the_floor_within_their_share():
    assert measurement_allowance(25.0) == pytest.approx(6.0)
    assert measurement_allowance(10.0) == pytest.approx(3.0)


def test_a_fit_too_short_is_skipped_with_its_reason():
    shortest = AUTO_BASELINE_MIN_ALLOWANCE / AUTO_BASELINE_SHARE / 0.3  # within the short share
    short = auto_sizing(shortest * 0.9, 0.001)
    assert (
        short.skipped
        and "too short to measure" in short.skipped
        and "baseline='end'" in short.skipped
    )
    assert auto_sizing(shortest * 1.1, 0.001).skipped is None


def test_slow_steps_that_cannot_fit_three_rounds_are_skipped_before_measuring():
    """The image classifier's 3 s steps after a 91 s fit: three rounds of two arms cannot fit
    its allowance, so it does not start (it once ran one round in 31 s of an 18 s allowance)."""
    sizing = auto_sizing(91.0, 3.0)
    assert sizing.skipped and "a step takes 3.00 s" in sizing.skipped
    assert f"{minimum_seconds(3.0):.0f} s" in sizing.skipped
    assert minimum_seconds(3.0) > _allowance(91.0)
    # the same fit with 20 ms steps measures
    assert auto_sizing(91.0, 0.02).skipped is None
    assert minimum_seconds(0.02) < _allowance(91.0)


def test_the_least_measurement_grows_with_warm_up_and_steps():
    assert minimum_seconds(0.1, warm=4) > minimum_seconds(0.1, warm=1)
    assert minimum_seconds(0.1, min_steps=120) > minimum_seconds(0.1)


def test_explicit_modes_measure_what_they_are_asked():
    assert explicit_sizing(None, 30.0).seconds == BASELINE_SECONDS
    assert explicit_sizing(1.5, 30.0).seconds == 1.5


def test_step_time_from_the_measured_windows():
    def window(steps, seconds, warmup=False):
        return WindowRecord(
            t=0.0,
            epoch=0,
            seconds=seconds,
            steps=steps,
            step_begin=0,
            step_end=steps,
            warmup=warmup,
        )

    windows = [window(5, 3.0, warmup=True), window(100, 1.0), window(300, 3.0)]
    assert mean_step_seconds(windows) == pytest.approx(4.0 / 400)
    assert mean_step_seconds([window(5, 3.0, warmup=True)]) == pytest.approx(0.6)  # only warm-up
    assert mean_step_seconds([]) is None


def test_profile_steps_auto_is_a_short_window_after_the_warm_up():
    assert AdvisorOptions(profile_steps="auto").profile_steps == "auto"
    assert AdvisorOptions(profile_steps="auto").recorded()["profile_steps"] == "auto"
    start, stop = auto_profile_window(5)
    assert start > 5 and stop - start + 1 == 25
    assert auto_profile_window(5, epoch_steps=20) == (6, 30)  # as early as the warm-up allows
    start, stop = auto_profile_window(5, steps_per_execution=4)
    assert (start - 1) % 4 == 0 and start > 8  # whole executions, after the warm-up's two


def test_the_minimums_old_names_still_read_with_a_warning():
    """``*_MIN_BUDGET`` were renamed ``*_MIN_ALLOWANCE`` (an allowance, not the time budget)."""
    from advisor.experiments import settings

    with pytest.warns(DeprecationWarning, match="AUTO_BASELINE_MIN_ALLOWANCE"):
        assert settings.AUTO_BASELINE_MIN_BUDGET == AUTO_BASELINE_MIN_ALLOWANCE
    with pytest.warns(DeprecationWarning, match="NEEDED_MIN_ALLOWANCE"):
        assert settings.NEEDED_MIN_BUDGET == settings.NEEDED_MIN_ALLOWANCE


def _calibrated(left: float, step: float, start: float):
    import time

    from advisor.experiments.baseline.calibration import Calibration

    return Calibration(time.perf_counter() + left, min(start, 0.05), 8, step, start, 1.0)


def _arms(*names: str):
    from advisor.experiments.rounds import Arm

    return [Arm(name, lambda *a: None, trains=name != "data_only") for name in names]


def test_after_calibrating_only_the_arms_three_rounds_can_hold_are_kept():
    from advisor.experiments.baseline.calibration import rounds_that_fit, that_fit
    from advisor.experiments.baseline.result import InputBaseline
    from advisor.experiments.rounds import Plan

    plan = Plan(2.0, 20, 12, 6.0, 1, from_start=True)
    result = InputBaseline("numpy", 32, 0, 1)
    arms = _arms("cached", "real", "data_only")
    # a segment: 0.3 s to start, 3 steps of 0.1 s: 3 rounds of 3 arms need 5.4 s, of 2 need 3.6
    kept = that_fit(arms, _calibrated(4.0, 0.1, 0.3), plan, result)
    assert [a.name for a in kept] == ["cached", "real"] and result.stopped is None
    assert any("data-only" in note for note in result.notes)
    # not even the cached and the real input: nothing is spent, and the reason is one line
    none = InputBaseline("numpy", 32, 0, 1)
    assert that_fit(arms, _calibrated(2.0, 0.1, 0.3), plan, none) == []
    assert none.stopped and "3 rounds of 2 arms" in none.stopped and "\n" not in none.stopped
    spent = InputBaseline("numpy", 32, 0, 1)
    assert that_fit(arms, _calibrated(-0.5, 0.1, 0.3), plan, spent) == []
    assert "calibrating" in spent.stopped
    # rounds shrink to what segments of a measurable length allow, never under three
    two = arms[:2]
    assert rounds_that_fit(plan, two, _calibrated(4.0, 0.1, 0.3)).rounds == 3
    assert rounds_that_fit(plan, two, _calibrated(60.0, 0.01, 0.05)).rounds == 12


def test_rounds_whose_segments_the_allowance_cut_say_why_there_is_no_band():
    """Three rounds ran, but the allowance cut one cached segment: two pairs, no band — and the
    baseline says so in one line instead of leaving no verdict and no reason."""
    from advisor.experiments.baseline.engine import _gather
    from advisor.experiments.baseline.result import InputBaseline
    from advisor.experiments.feeds.base import Feeds
    from advisor.experiments.rounds import Outcome
    from advisor.experiments.segments import Segment

    cached, real = _arms("cached", "real")
    cached.segments = [Segment(8, 0.2), Segment(8, 0.2), None]
    real.segments = [Segment(8, 0.3), Segment(8, 0.3), Segment(8, 0.3)]
    result = InputBaseline("numpy", 32, 0, 1, budget_seconds=3.3)
    _gather(result, [cached, real], Outcome(rounds=3), Feeds("numpy", 32, {}))
    assert result.paired_rounds == 2 and result.bound_outside_band is None
    assert result.stopped == (
        "the time allowance (3.3 s) left 2 rounds that paired the cached and the real input, "
        "where a band needs 3"
    )
    whole = InputBaseline("numpy", 32, 0, 1, budget_seconds=3.3)
    cached.segments[2] = Segment(8, 0.2)
    _gather(whole, [cached, real], Outcome(rounds=3), Feeds("numpy", 32, {}))
    assert whole.paired_rounds == 3 and whole.stopped is None
