"""GPU (NVML) and host (psutil) telemetry facts; how each is measured: docs/telemetry.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.facts.telemetry_gpu import energy_facts, gpu_facts
from advisor.analysis.facts.telemetry_host import host_facts
from advisor.analysis.facts.telemetry_samples import gpu_cls, host_cls, telemetry_context
from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact(
        "gpu.present",
        "",
        "GPU samples were recorded (False: no GPU data on this run)",
        "nvml",
        "bool",
    ),
    Fact("gpu.count", "", "GPUs sampled", "nvml"),
    Fact("gpu.util.p5", "%", "5th percentile of GPU utilization", "nvml"),
    Fact("gpu.util.p50", "%", "median GPU utilization", "nvml"),
    Fact("gpu.util.p95", "%", "95th percentile of GPU utilization", "nvml"),
    Fact("gpu.util.mean", "%", "mean GPU utilization", "nvml"),
    Fact(
        "gpu.util.fluctuating",
        "",
        "utilization swings between busy and idle (p95 > 70 and p5 < 10)",
        "nvml",
        "bool",
    ),
    Fact("gpu.mem.peak_fraction", "fraction", "peak GPU memory used ÷ total", "nvml"),
    Fact(
        "gpu.mem.growth_points",
        "%",
        "rise of the moving average of memory use over the run, in points",
        "nvml",
    ),
    Fact("gpu.power_w.mean", "W", "mean GPU power draw (all GPUs)", "nvml"),
    Fact(
        "gpu.throttled_fraction",
        "fraction",
        "share of samples with a clock-throttle reason other than idle",
        "nvml",
    ),
    Fact(
        "gpu.load_imbalance",
        "",
        "largest Jensen–Shannon distance between per-GPU utilization histograms",
        "nvml",
    ),
    Fact("energy.wh", "Wh", "GPU energy over the sampled time (counter, else power × Δt)", "nvml"),
    Fact("energy.j_per_sample", "J", "GPU energy per training sample", "nvml"),
    Fact("energy.method", "", "counter or power-integration", "nvml", "str"),
    Fact(
        "energy.idle_fraction",
        "fraction",
        "share of GPU energy drawn in samples where that GPU was idle (utilization < 10%)",
        "nvml",
    ),
    Fact("host.cpu.mean", "%", "mean CPU utilization over all cores", "psutil"),
    Fact(
        "host.cpu.max_core_p95", "%", "95th percentile of the busiest core's utilization", "psutil"
    ),
    Fact(
        "host.cpu.saturated_fraction",
        "fraction",
        "share of samples with some core above 90%",
        "psutil",
    ),
    Fact("host.iowait.p95", "%", "95th percentile of CPU iowait", "psutil"),
    Fact(
        "host.iowait.high_fraction", "fraction", "share of samples with iowait above 50%", "psutil"
    ),
    Fact(
        "host.steal_fraction",
        "fraction",
        "mean share of the CPU a VM's hypervisor gave to other guests (steal time)",
        "psutil",
    ),
    Fact("host.mem.peak_fraction", "fraction", "peak host memory used ÷ total", "psutil"),
    Fact("host.net.rx_bps.p95", "B/s", "95th percentile of network receive rate", "psutil"),
    Fact("host.disk.read_bps.p95", "B/s", "95th percentile of disk read rate", "psutil"),
    Fact("host.proc_cpu.mean", "%", "mean CPU of the training process (100 = one core)", "psutil"),
    Fact(
        "host.others_cpu_fraction",
        "fraction",
        "share of the host's CPU capacity other processes used while this one trained "
        "(a shared, noisy host)",
        "psutil",
    ),
    Fact(
        "host.others_cpu_p90",
        "fraction",
        "90th percentile over the samples of the share other processes used: "
        "high when they ran for part of the training only",
        "psutil",
    ),
    Fact(
        "host.shared_cpu_fraction",
        "fraction",
        "the share of the host's CPU other processes used (the larger of the mean and the 90th "
        "percentile), present only when the host was shared (a tenth or more): the reason M103, "
        "M150 and M154 give when they report as info",
        "psutil",
    ),
    Fact("telemetry.samples", "", "host samples recorded", "psutil"),
    Fact(
        "telemetry.sampler_cpu_fraction",
        "fraction",
        "CPU time of the sampler ÷ wall time (of one core)",
        "psutil",
    ),
    Fact(
        "gpu.absent_reason",
        "",
        "why there is no GPU data (no NVML, no visible GPU...)",
        "nvml",
        "str",
    ),
    Fact("gpu.models", "", "GPU models sampled, one entry per GPU", "nvml", "list"),
    Fact(
        "gpu.devices",
        "",
        "sampled GPUs as 'rank:index' (which GPU each worker trains on)",
        "nvml",
        "list",
    ),
    Fact("gpu.lost", "", "GPUs that stopped answering NVML during the run", "nvml"),
    Fact(
        "gpu.extra_visible",
        "",
        "GPUs a worker sees beyond its replicas, left out of the statistics (the least busy ones)",
        "nvml",
    ),
    Fact(
        "gpu.util.per_device_p50",
        "%",
        "median utilization of each sampled GPU, in gpu.devices order",
        "nvml",
        "list",
    ),
    Fact(
        "gpu.mem.peak_bytes",
        "bytes",
        "peak memory of the busiest GPU (framework allocator peak when known, else NVML)",
        "nvml",
    ),
    Fact(
        "gpu.mem.peak_source",
        "",
        "framework (allocator peak: tensors) or nvml (memory the process reserved)",
        "nvml",
        "str",
    ),
    Fact(
        "gpu.mem.nvml_peak_fraction",
        "fraction",
        "peak memory reserved on a GPU as NVML sees it ÷ total",
        "nvml",
    ),
    Fact(
        "gpu.mem.used_fraction.p95",
        "fraction",
        "95th percentile of NVML memory used ÷ total",
        "nvml",
    ),
    Fact(
        "gpu.power_w.mean_per_device", "W", "mean power draw of one GPU (average over GPUs)", "nvml"
    ),
    Fact("gpu.temp_c.max", "°C", "highest GPU temperature", "nvml"),
    Fact(
        "gpu.others_sample_fraction",
        "fraction",
        "share of the GPU samples in which another process held a compute context on the job's GPU",
        "nvml",
    ),
    Fact(
        "gpu.shared_sample_fraction",
        "fraction",
        "present only when the job's GPU was shared: gpu.others_sample_fraction, a tenth or more",
        "nvml",
    ),
    Fact(
        "gpu.others_processes",
        "",
        "most other processes on one of the job's GPUs at once",
        "nvml",
    ),
    Fact(
        "gpu.others_mem_fraction",
        "fraction",
        "largest share of a GPU's memory other processes held",
        "nvml",
    ),
    Fact("gpu.sm_clock_mhz.p50", "MHz", "median SM clock", "nvml"),
    Fact(
        "gpu.pcie_rx_bps.p95", "B/s", "95th percentile of host→GPU PCIe traffic (per GPU)", "nvml"
    ),
    Fact(
        "gpu.pcie_tx_bps.p95", "B/s", "95th percentile of GPU→host PCIe traffic (per GPU)", "nvml"
    ),
    Fact(
        "host.cpu.p95", "%", "95th percentile of the CPU utilization averaged over cores", "psutil"
    ),
    Fact("host.net.tx_bps.p95", "B/s", "95th percentile of network send rate", "psutil"),
    Fact("host.disk.write_bps.p95", "B/s", "95th percentile of disk write rate", "psutil"),
    Fact("host.proc_rss.peak", "bytes", "peak resident memory of the training process", "psutil"),
    Fact("telemetry.interval_s", "s", "time between telemetry samples", "psutil"),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    out: dict[str, Any] = {}
    info = telemetry_context(run)
    if not info and not run.of_type(host_cls()) and not run.of_type(gpu_cls()):
        return out  # telemetry was off: every fact absent
    intervals = [
        float(v["telemetry.interval_s"]) for v in info.values() if v.get("telemetry.interval_s")
    ]
    if intervals:
        out["telemetry.interval_s"] = intervals[0]
    gpu_facts(run, info, facts, out)
    energy_facts(run, info, out)
    host_facts(run, info, out)
    return out
