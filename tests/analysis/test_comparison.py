"""The comparison's verdicts on observations given outright (no run needed): a part to blame,
contention, a pair that cannot tell, faster and unchanged runs."""

from __future__ import annotations

import pytest

from advisor.analysis.comparison import compare_runs
from advisor.analysis.comparison_samples import RunSamples

SPREAD = [1.0, 0.97, 1.03, 0.99, 1.02, 0.98, 1.01, 1.0]
HOOK = "part.callback.Logger.on_train_batch_end"


def samples(
    run_id: str, rate: float = 6400.0, steps_ms: float = 10.0, hook_ms: float = 0.1, spread=SPREAD
) -> RunSamples:
    return RunSamples(
        run_id,
        rates=[rate * s for s in spread],
        parts={
            "part.train_steps": [steps_ms * s for s in spread[:6]],
            HOOK: [hook_ms * s for s in reversed(spread[:6])],
        },
        labels={HOOK: "Logger.on_train_batch_end", "part.train_steps": "the steps themselves"},
        wall_ms_per_step=[(steps_ms + hook_ms) * s for s in spread[:6]],
        whole={"part.startup": 0.5},
    )


def facts(others: float) -> dict:
    return {"host.others_cpu_fraction": others}


def test_a_slower_callback_is_named_with_its_hook_and_the_steps_unchanged():
    c = compare_runs(samples("a"), samples("b", rate=5800.0, hook_ms=1.2), 5.0)
    assert c.verdict == "regression" and c.failed
    (blamed,) = c.regressed_parts()
    assert blamed.key == HOOK and blamed.verdict == "slower"
    assert blamed.step_share_pct == pytest.approx(11.0, abs=0.5)
    assert c.summary.startswith(
        "`on_train_batch_end` of `Logger` +1.09 ms/step (+1100%), outside noise"
    )
    assert "the steps themselves unchanged" in c.summary


def test_a_part_slower_beyond_noise_but_below_the_size_that_matters_passes():
    c = compare_runs(samples("a"), samples("b", hook_ms=0.3), 5.0)
    hook = next(p for p in c.parts if p.key == HOOK)
    assert hook.verdict == "slower" and not hook.regressed and not c.failed


def test_slower_steps_on_a_host_shared_alike_fail_and_say_the_steps():
    c = compare_runs(
        samples("a"), samples("b", rate=5000.0, steps_ms=13.0), 5.0, facts(0.05), facts(0.07)
    )
    assert c.verdict == "regression" and c.failed
    assert "the steps themselves +2.98 ms/step (slower)" in c.summary


def test_slower_steps_on_a_host_shared_differently_are_contention_not_a_failure():
    c = compare_runs(
        samples("a"), samples("b", rate=5000.0, steps_ms=13.0), 5.0, facts(0.05), facts(0.40)
    )
    assert c.verdict == "contention" and not c.failed
    assert c.contention is not None and c.contention.differs
    assert "40%" in c.summary and "5%" in c.summary


def test_a_noisy_pair_that_cannot_rule_out_the_size_that_matters_is_not_judgeable():
    wild = [1.0, 0.6, 1.4, 0.8, 1.2, 0.7, 1.3, 1.0]
    c = compare_runs(samples("a", spread=wild), samples("b", rate=6200.0, spread=wild), 5.0)
    assert c.verdict == "not judgeable" and not c.failed
    assert c.rates[0].verdict == "within noise"
    assert c.rates[0].detectable_pct > 5.0


def test_too_few_windows_are_not_judgeable():
    short = samples("b")
    short.rates = short.rates[:2]
    c = compare_runs(samples("a"), short, 5.0)
    assert c.verdict == "not judgeable" and "too few steady windows" in c.summary


def test_unchanged_and_faster_runs_pass():
    same = compare_runs(samples("a"), samples("b"), 5.0)
    assert same.verdict == "no regression" and same.rates[0].verdict == "within noise"
    faster = compare_runs(samples("a"), samples("b", rate=8000.0, steps_ms=8.0), 5.0)
    assert faster.verdict == "no regression" and faster.rates[0].verdict == "faster"


def test_findings_that_appeared_or_disappeared_are_listed():
    c = compare_runs(
        samples("a"),
        samples("b"),
        5.0,
        baseline_codes=["C460", "M150"],
        current_codes=["M150", "G501"],
    )
    assert c.appeared == ["G501"] and c.disappeared == ["C460"]


def test_a_category_only_one_run_has_is_compared_as_new():
    cur = samples("b")
    cur.parts["part.compile"] = [2.0] * 6
    c = compare_runs(samples("a"), cur, 5.0)
    compile_ = next(p for p in c.parts if p.key == "part.compile")
    assert compile_.baseline == 0.0 and compile_.verdict == "slower" and compile_.regressed
    assert c.failed


def with_boundary(run: RunSamples, ms: float) -> RunSamples:
    run.parts["part.epoch_boundary"] = [ms * s for s in SPREAD[:6]]
    run.labels["part.epoch_boundary"] = "epoch boundaries"
    return run


def test_the_frameworks_own_work_slower_on_a_host_shared_differently_is_contention():
    base = with_boundary(samples("a"), 0.1)
    cur = with_boundary(samples("b"), 2.0)  # +1.9 ms/step: 19 % of a step
    loaded = compare_runs(base, cur, 5.0, facts(0.05), facts(0.40))
    assert loaded.verdict == "contention" and not loaded.failed
    assert "epoch boundaries +1.89 ms/step (+1900%), outside noise" in loaded.summary
    quiet = compare_runs(base, cur, 5.0, facts(0.05), facts(0.07))
    assert quiet.verdict == "regression" and quiet.regressed_parts()[0].key == "part.epoch_boundary"


def test_a_callback_on_a_loaded_host_fails_only_when_its_whole_interval_is_beyond_the_limit():
    clear = compare_runs(samples("a"), samples("b", hook_ms=1.2), 5.0, facts(0.05), facts(0.40))
    assert clear.failed and clear.regressed_parts()[0].step_share_low_pct > 5.0
    wobbly = samples("b", hook_ms=0.7)
    wobbly.parts[HOOK] = [0.2, 1.3, 0.5, 0.9, 0.8, 0.3]  # +~6 % of a step, low end near 0
    near = compare_runs(samples("a"), wobbly, 5.0, facts(0.05), facts(0.40))
    hook = next(p for p in near.parts if p.key == HOOK)
    assert hook.verdict == "slower" and hook.step_share_pct > 5.0 and not hook.regressed
    assert not near.failed


def test_settings_both_runs_record_and_differ_in_are_listed():
    base, cur = samples("a"), samples("b")
    base.setup = {"backend": "tensorflow", "workers": "1", "instance type": "g5.xlarge"}
    cur.setup = {"backend": "jax", "workers": "1"}  # the instance type unknown: not a difference
    c = compare_runs(base, cur, 5.0)
    assert c.differences == ["backend tensorflow → jax"]
    assert compare_runs(samples("a"), samples("b"), 5.0).differences == []


def wait_of(base_facts: dict, cur_facts: dict):
    c = compare_runs(samples("a"), samples("b"), 5.0, base_facts, cur_facts)
    return c, next((p for p in c.parts if p.key == "part.input_wait"), None)


def test_the_input_wait_the_baseline_measured_is_set_side_by_side_and_not_gated():
    bound = {"input.bound_fraction": 0.1, "input.bound_outside_band": True}
    more = {"input.bound_fraction": 0.5, "input.bound_outside_band": True}
    c, wait = wait_of(bound, more)
    assert (wait.baseline, wait.current) == pytest.approx((1.0, 5.0), rel=0.01)  # × ~10 ms
    assert wait.verdict == "one measurement" and not wait.regressed and not c.failed
    inside_band = {"input.bound_fraction": 0.02, "input.bound_outside_band": False}
    assert wait_of(inside_band, more)[1].baseline == 0.0  # no measurable wait
    assert wait_of({}, more)[1] is None  # not measured on the baseline: not compared


def test_steal_that_differs_between_the_runs_is_contention_with_its_figures():
    base, cur = {"host.steal_fraction": 0.01}, {"host.steal_fraction": 0.20}
    c = compare_runs(samples("a"), samples("b", rate=5000.0, steps_ms=13.0), 5.0, base, cur)
    assert c.verdict == "contention" and not c.failed
    assert c.contention.note == "steal 20% this run, 1% the baseline"
