"""GPU (NVML) and host (psutil) telemetry facts. Derivations: issue 6 (telemetry)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("gpu.present", "", "GPU samples were recorded (False: no GPU data on this run)", "nvml", "bool"),
    Fact("gpu.count", "", "GPUs sampled", "nvml"),
    Fact("gpu.util.p5", "%", "5th percentile of GPU utilization", "nvml"),
    Fact("gpu.util.p50", "%", "median GPU utilization", "nvml"),
    Fact("gpu.util.p95", "%", "95th percentile of GPU utilization", "nvml"),
    Fact("gpu.util.mean", "%", "mean GPU utilization", "nvml"),
    Fact("gpu.util.fluctuating", "", "utilization swings between busy and idle (p95 > 70 and p5 < 10)", "nvml", "bool"),
    Fact("gpu.mem.peak_fraction", "fraction", "peak GPU memory used ÷ total", "nvml"),
    Fact("gpu.mem.growth_points", "%", "rise of the moving average of memory use over the run, in points", "nvml"),
    Fact("gpu.power_w.mean", "W", "mean GPU power draw (all GPUs)", "nvml"),
    Fact("gpu.throttled_fraction", "fraction", "share of samples with a clock-throttle reason other than idle", "nvml"),
    Fact("gpu.load_imbalance", "", "largest Jensen–Shannon distance between per-GPU utilization histograms", "nvml"),
    Fact("energy.wh", "Wh", "GPU energy over the sampled time (counter, else power × Δt)", "nvml"),
    Fact("energy.j_per_sample", "J", "GPU energy per training sample", "nvml"),
    Fact("energy.method", "", "counter or power-integration", "nvml", "str"),
    Fact("host.cpu.mean", "%", "mean CPU utilization over all cores", "psutil"),
    Fact("host.cpu.max_core_p95", "%", "95th percentile of the busiest core's utilization", "psutil"),
    Fact("host.cpu.saturated_fraction", "fraction", "share of samples with some core above 90%", "psutil"),
    Fact("host.iowait.p95", "%", "95th percentile of CPU iowait", "psutil"),
    Fact("host.iowait.high_fraction", "fraction", "share of samples with iowait above 50%", "psutil"),
    Fact("host.mem.peak_fraction", "fraction", "peak host memory used ÷ total", "psutil"),
    Fact("host.net.rx_bps.p95", "B/s", "95th percentile of network receive rate", "psutil"),
    Fact("host.disk.read_bps.p95", "B/s", "95th percentile of disk read rate", "psutil"),
    Fact("host.proc_cpu.mean", "%", "mean CPU of the training process (100 = one core)", "psutil"),
    Fact("telemetry.samples", "", "host samples recorded", "psutil"),
    Fact("telemetry.sampler_cpu_fraction", "fraction", "CPU time of the sampler ÷ wall time (of one core)", "psutil"),
)


def derive(run: Run, facts: dict[str, Any]) -> dict[str, Any]:
    return {}
