"""The default what-if's decision reads the input's cost as the analysis does: a cost the input's
own work cannot explain on a CPU is noise there too (no training: the baseline's figures by hand)."""

from __future__ import annotations

from advisor.collectors.whatif import _beyond_the_inputs_work
from advisor.experiments.baseline.result import InputBaseline
from advisor.store.bands import most_input_cost


def _baseline(data_only: float) -> InputBaseline:
    return InputBaseline(input_kind="numpy", batch_size=256, steps=40, warmup_steps=4,
                         real_samples_per_s=810.0, cached_samples_per_s=1000.0, data_only_samples_per_s=data_only)


def test_a_fast_input_on_a_cpu_cannot_cost_a_fifth_of_the_step():
    cpu = {"context.device": "cpu", "context.host_cpu_count": 2}
    assert most_input_cost(810.0, 243_000.0, 2) < 0.02  # 2 × 2 × 810 ÷ 243,000
    assert _beyond_the_inputs_work(0.19, _baseline(243_000.0), cpu)
    assert not _beyond_the_inputs_work(0.19, _baseline(830.0), cpu)  # a slow input: a real cost
    assert not _beyond_the_inputs_work(0.19, _baseline(243_000.0), {**cpu, "context.device": "gpu"})
    assert not _beyond_the_inputs_work(0.19, _baseline(243_000.0), {})  # device unknown: left as measured
