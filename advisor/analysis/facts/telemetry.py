"""GPU (NVML) and host (psutil) telemetry facts; how each is measured: docs/telemetry.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    Fact("host.mem.peak_fraction", "fraction", "peak host memory used ÷ total", "psutil"),
    Fact("host.net.rx_bps.p95", "B/s", "95th percentile of network receive rate", "psutil"),
    Fact("host.disk.read_bps.p95", "B/s", "95th percentile of disk read rate", "psutil"),
    Fact("host.proc_cpu.mean", "%", "mean CPU of the training process (100 = one core)", "psutil"),
    Fact(
        "host.others_cpu_fraction",
        "fraction",
        "share of the host's CPU capacity other processes used while this one trained (a shared, noisy host)",
        "psutil",
    ),
    Fact(
        "host.others_cpu_p90",
        "fraction",
        "90th percentile over the samples of the share other processes used: high when they ran for part of the training only",
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


# Utilization p95 above this and p5 below FLUCT_LOW: the GPU swings between busy and idle.
FLUCT_HIGH, FLUCT_LOW = 70.0, 10.0
IDLE_UTIL = 10.0  # % — a GPU below this is idle (SageMaker CPUBottleneck, IOBottleneck)
SATURATED_CORE = 90.0  # % of one core
HIGH_IOWAIT = 50.0  # %
MEM_WINDOW = 10  # samples in the memory moving average
MIN_COVERAGE = 0.8  # share of measured window time the GPU samples must cover for J/sample


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import ContextRecord

    out: dict[str, Any] = {}
    info = _telemetry_context(run, ContextRecord)
    if not info and not run.of_type(_host_cls()) and not run.of_type(_gpu_cls()):
        return out  # telemetry was off: every fact absent
    intervals = [
        float(v["telemetry.interval_s"]) for v in info.values() if v.get("telemetry.interval_s")
    ]
    if intervals:
        out["telemetry.interval_s"] = intervals[0]
    _gpu_facts(run, info, facts, out)
    _energy_facts(run, info, out)
    _host_facts(run, info, out)
    return out


def _gpu_cls() -> Any:
    from advisor.store.schema import GpuSample

    return GpuSample


def _host_cls() -> Any:
    from advisor.store.schema import HostSample

    return HostSample


def _telemetry_context(run: Run, cls: Any) -> dict[int, dict[str, Any]]:
    """Per rank: the telemetry.* and model.* values of its context records, later ones winning."""
    out: dict[int, dict[str, Any]] = {}
    for rank in run.ranks:
        merged: dict[str, Any] = {}
        for record in run.of_type(cls, rank=rank):
            merged.update(
                {k: v for k, v in record.values.items() if k.startswith(("telemetry.", "model."))}
            )
        if merged:
            out[rank] = merged
    return out


def _measured_span(run: Run, rank: int) -> tuple[float, float] | None:
    """From the start of the first measured (post-warm-up) window to the end of the last one."""
    from advisor.store.schema import WindowRecord

    windows = [w for w in run.of_type(WindowRecord, rank=rank) if not w.warmup and w.seconds > 0]
    if not windows:
        return None
    return min(w.t - w.seconds for w in windows), max(w.t for w in windows)


def _steady(samples: list[Any], span: tuple[float, float] | None, slack: float) -> list[Any]:
    """Samples inside the measured span (validation between windows included); all when too few."""
    if span is None:
        return samples
    inside = [s for s in samples if span[0] <= s.t <= span[1] + slack]
    return inside if len(inside) >= 3 else samples


def _series(run: Run, info: dict[int, dict[str, Any]]) -> dict[tuple[int, int], list[Any]]:
    """GPU samples per (rank, index): one series per physical GPU, each GPU once across workers."""
    seen_uuids: set[str] = set()
    out: dict[tuple[int, int], list[Any]] = {}
    for rank in run.ranks:
        samples = run.of_type(_gpu_cls(), rank=rank)
        if not samples:
            continue
        meta = info.get(rank, {})
        uuids = {
            int(g["index"]): g.get("uuid") for g in meta.get("telemetry.gpus", []) if "index" in g
        }
        own = set(meta.get("telemetry.process_gpus") or [])
        by_index: dict[int, list[Any]] = {}
        for s in samples:
            by_index.setdefault(s.index, []).append(s)
        for index, series in sorted(by_index.items()):
            if own and index not in own and len(by_index) > 1:
                continue  # sampled, but this worker holds no CUDA context there
            uuid = uuids.get(index)
            if uuid and uuid in seen_uuids:
                continue
            if uuid:
                seen_uuids.add(uuid)
            out[(rank, index)] = sorted(series, key=lambda s: s.t)
    return out


def _values(samples: list[Any], name: str) -> list[float]:
    return [float(getattr(s, name)) for s in samples if getattr(s, name, None) is not None]


def _used_devices(
    steady: dict[tuple[int, int], list[Any]],
    facts: dict[str, Any],
    workers: int,
    out: dict[str, Any],
) -> dict[tuple[int, int], list[Any]]:
    """Keep, per worker, as many GPUs as it has replicas: the busiest ones.

    A single process sees every GPU but the default strategy trains on one; the idle others would
    drag every utilization figure down. They are counted in ``gpu.extra_visible`` instead.
    """
    replicas = facts.get("context.replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
        return steady
    per_worker = max(1, replicas // max(1, workers))
    kept: dict[tuple[int, int], list[Any]] = {}
    dropped = 0
    for rank in sorted({r for r, _ in steady}):
        mine = [(k, v) for k, v in steady.items() if k[0] == rank]
        if len(mine) <= per_worker:
            kept.update(mine)
            continue
        mine.sort(key=lambda kv: -_mean(_values(kv[1], "util")))
        kept.update(mine[:per_worker])
        dropped += len(mine) - per_worker
    if dropped:
        out["gpu.extra_visible"] = dropped
    return kept


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _gpu_facts(
    run: Run, info: dict[int, dict[str, Any]], facts: dict[str, Any], out: dict[str, Any]
) -> None:
    from advisor.analysis.telemetry_math import growth_points, max_pairwise_js, percentile
    from advisor.store.schema import THROTTLE_MASK

    series = _series(run, info)
    if not series:
        reasons = [
            v.get("telemetry.nvml")
            for v in info.values()
            if v.get("telemetry.gpu_present") is False
        ]
        if reasons:
            out["gpu.present"] = False
            out["gpu.absent_reason"] = str(reasons[0])
        return
    out["gpu.present"] = True
    slack = float(out.get("telemetry.interval_s", 1.0))
    steady = {k: _steady(v, _measured_span(run, k[0]), slack) for k, v in series.items()}
    steady = _used_devices(steady, facts, len(run.ranks), out)
    series = {k: v for k, v in series.items() if k in steady}
    names = {
        (r, int(g["index"])): g.get("name")
        for r, v in info.items()
        for g in v.get("telemetry.gpus", [])
        if "index" in g
    }
    out["gpu.count"] = len(steady)
    out["gpu.devices"] = [f"{r}:{i}" for r, i in steady]
    out["gpu.models"] = [names.get(k) or "unknown" for k in steady]
    util = [u for s in steady.values() for u in _values(s, "util")]
    if util:
        p5, p95 = percentile(util, 5), percentile(util, 95)
        out.update(
            {
                "gpu.util.p5": p5,
                "gpu.util.p50": percentile(util, 50),
                "gpu.util.p95": p95,
                "gpu.util.mean": sum(util) / len(util),
                "gpu.util.fluctuating": p95 > FLUCT_HIGH and p5 < FLUCT_LOW,
            }
        )
        per_device = [_values(s, "util") for s in steady.values()]
        out["gpu.util.per_device_p50"] = [percentile(u, 50) if u else None for u in per_device]
        imbalance = max_pairwise_js([u for u in per_device if u])
        if imbalance is not None:
            out["gpu.load_imbalance"] = imbalance
    fractions = [
        s.mem_used / s.mem_total
        for v in series.values()
        for s in v
        if s.mem_used is not None and s.mem_total
    ]
    if fractions:
        out["gpu.mem.nvml_peak_fraction"] = max(fractions)
        steady_fractions = [
            s.mem_used / s.mem_total
            for v in steady.values()
            for s in v
            if s.mem_used is not None and s.mem_total
        ]
        out["gpu.mem.used_fraction.p95"] = percentile(steady_fractions or fractions, 95)
        growth = [
            g
            for g in (
                growth_points(
                    [
                        100.0 * s.mem_used / s.mem_total
                        for s in v
                        if s.mem_used is not None and s.mem_total
                    ],
                    MEM_WINDOW,
                )
                for v in steady.values()
            )
            if g is not None
        ]
        if growth:
            out["gpu.mem.growth_points"] = max(growth)
    _memory_peak(series, info, out)
    power = [_values(s, "power_w") for s in steady.values()]
    means = [sum(p) / len(p) for p in power if p]
    if means:
        out["gpu.power_w.mean"] = sum(means)
        out["gpu.power_w.mean_per_device"] = sum(means) / len(means)
    paired = [
        (s.power_w, s.util)
        for v in steady.values()
        for s in v
        if s.power_w is not None and s.util is not None
    ]
    drawn = sum(p for p, _ in paired)
    if drawn > 0:  # samples are evenly spaced: power sums stand for energy
        out["energy.idle_fraction"] = sum(p for p, u in paired if u < IDLE_UTIL) / drawn
    throttles = [int(s.throttle) for v in steady.values() for s in v if s.throttle is not None]
    if throttles:
        out["gpu.throttled_fraction"] = sum(1 for t in throttles if t & THROTTLE_MASK) / len(
            throttles
        )
    temps = [t for v in series.values() for t in _values(v, "temp_c")]
    if temps:
        out["gpu.temp_c.max"] = max(temps)
    clocks = [c for v in steady.values() for c in _values(v, "sm_clock_mhz")]
    if clocks:
        out["gpu.sm_clock_mhz.p50"] = percentile(clocks, 50)
    for field, name in (
        ("pcie_rx_bps", "gpu.pcie_rx_bps.p95"),
        ("pcie_tx_bps", "gpu.pcie_tx_bps.p95"),
    ):
        values = [x for v in steady.values() for x in _values(v, field)]
        if values:
            out[name] = percentile(values, 95)
    out["gpu.lost"] = sum(
        1
        for e in run.of_type(_event_cls())
        if e.source == "telemetry" and "stopped answering" in e.message
    )


def _event_cls() -> Any:
    from advisor.store.schema import EventRecord

    return EventRecord


def _memory_peak(
    series: dict[tuple[int, int], list[Any]], info: dict[int, dict[str, Any]], out: dict[str, Any]
) -> None:
    """Framework allocator peak (what tensors needed) when recorded, else what NVML saw reserved."""
    best: tuple[float, int] | None = None
    for values in info.values():
        for entry in values.get("telemetry.framework_mem", []) or []:
            peak, total = entry.get("peak"), entry.get("total")
            if peak and total and (best is None or peak / total > best[0]):
                best = (peak / total, int(peak))
    if best is not None:
        out["gpu.mem.peak_fraction"], out["gpu.mem.peak_bytes"] = best
        out["gpu.mem.peak_source"] = "framework"
        return
    used = [
        (s.mem_used / s.mem_total, s.mem_used)
        for v in series.values()
        for s in v
        if s.mem_used is not None and s.mem_total
    ]
    if used:
        fraction, peak = max(used)
        out["gpu.mem.peak_fraction"], out["gpu.mem.peak_bytes"] = fraction, int(peak)
        out["gpu.mem.peak_source"] = "nvml"


def _energy_facts(run: Run, info: dict[int, dict[str, Any]], out: dict[str, Any]) -> None:
    from advisor.analysis.telemetry_math import EnergySeries
    from advisor.store.schema import WindowRecord

    series = _series(run, info)
    # Each series prepared once for all windows (a window then costs a binary search).
    prepared = {
        key: EnergySeries(
            [s.t for s in samples], [s.energy_j for s in samples], [s.power_w for s in samples]
        )
        for key, samples in series.items()
    }
    total = 0.0
    methods: set[str] = set()
    for energy in prepared.values():
        result = energy.joules()
        if result is not None:
            total += result[0]
            methods.add(result[1])
    if not methods:
        return
    out["energy.wh"] = total / 3600.0
    out["energy.method"] = methods.pop() if len(methods) == 1 else "counter+power-integration"
    # Per sample: energy of each worker's GPUs during its measured windows ÷ the samples trained then.
    joules = samples_trained = covered = measured = 0.0
    for rank in run.ranks:
        windows = [
            w
            for w in run.of_type(WindowRecord, rank=rank)
            if not w.warmup and w.seconds > 0 and w.samples
        ]
        mine = [v for (r, _), v in prepared.items() if r == rank]
        if not windows or not mine:
            continue
        for w in windows:
            t0, t1 = w.t - w.seconds, w.t
            measured += w.seconds
            samples_trained += w.samples or 0
            spans = []
            for energy in mine:
                spans.append(max(0.0, min(t1, energy.times[-1]) - max(t0, energy.times[0])))
                result = energy.joules(t0, t1)
                if result is not None:
                    joules += result[0]
            covered += min(spans) if spans else 0.0
    if samples_trained > 0 and measured > 0 and covered >= MIN_COVERAGE * measured:
        out["energy.j_per_sample"] = joules / samples_trained


def _host_facts(run: Run, info: dict[int, dict[str, Any]], out: dict[str, Any]) -> None:
    from advisor.analysis.telemetry_math import percentile

    slack = float(out.get("telemetry.interval_s", 1.0))
    samples: list[Any] = []
    for rank in run.ranks:
        samples.extend(
            _steady(run.of_type(_host_cls(), rank=rank), _measured_span(run, rank), slack)
        )
    all_host = run.of_type(_host_cls())
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
    iowait = _values(samples, "iowait")
    if iowait:
        out["host.iowait.p95"] = percentile(iowait, 95)
        out["host.iowait.high_fraction"] = sum(1 for v in iowait if v > HIGH_IOWAIT) / len(iowait)
    mem = [s.mem_used / s.mem_total for s in all_host if s.mem_used is not None and s.mem_total]
    if mem:
        out["host.mem.peak_fraction"] = max(mem)
    for field, name in (
        ("net_rx_bps", "host.net.rx_bps.p95"),
        ("net_tx_bps", "host.net.tx_bps.p95"),
        ("disk_read_bps", "host.disk.read_bps.p95"),
        ("disk_write_bps", "host.disk.write_bps.p95"),
    ):
        values = _values(samples, field)
        if values:
            out[name] = percentile(values, 95)
    proc = _values(samples, "proc_cpu_percent")
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
    rss = _values(all_host, "proc_rss")
    if rss:
        out["host.proc_rss.peak"] = int(max(rss))
    fractions = [
        v["telemetry.sampler_cpu_s"] / v["telemetry.sampler_wall_s"]
        for v in info.values()
        if v.get("telemetry.sampler_wall_s") and v.get("telemetry.sampler_cpu_s") is not None
    ]
    if fractions:
        out["telemetry.sampler_cpu_fraction"] = max(fractions)
