"""Baseline records → facts → M108: the noise band decides, older records still read.

Records are written by hand (the shapes a baseline writes); no training here.
"""

from __future__ import annotations

import time

import pytest

from advisor.analysis.registry import registry
from advisor.service import diagnose
from advisor.store.reader import RunReader
from advisor.store.schema import BaselineRecord, ContextRecord, WindowRecord
from advisor.store.writer import RunWriter

CACHED = [1000.0, 990.0, 1010.0, 400.0, 1005.0, 995.0, 1000.0, 1010.0, 990.0, 1000.0, 1002.0, 998.0]


def _facts(
    runs_dir, record: BaselineRecord, windows: bool = False, context: dict | None = None
) -> tuple[dict, object]:
    writer = RunWriter(runs_dir, manifest={"global_batch_size": 32}, name="facts")
    if context:
        writer.write(ContextRecord(t=time.time(), values=context))
    if windows:  # training throughput: 1000 samples/s
        for i in range(3):
            writer.write(
                WindowRecord(
                    t=time.time() + i,
                    epoch=0,
                    seconds=10.0,
                    steps=313,
                    samples=10000,
                    step_begin=313 * i,
                    step_end=313 * (i + 1),
                )
            )
    writer.write(record)
    writer.close()
    run = RunReader(writer.path).read()
    facts, errors = registry().derive(run)
    assert errors == []
    return facts, run


def _record(real: list[float | None], cached: list[float], **extra) -> BaselineRecord:
    def median(values):
        values = sorted(v for v in values if v is not None)
        return (values[len(values) // 2] + values[(len(values) - 1) // 2]) / 2

    return BaselineRecord(
        t=time.time(),
        steps=100,
        batch_size=32,
        input_kind="tf.data",
        rounds=len(cached),
        real_rounds=real,
        cached_rounds=cached,
        real_samples_per_s=median(real),
        cached_samples_per_s=median(cached),
        **extra,
    )


def m108(run):
    return next(f for f in diagnose(run.path).findings if f.code == "M108")


def test_a_cost_far_outside_its_band_fails_with_the_band_in_the_message(runs_dir):
    real = [c * 0.3 for c in CACHED]  # the input costs 70 % in every round
    facts, run = _facts(runs_dir, _record(real, CACHED))
    assert facts["input.bound_fraction"] == pytest.approx(0.7)
    assert facts["input.bound_band"] < 0.01 and facts["input.bound_outside_band"] is True
    assert facts["baseline.rounds"] == 12 and facts["input.share"] == pytest.approx(0.7)
    finding = m108(run)
    assert finding.status == "fail" and finding.severity == "error"
    assert (
        "input costs 70% ± 0% of step time" in finding.message
        and "12 interleaved rounds" in finding.message
    )


def test_a_cost_inside_its_band_is_no_measured_input_cost(runs_dir):
    # Half the rounds see the real input 30 % slower, half 30 % faster: noise, not a cost. The
    # median is above the 10 % threshold, but inside its band.
    factors = [0.7, 1.3, 0.72, 1.25, 0.68, 1.2, 0.75, 1.35, 0.7, 0.8, 0.66, 1.1]
    real = [c * f for c, f in zip(CACHED, factors)]
    facts, run = _facts(runs_dir, _record(real, CACHED))
    assert facts["input.bound_fraction"] > 0.1 and facts["input.bound_outside_band"] is False
    assert facts["input.bound_fraction"] <= facts["input.bound_band"]
    assert facts["input.bound_verdict"].startswith("inside the noise band")
    # so wide a band reaches costs that matter: the input's share is unknown (NaN in frames), not 0
    assert "input.share" not in facts and "too wide to tell" in facts["input.withheld"]
    finding = m108(run)
    assert (
        finding.status == "pass"
        and "inside the noise band" in finding.message
        and " ± " in finding.message
    )


def test_a_cost_inside_a_narrow_band_is_no_input_cost(runs_dir):
    factors = [0.99, 1.01, 0.98, 1.02, 0.995, 1.005, 0.99, 1.01, 0.985, 1.015, 0.99, 1.01]
    facts, _ = _facts(runs_dir, _record([c * f for c, f in zip(CACHED, factors)], CACHED))
    assert facts["input.bound_outside_band"] is False and facts["input.bound_band"] < 0.05
    assert facts["input.share"] == 0.0 and "input.withheld" not in facts


def test_a_cost_the_inputs_own_work_cannot_explain_is_noise_on_a_cpu(runs_dir):
    """A cached pipeline that alone delivers 300× the training rate cannot cost 19% of a CPU step
    on 2 cores (at most 2 × 2 ÷ 300 ≈ 1.3%): that is the host's load drifting between rounds (seen
    on the healthy_callbacks scenario beside a busy core). The same figures with a slow input
    (it alone delivers 1.02× the training rate) stay an input cost, and so does a GPU run, whose
    cached batch also skips the copy to the device."""
    real = [c * 0.81 for c in CACHED]  # 19 % in every round: far outside a narrow band
    fast = _record(real, CACHED, data_only_samples_per_s=300 * 810.0)
    facts, run = _facts(
        runs_dir, fast, context={"context.device": "cpu", "context.host_cpu_count": 2}
    )
    assert facts["input.bound_fraction"] == pytest.approx(0.19) and facts["input.bound_band"] < 0.01
    assert facts["input.bound_outside_band"] is False and facts["input.share"] == 0.0
    assert "more than the input's own work can cost" in facts["input.bound_verdict"]
    assert "at most 1.3% of a step on 2 CPUs" in facts["input.bound_verdict"]
    assert m108(run).status == "pass"

    slow = _record(real, CACHED, data_only_samples_per_s=1.02 * 810.0)
    facts, run = _facts(
        runs_dir, slow, context={"context.device": "cpu", "context.host_cpu_count": 2}
    )
    assert facts["input.bound_outside_band"] is True and facts["input.share"] == pytest.approx(0.19)
    assert m108(run).status == "fail"

    facts, _ = _facts(
        runs_dir, fast, context={"context.device": "gpu", "context.host_cpu_count": 2}
    )
    assert facts["input.bound_outside_band"] is True


def test_one_stalled_round_does_not_hide_a_cost(runs_dir):
    real = [c * 0.5 for c in CACHED]
    real[3] = 800.0  # the round whose cached segment stalled (400 samples/s): real looks faster
    facts, run = _facts(runs_dir, _record(real, CACHED))
    assert facts["input.bound_fraction"] == pytest.approx(0.5, abs=0.01)
    assert facts["input.bound_outside_band"] is True and m108(run).status == "fail"


def test_an_older_record_without_rounds_reads_as_before(runs_dir):
    record = BaselineRecord(
        t=time.time(),
        steps=20,
        batch_size=32,
        input_kind="tf.data",
        real_samples_per_s=118.0,
        cached_samples_per_s=629.0,
        data_only_samples_per_s=120.0,
    )
    facts, run = _facts(runs_dir, record)
    assert facts["input.bound_fraction"] == pytest.approx(1 - 118 / 629)
    assert facts["input.data_only_ratio"] == pytest.approx(120 / 118)
    for name in (
        "input.bound_band",
        "input.bound_outside_band",
        "baseline.rounds",
        "input.data_only_ratio_band",
    ):
        assert name not in facts, name
    finding = m108(run)
    assert finding.status == "fail" and "input costs 81% of step time" in finding.message


def test_paired_figures_of_the_other_arms_have_bands(runs_dir):
    real = [c * 0.5 for c in CACHED]
    record = _record(
        real,
        CACHED,
        data_only_rounds=[r * 1.02 for r in real],
        source_cached_rounds=[r * 1.03 for r in real],
        data_only_samples_per_s=510.0,
        source_cached_samples_per_s=515.0,
    )
    facts, run = _facts(runs_dir, record)
    assert (
        facts["input.data_only_ratio"] == pytest.approx(1.02)
        and facts["input.data_only_ratio_band"] < 0.01
    )
    # A 3 % gain with no spread at all is outside its (zero-width) band, and below S304's 10 %.
    assert facts["input.source_cache_gain"] == pytest.approx(0.03)
    assert facts["input.source_cache_gain_outside_band"] is True
    s304 = next(f for f in diagnose(run.path).findings if f.code == "S304")
    assert s304.status == "pass" and "3% ± 0%" in s304.message


def test_a_generator_run_compares_each_cached_round_with_training(runs_dir):
    record = BaselineRecord(
        t=time.time(),
        steps=100,
        batch_size=32,
        input_kind="generator",
        rounds=12,
        cached_rounds=[c * 2 for c in CACHED],
        cached_samples_per_s=2000.0,
    )
    facts, _ = _facts(runs_dir, record, windows=True)
    assert facts["baseline.real_source"] == "training"
    assert facts["baseline.real_samples_per_s"] == pytest.approx(1000.0)
    assert facts["input.bound_fraction"] == pytest.approx(0.5, abs=0.01)
    assert facts["input.bound_outside_band"] is True


def test_too_few_rounds_for_a_band_leave_the_cost_undecided(runs_dir):
    # The budget allowed two rounds: no band, so no cost and no verdict, and M108 says why.
    record = _record(
        [300.0, 310.0],
        [1000.0, 990.0],
        budget_seconds=2.0,
        source_cached_rounds=[900.0, 950.0],
        source_cached_samples_per_s=925.0,
    )
    facts, run = _facts(runs_dir, record)
    assert "input.bound_fraction" not in facts and "input.source_cache_gain" not in facts
    assert (
        "paired only 2 round(s)" in facts["input.withheld"]
        and "baseline_max_seconds" in facts["input.withheld"]
    )
    finding = m108(run)
    assert finding.status == "unknown" and "withheld" in finding.message
    assert "raise baseline_max_seconds" in finding.measure
