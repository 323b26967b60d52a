"""Facts computed from other facts: the CPU-bound / I/O-bound / small-batch patterns, the best
estimate of the input's share of step time, and the evidence gate. Derived last.

Thresholds follow SageMaker Debugger's CPUBottleneck, IOBottleneck and BatchSize rules.
The patterns need per-GPU and per-host telemetry: without it they are absent, never False.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

GPU_IDLE_UTIL = 10.0  # % — "the accelerator is barely used"
PATTERN_SHARE = 0.5  # share of samples in which the host shows the symptom
SMALL_BATCH_UTIL = 70.0  # % — CPU, GPU and GPU memory all below this
MIN_MEASURED_STEPS = 20  # the evidence gate: fewer measured steps make a gated finding info
WIDE_INPUT_BAND = (
    0.10  # a baseline cost inside a band this wide (± 10 points or more) is unknown, not 0
)

FACTS = (
    Fact(
        "pattern.cpu_bound",
        "",
        "GPU mostly idle (median < 10%) while some CPU core is above 90% in over half of the "
        "samples",
        "nvml+psutil",
        "bool",
    ),
    Fact(
        "pattern.io_bound",
        "",
        "GPU mostly idle (median < 10%) while iowait is above 50% in over half of the samples",
        "nvml+psutil",
        "bool",
    ),
    Fact(
        "pattern.small_batch",
        "",
        "CPU (p95 of the mean over cores), GPU (p95) and GPU memory (peak) all under 70%: the "
        "batch leaves the hardware idle",
        "nvml+psutil",
        "bool",
    ),
    Fact(
        "input.share",
        "fraction",
        "best estimate of the input's share of step time (baseline, else trace); 0 when the "
        "baseline's cost is inside a narrow noise band, unknown (input.withheld says why) when the "
        "band is ± 10 points or wider",
        "baseline+trace",
    ),
    Fact(
        "input.share_source",
        "",
        "where input.share comes from: baseline or trace",
        "baseline+trace",
        "str",
    ),
    Fact(
        "evidence.enough_steps",
        "",
        "at least 20 steps were measured after warm-up (evidence gate)",
        "throughput",
        "bool",
    ),
    Fact(
        "time.first_step_fraction",
        "fraction",
        "time to the first step ÷ training wall time",
        "epochs",
    ),
)


def _num(facts: dict[str, Any], name: str) -> float | None:
    value = facts.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    return derive_from(facts)


def derive_from(facts: dict[str, Any]) -> dict[str, Any]:
    """The composite facts from a facts mapping (pure; used by tests with fact fixtures)."""
    out: dict[str, Any] = {}
    gpu_p50 = _num(facts, "gpu.util.p50")
    saturated = _num(facts, "host.cpu.saturated_fraction")
    iowait_high = _num(facts, "host.iowait.high_fraction")
    if facts.get("gpu.present") is True and gpu_p50 is not None:
        if saturated is not None:
            out["pattern.cpu_bound"] = gpu_p50 < GPU_IDLE_UTIL and saturated > PATTERN_SHARE
        if iowait_high is not None:
            out["pattern.io_bound"] = gpu_p50 < GPU_IDLE_UTIL and iowait_high > PATTERN_SHARE
    gpu_p95 = _num(facts, "gpu.util.p95")
    cpu_p95 = _num(facts, "host.cpu.p95")  # SageMaker's BatchSize rule: p95, not the mean
    mem = _num(facts, "gpu.mem.peak_fraction")
    if facts.get("gpu.present") is True and None not in (gpu_p95, cpu_p95, mem):
        assert gpu_p95 is not None and cpu_p95 is not None and mem is not None
        out["pattern.small_batch"] = (
            gpu_p95 < SMALL_BATCH_UTIL
            and cpu_p95 < SMALL_BATCH_UTIL
            and mem * 100 < SMALL_BATCH_UTIL
        )

    bound = _num(facts, "input.bound_fraction")
    trace_input = _num(facts, "trace.input_percent")
    if bound is not None:
        # A cost inside the baseline's noise band is no measurable input cost — when the band is
        # narrow; a band that reaches a cost that matters cannot tell one from none: unknown, not 0.
        inside = facts.get("input.bound_outside_band") is False
        band = _num(facts, "input.bound_band")
        if inside and band is not None and band >= WIDE_INPUT_BAND:
            out["input.withheld"] = (
                f"the baseline measured the input at {bound:.0%} ± {band:.0%} of step time: inside "
                "its noise band, which is too wide to tell a cost that matters from none (a longer "
                "baseline, baseline_seconds, or a quieter host narrows it)"
            )
        else:
            out["input.share"] = 0.0 if inside else min(1.0, max(0.0, bound))
            out["input.share_source"] = "baseline"
    if "input.share" not in out and trace_input is not None:
        out["input.share"] = min(1.0, max(0.0, trace_input / 100.0))
        out["input.share_source"] = "trace"

    steps = _num(facts, "throughput.measured_steps")
    if steps is not None:
        out["evidence.enough_steps"] = steps >= MIN_MEASURED_STEPS
    first = _num(facts, "time.first_step_s")
    train = _num(facts, "run.train_seconds")
    if first is not None and train:
        out["time.first_step_fraction"] = min(1.0, first / train)
    return out
