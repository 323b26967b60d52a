"""The telemetry samples the GPU and host facts are taken from (``facts.telemetry``).

Per worker: its context's telemetry values, the span of its measured windows, the samples inside
that span, and one series per physical GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.store.reader import Run


def gpu_cls() -> Any:
    from advisor.store.schema import GpuSample

    return GpuSample


def host_cls() -> Any:
    from advisor.store.schema import HostSample

    return HostSample


def event_cls() -> Any:
    from advisor.store.schema import EventRecord

    return EventRecord


def telemetry_context(run: Run) -> dict[int, dict[str, Any]]:
    """Per rank: the telemetry.* and model.* values of its context records, later ones winning."""
    from advisor.store.schema import ContextRecord

    out: dict[int, dict[str, Any]] = {}
    for rank in run.ranks:
        merged: dict[str, Any] = {}
        for record in run.of_type(ContextRecord, rank=rank):
            merged.update(
                {k: v for k, v in record.values.items() if k.startswith(("telemetry.", "model."))}
            )
        if merged:
            out[rank] = merged
    return out


def measured_span(run: Run, rank: int) -> tuple[float, float] | None:
    """From the start of the first measured (post-warm-up) window to the end of the last one."""
    from advisor.store.schema import WindowRecord

    windows = [w for w in run.of_type(WindowRecord, rank=rank) if not w.warmup and w.seconds > 0]
    if not windows:
        return None
    return min(w.t - w.seconds for w in windows), max(w.t for w in windows)


def steady(samples: list[Any], span: tuple[float, float] | None, slack: float) -> list[Any]:
    """Samples inside the measured span (validation between windows included); all when too few."""
    if span is None:
        return samples
    inside = [s for s in samples if span[0] <= s.t <= span[1] + slack]
    return inside if len(inside) >= 3 else samples


def gpu_series(run: Run, info: dict[int, dict[str, Any]]) -> dict[tuple[int, int], list[Any]]:
    """GPU samples per (rank, index): one series per physical GPU, each GPU once across workers."""
    seen_uuids: set[str] = set()
    out: dict[tuple[int, int], list[Any]] = {}
    for rank in run.ranks:
        samples = run.of_type(gpu_cls(), rank=rank)
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


def values(samples: list[Any], name: str) -> list[float]:
    """The readings of one field, where the sample has one."""
    return [float(getattr(s, name)) for s in samples if getattr(s, name, None) is not None]


def mem_fractions(series: dict[tuple[int, int], list[Any]]) -> list[float]:
    """Memory used ÷ total over every sample of every series that reports both."""
    return [
        s.mem_used / s.mem_total
        for v in series.values()
        for s in v
        if s.mem_used is not None and s.mem_total
    ]
