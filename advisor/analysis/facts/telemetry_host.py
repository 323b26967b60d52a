"""Host (psutil) facts of ``facts.telemetry``: CPU, iowait, memory, network, disk, the training
process and the other processes beside it; how each is measured: docs/telemetry.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.facts.telemetry_samples import host_cls, measured_span, steady, values

if TYPE_CHECKING:
    from advisor.store.reader import Run

SATURATED_CORE = 90.0  # % of one core
HIGH_IOWAIT = 50.0  # %
SHARED_HOST = 0.10  # share of the host's CPU other processes used (I250's and M103's default)


def host_facts(run: Run, info: dict[int, dict[str, Any]], out: dict[str, Any]) -> None:
    from advisor.analysis.telemetry_math import percentile

    slack = float(out.get("telemetry.interval_s", 1.0))
    samples: list[Any] = []
    for rank in run.ranks:
        samples.extend(steady(run.of_type(host_cls(), rank=rank), measured_span(run, rank), slack))
    all_host = run.of_type(host_cls())
    if all_host:
        out["telemetry.samples"] = len(all_host)
    cores = [s.cpu_percent for s in samples if s.cpu_percent]
    if cores:
        mean_per_sample = [sum(c) / len(c) for c in cores]
        busiest = [max(c) for c in cores]
        out["host.cpu.mean"] = sum(mean_per_sample) / len(mean_per_sample)
        out["host.cpu.p95"] = percentile(mean_per_sample, 95)
        out["host.cpu.max_core_p95"] = percentile(busiest, 95)
        out["host.cpu.saturated_fraction"] = sum(1 for b in busiest if b > SATURATED_CORE) / len(
            busiest
        )
    iowait = values(samples, "iowait")
    if iowait:
        out["host.iowait.p95"] = percentile(iowait, 95)
        out["host.iowait.high_fraction"] = sum(1 for v in iowait if v > HIGH_IOWAIT) / len(iowait)
    steal = values(samples, "steal")
    if steal:
        out["host.steal_fraction"] = sum(steal) / len(steal) / 100.0
    mem = [s.mem_used / s.mem_total for s in all_host if s.mem_used is not None and s.mem_total]
    if mem:
        out["host.mem.peak_fraction"] = max(mem)
    for field, name in (
        ("net_rx_bps", "host.net.rx_bps.p95"),
        ("net_tx_bps", "host.net.tx_bps.p95"),
        ("disk_read_bps", "host.disk.read_bps.p95"),
        ("disk_write_bps", "host.disk.write_bps.p95"),
    ):
        readings = values(samples, field)
        if readings:
            out[name] = percentile(readings, 95)
    proc = values(samples, "proc_cpu_percent")
    if proc:
        out["host.proc_cpu.mean"] = sum(proc) / len(proc)
    others = [
        max(0.0, sum(s.cpu_percent) - s.proc_cpu_percent) / (100.0 * len(s.cpu_percent))
        for s in samples
        if s.cpu_percent and s.proc_cpu_percent is not None
    ]
    if others:  # the CPU other processes took while this one trained (a shared host)
        out["host.others_cpu_fraction"] = min(1.0, sum(others) / len(others))
        out["host.others_cpu_p90"] = min(1.0, percentile(others, 90))
        shared = max(out["host.others_cpu_fraction"], out["host.others_cpu_p90"])
        if shared >= SHARED_HOST:
            out["host.shared_cpu_fraction"] = shared
    rss = values(all_host, "proc_rss")
    if rss:
        out["host.proc_rss.peak"] = int(max(rss))
    fractions = [
        v["telemetry.sampler_cpu_s"] / v["telemetry.sampler_wall_s"]
        for v in info.values()
        if v.get("telemetry.sampler_wall_s") and v.get("telemetry.sampler_cpu_s") is not None
    ]
    if fractions:
        out["telemetry.sampler_cpu_fraction"] = max(fractions)
