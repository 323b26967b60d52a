"""Memory facts: per-epoch peaks of the training process and its devices, the steady-state growth
with its noise band (``advisor.growth``), when memory runs out at that rate, and who could be
keeping it; how each is measured: docs/memory.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact(
        "memory.host.peak_bytes", "bytes", "the training process's peak resident memory", "memory"
    ),
    Fact(
        "memory.host.epoch_peaks_mb",
        "MB",
        "the training process's peak resident memory per epoch",
        "memory",
        "list",
    ),
    Fact(
        "memory.host.children_peak_bytes",
        "bytes",
        "peak resident memory of the process's children (input workers) at epoch ends",
        "memory",
    ),
    Fact(
        "memory.host.peak_fraction",
        "fraction",
        "the process's peak ÷ what it could reach (its memory plus what was still available)",
        "memory",
    ),
    Fact(
        "memory.device.peak_bytes",
        "bytes",
        "the largest device allocator peak (per device)",
        "memory",
    ),
    Fact(
        "memory.device.peak_fraction",
        "fraction",
        "the largest device allocator peak ÷ the device's memory",
        "memory",
    ),
    Fact(
        "memory.peak_fraction",
        "fraction",
        "the larger of the host's and the device's peak fraction: how near the limit the fit ran",
        "memory",
    ),
    Fact(
        "memory.growth_mb_per_epoch",
        "MB",
        "steady-state growth per epoch of the growing memory (host, else device)",
        "memory",
    ),
    Fact("memory.growth_band_mb", "MB", "the ± of that growth (its noise band)", "memory"),
    Fact("memory.growth_mb_per_hour", "MB", "the same growth per hour of training", "memory"),
    Fact(
        "memory.growing",
        "",
        "memory grows epoch after epoch beyond its noise band, to the last epochs",
        "memory",
        "bool",
    ),
    Fact("memory.growing_in", "", "host or device: where the growth was measured", "memory", "str"),
    Fact(
        "memory.left_out",
        "",
        "the epochs left out of the growth and why (first epoch, a cache filling)",
        "memory",
        "str",
    ),
    Fact("memory.steady_epochs", "", "epochs the growth is measured over", "memory"),
    Fact("memory.planned_epochs", "", "the epochs the fit was asked for", "memory"),
    Fact(
        "memory.exhaustion_epoch",
        "",
        "the epoch at which memory runs out at the measured growth",
        "memory",
    ),
    Fact(
        "memory.hours_to_exhaustion",
        "h",
        "hours of training, from the last epoch, until memory runs out",
        "memory",
    ),
    Fact(
        "memory.exhausted_before_end",
        "",
        "memory runs out before the fit's planned last epoch",
        "memory",
        "bool",
    ),
    Fact("memory.suspect", "", "who could be keeping the memory", "memory", "str"),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import MemoryRecord

    if not run.ranks:
        return {}
    records = sorted(run.of_type(MemoryRecord, rank=run.ranks[0]), key=lambda r: r.epoch)
    if not records:
        return {}
    context = _context(run)
    out: dict[str, Any] = {}
    _host_peaks(records, out)
    _device_peaks(records, _nvml_total(run), out)
    fractions = [out.get("memory.host.peak_fraction"), out.get("memory.device.peak_fraction")]
    if any(f is not None for f in fractions):
        out["memory.peak_fraction"] = max(f for f in fractions if f is not None)
    if context.get("memory.planned_epochs"):
        out["memory.planned_epochs"] = int(context["memory.planned_epochs"])
    _growth(run, records, context, out)
    return out


def _context(run: Run) -> dict[str, Any]:
    from advisor.store.schema import ContextRecord

    merged: dict[str, Any] = {}
    for record in run.of_type(ContextRecord, rank=run.ranks[0]):
        merged.update({k: v for k, v in record.values.items() if k.startswith("memory.")})
    return merged


def _host_peaks(records: list[Any], out: dict[str, Any]) -> None:
    from advisor.growth import MB

    peaks = [max(v for v in (r.rss_peak, r.rss, r.rss_begin) if v is not None) for r in records]
    if not peaks:
        return
    out["memory.host.peak_bytes"] = max(peaks)
    out["memory.host.epoch_peaks_mb"] = [round(p / MB, 1) for p in peaks]
    children = [r.children_rss for r in records if r.children_rss is not None]
    if children:
        out["memory.host.children_peak_bytes"] = max(children)
    reach = [
        (peak, r.rss + r.available + (r.children_rss or 0))
        for peak, r in zip(peaks, records)
        if r.available is not None and r.rss is not None
    ]
    if reach:
        out["memory.host.peak_fraction"] = max(min(1.0, p / max(1, limit)) for p, limit in reach)


def _device_peaks(records: list[Any], totals: int | None, out: dict[str, Any]) -> None:
    peak, fraction = None, None
    for record in records:
        for dev in record.devices:
            value = dev.get("peak")
            if value is None:
                continue
            peak = max(peak or 0, int(value))
            total = dev.get("total") or totals
            if total:
                fraction = max(fraction or 0.0, min(1.0, value / total))
    if peak is not None:
        out["memory.device.peak_bytes"] = peak
    if fraction is not None:
        out["memory.device.peak_fraction"] = fraction


def _nvml_total(run: Run) -> int | None:
    """The smallest GPU's memory as NVML reported it (TensorFlow's counters give no total)."""
    from advisor.analysis.facts.telemetry_samples import telemetry_context

    totals = [
        int(g["mem_total"])
        for values in telemetry_context(run).values()
        for g in values.get("telemetry.gpus", [])
        if g.get("mem_total")
    ]
    return min(totals) if totals else None


def _series(records: list[Any]) -> dict[str, tuple[list[int], list[float], float | None]]:
    """Per place (host, device): epochs, the epoch-end readings, and the headroom left."""
    host = [r for r in records if r.rss is not None]
    out: dict[str, tuple[list[int], list[float], float | None]] = {}
    if host:
        last = host[-1]
        out["host"] = ([r.epoch for r in host], [float(r.rss) for r in host], last.available)
    device = [r for r in records if r.devices and all("in_use" in d for d in r.devices)]
    if device:
        last_devices = device[-1].devices
        room = [d["total"] - d["in_use"] for d in last_devices if d.get("total")]
        out["device"] = (
            [r.epoch for r in device],
            [float(max(d["in_use"] for d in r.devices)) for r in device],
            float(min(room)) if room else None,
        )
    return out


def _stages(run: Run) -> list[Any]:
    """The tf.data pipeline's stages as the pipeline collector inspected them (source first)."""
    from advisor.store.schema import PipelineRecord

    record = run.chief_last(PipelineRecord)
    summary = (record.values.get("summary") or {}) if record is not None else {}
    stages = summary.get("stages") or [] if isinstance(summary, dict) else []
    return stages if isinstance(stages, list) else []


def _fill_reason(run: Run) -> str | None:
    stages = _stages(run)
    fills = []
    if any(s.get("kind") == "cache" and not s.get("to_file") for s in stages):
        fills.append("the input's in-memory cache() filling")
    if any(s.get("kind") == "shuffle" for s in stages):
        fills.append("a shuffle buffer filling")
    return f"growth that stopped: {' or '.join(fills)}" if fills else None


def _growth(run: Run, records: list[Any], context: dict[str, Any], out: dict[str, Any]) -> None:
    from advisor.growth import analyse, deadline
    from advisor.stats import median

    fill = _fill_reason(run)
    series = _series(records)
    found = {place: analyse(e, v, fill) for place, (e, v, _) in series.items()}
    growing = [p for p in ("host", "device") if (g := found.get(p)) is not None and g.growing]
    place = growing[0] if growing else "host"
    growth = found.get(place)
    if growth is None:
        return
    epochs, _, headroom = series[place]
    seconds = [r.seconds for r in records[1:] if r.seconds]
    epoch_s = median(seconds) if seconds else None
    out.update(
        {
            "memory.growth_mb_per_epoch": growth.rate_mb,
            "memory.growth_band_mb": growth.band_mb,
            "memory.growing": growth.growing,
            "memory.growing_in": place,
            "memory.left_out": growth.left_out,
            "memory.steady_epochs": growth.epochs,
        }
    )
    if epoch_s:
        out["memory.growth_mb_per_hour"] = growth.rate_mb * 3600.0 / epoch_s
    if not growth.growing:
        return
    due = deadline(
        growth.rate_mb, headroom or 0, epochs[-1], epoch_s, out.get("memory.planned_epochs")
    )
    if due is not None:
        out["memory.exhaustion_epoch"] = due.at_epoch
        if due.hours_left is not None:
            out["memory.hours_to_exhaustion"] = due.hours_left
        if due.before_end is not None:
            out["memory.exhausted_before_end"] = due.before_end
    out["memory.suspect"] = _suspect(records, context, run)


def _suspect(records: list[Any], context: dict[str, Any], run: Run) -> str:
    from advisor.growth import MB, attribute, unbounded_cache

    between = within = 0.0
    for before, after in zip(records, records[1:]):
        if after.rss_begin is not None and before.rss is not None and after.rss is not None:
            between += (after.rss_begin - before.rss) / MB
            within += (after.rss - after.rss_begin) / MB
    hooks = context.get("memory.callbacks") or []
    return attribute(
        between,
        within,
        after=[h["name"] for h in hooks if h.get("after")],
        before=[h["name"] for h in hooks if not h.get("after")],
        loop=run.manifest.config.get("loop") == "custom",
        hooks=context.get("memory.hook_growth") or [],
        inner=context.get("memory.inner_calls") or [],
        cache=unbounded_cache(_stages(run)),
    )
