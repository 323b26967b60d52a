"""GPU (NVML) facts of ``facts.telemetry``: utilization, memory, power, clocks and energy.

Statistics are taken over the GPUs the workers train on (each physical GPU once), within the
measured windows; how each is measured: docs/telemetry.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.facts.telemetry_samples import (
    event_cls,
    gpu_series,
    measured_span,
    mem_fractions,
    steady,
    values,
)

if TYPE_CHECKING:
    from advisor.store.reader import Run

Series = dict[tuple[int, int], list[Any]]

# Utilization p95 above this and p5 below FLUCT_LOW: the GPU swings between busy and idle.
FLUCT_HIGH, FLUCT_LOW = 70.0, 10.0
IDLE_UTIL = 10.0  # % — a GPU below this is idle (SageMaker CPUBottleneck, IOBottleneck)
MEM_WINDOW = 10  # samples in the memory moving average
MIN_COVERAGE = 0.8  # share of measured window time the GPU samples must cover for J/sample


def gpu_facts(
    run: Run, info: dict[int, dict[str, Any]], facts: dict[str, Any], out: dict[str, Any]
) -> None:
    series = gpu_series(run, info)
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
    kept = {k: steady(v, measured_span(run, k[0]), slack) for k, v in series.items()}
    kept = _used_devices(kept, facts, len(run.ranks), out)
    series = {k: v for k, v in series.items() if k in kept}
    names = {
        (r, int(g["index"])): g.get("name")
        for r, v in info.items()
        for g in v.get("telemetry.gpus", [])
        if "index" in g
    }
    out["gpu.count"] = len(kept)
    out["gpu.devices"] = [f"{r}:{i}" for r, i in kept]
    out["gpu.models"] = [names.get(k) or "unknown" for k in kept]
    _util_facts(kept, out)
    _memory_facts(series, kept, out)
    _memory_peak(series, info, out)
    _power_facts(kept, out)
    _clock_facts(series, kept, out)
    _sharing_facts(kept, out)
    out["gpu.lost"] = sum(
        1
        for e in run.of_type(event_cls())
        if e.source == "telemetry" and "stopped answering" in e.message
    )


def _used_devices(kept: Series, facts: dict[str, Any], workers: int, out: dict[str, Any]) -> Series:
    """Keep, per worker, as many GPUs as it has replicas: the busiest ones.

    A single process sees every GPU but the default strategy trains on one; the idle others would
    drag every utilization figure down. They are counted in ``gpu.extra_visible`` instead.
    """
    replicas = facts.get("context.replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
        return kept
    per_worker = max(1, replicas // max(1, workers))
    used: Series = {}
    dropped = 0
    for rank in sorted({r for r, _ in kept}):
        mine = [(k, v) for k, v in kept.items() if k[0] == rank]
        if len(mine) <= per_worker:
            used.update(mine)
            continue
        mine.sort(key=lambda kv: -_mean(values(kv[1], "util")))
        used.update(mine[:per_worker])
        dropped += len(mine) - per_worker
    if dropped:
        out["gpu.extra_visible"] = dropped
    return used


def _mean(numbers: list[float]) -> float:
    return sum(numbers) / len(numbers) if numbers else 0.0


def _util_facts(kept: Series, out: dict[str, Any]) -> None:
    """Utilization percentiles over all kept GPUs, per device, and how unevenly they are used."""
    from advisor.analysis.telemetry_math import max_pairwise_js, percentile

    util = [u for s in kept.values() for u in values(s, "util")]
    if not util:
        return
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
    per_device = [values(s, "util") for s in kept.values()]
    out["gpu.util.per_device_p50"] = [percentile(u, 50) if u else None for u in per_device]
    imbalance = max_pairwise_js([u for u in per_device if u])
    if imbalance is not None:
        out["gpu.load_imbalance"] = imbalance


def _memory_facts(series: Series, kept: Series, out: dict[str, Any]) -> None:
    """Memory NVML saw reserved: its peak, its p95 while training, and how much it grew."""
    from advisor.analysis.telemetry_math import growth_points, percentile

    fractions = mem_fractions(series)
    if not fractions:
        return
    out["gpu.mem.nvml_peak_fraction"] = max(fractions)
    out["gpu.mem.used_fraction.p95"] = percentile(mem_fractions(kept) or fractions, 95)
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
            for v in kept.values()
        )
        if g is not None
    ]
    if growth:
        out["gpu.mem.growth_points"] = max(growth)


def _memory_peak(series: Series, info: dict[int, dict[str, Any]], out: dict[str, Any]) -> None:
    """Framework allocator peak (what tensors needed) when recorded, else what NVML saw reserved."""
    best: tuple[float, int] | None = None
    for meta in info.values():
        for entry in meta.get("telemetry.framework_mem", []) or []:
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


def _power_facts(kept: Series, out: dict[str, Any]) -> None:
    """Mean power draw, and the share of it drawn while a GPU was idle."""
    power = [values(s, "power_w") for s in kept.values()]
    means = [sum(p) / len(p) for p in power if p]
    if means:
        out["gpu.power_w.mean"] = sum(means)
        out["gpu.power_w.mean_per_device"] = sum(means) / len(means)
    paired = [
        (s.power_w, s.util)
        for v in kept.values()
        for s in v
        if s.power_w is not None and s.util is not None
    ]
    drawn = sum(p for p, _ in paired)
    if drawn > 0:  # samples are evenly spaced: power sums stand for energy
        out["energy.idle_fraction"] = sum(p for p, u in paired if u < IDLE_UTIL) / drawn


def _clock_facts(series: Series, kept: Series, out: dict[str, Any]) -> None:
    """Throttling, temperature, SM clock and PCIe traffic."""
    from advisor.analysis.telemetry_math import percentile
    from advisor.store.schema import THROTTLE_MASK

    throttles = [int(s.throttle) for v in kept.values() for s in v if s.throttle is not None]
    if throttles:
        out["gpu.throttled_fraction"] = sum(1 for t in throttles if t & THROTTLE_MASK) / len(
            throttles
        )
    temps = [t for v in series.values() for t in values(v, "temp_c")]
    if temps:
        out["gpu.temp_c.max"] = max(temps)
    clocks = [c for v in kept.values() for c in values(v, "sm_clock_mhz")]
    if clocks:
        out["gpu.sm_clock_mhz.p50"] = percentile(clocks, 50)
    for field, name in (
        ("pcie_rx_bps", "gpu.pcie_rx_bps.p95"),
        ("pcie_tx_bps", "gpu.pcie_tx_bps.p95"),
    ):
        readings = [x for v in kept.values() for x in values(v, field)]
        if readings:
            out[name] = percentile(readings, 95)


def _sharing_facts(kept: Series, out: dict[str, Any]) -> None:
    """Other processes on the GPUs the job trains on: in what share of the samples, how many at
    most, and the largest share of a GPU's memory they held (where NVML lists the job's own
    process: nvml.py)."""
    seen = [s for v in kept.values() for s in v if s.others_procs is not None]
    if not seen:
        return
    from advisor.analysis.facts.telemetry_host import SHARED_HOST

    share = sum(1 for s in seen if s.others_procs > 0) / len(seen)
    out["gpu.others_sample_fraction"] = share
    if share >= SHARED_HOST:
        out["gpu.shared_sample_fraction"] = share
    out["gpu.others_processes"] = max(s.others_procs for s in seen)
    held = [s.others_mem / s.mem_total for s in seen if s.others_mem is not None and s.mem_total]
    if held:
        out["gpu.others_mem_fraction"] = max(held)


def energy_facts(run: Run, info: dict[int, dict[str, Any]], out: dict[str, Any]) -> None:
    from advisor.analysis.telemetry_math import EnergySeries

    # Each series prepared once for all windows (a window then costs a binary search).
    prepared = {
        key: EnergySeries(
            [s.t for s in samples], [s.energy_j for s in samples], [s.power_w for s in samples]
        )
        for key, samples in gpu_series(run, info).items()
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
    per_sample = _joules_per_sample(run, prepared)
    if per_sample is not None:
        out["energy.j_per_sample"] = per_sample


def _joules_per_sample(run: Run, prepared: dict[tuple[int, int], Any]) -> float | None:
    """Energy of each worker's GPUs during its measured windows ÷ the samples trained then; None
    when the GPU samples cover too little of the windows."""
    from advisor.store.schema import WindowRecord

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
        return joules / samples_trained
    return None
