"""Horovod's timeline (``horovodrun --timeline-filename FILE``) as a :class:`TraceSummary`.

The coordinator writes a Chrome trace: a JSON array (left open while the job runs, so often
without its closing bracket), one ``pid`` per tensor, ``B``/``E`` pairs for each activity of that
tensor. ``NEGOTIATE_ALLREDUCE`` runs from the first rank submitting the tensor until every rank
has (waiting for the slowest), then ``ALLREDUCE`` (holding ``QUEUE``, ``MEMCPY_IN_FUSION_BUFFER``,
``GLOO_ALLREDUCE`` / ``NCCL_ALLREDUCE``…) moves the data; its ``E`` event names the dtype sent.
Times are µs since ``start_time_since_epoch_in_micros`` (the first metadata event), so the
timeline lines up with the run's wall-clock windows.

Communication share = time in which some collective op (``ALLREDUCE``, ``BROADCAST``,
``ALLGATHER``…, negotiation excluded) was moving data ÷ training time: the run's measured training
windows when the run is known (warm-up and validation excluded), else the span from the first to
the last all-reduce. The negotiation share (waiting for all ranks) is kept apart. Horovod
overlaps its all-reduces with the backward pass on a thread of its own, but the timeline holds no
compute, so the overlap is not measured here.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from advisor.errors import TraceError
from advisor.traces.intervals import Interval, intersect, measure, merge
from advisor.traces.reading import read_trace_text

OPS = (
    "ALLREDUCE",
    "BROADCAST",
    "ALLGATHER",
    "ALLTOALL",
    "REDUCESCATTER",
    "ADASUM",
    "JOIN",
    "BARRIER",
)
SNIFF_BYTES = 65536


def is_horovod_timeline(path: str | os.PathLike[str]) -> bool:
    """A JSON file whose opening events are Horovod's (``NEGOTIATE_*`` or its epoch-time
    metadata)."""
    p = Path(path)
    if not p.is_file() or p.name.endswith((".pb", ".gz")):
        return False
    try:
        with open(p, encoding="utf-8", errors="replace") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    return head.lstrip().startswith("[") and (
        "NEGOTIATE_" in head or "start_time_since_epoch_in_micros" in head
    )


def load_events(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The events of a timeline, complete or cut short (a job still running, or killed)."""
    p = Path(path)
    text = read_trace_text(
        p,
        what="timeline",
        empty_hint="did the job start training?",
        large_hint="trace a shorter job",
    )
    start = text.find("[")
    if start < 0:
        raise TraceError(f"{p}: not a Horovod timeline (no JSON array of events)")
    decoder = json.JSONDecoder()
    events: list[dict[str, Any]] = []
    i, n = start + 1, len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] == "]":
            break
        try:
            event, i = decoder.raw_decode(text, i)
        except ValueError:  # a truncated last event: keep what came before
            break
        if isinstance(event, dict):
            events.append(event)
    if not events:
        raise TraceError(f"{p}: not a Horovod timeline (no readable events)")
    return events


def activities(
    events: list[dict[str, Any]],
) -> tuple[dict[str, list[Interval]], Counter[str], float, dict[Any, list[Interval]]]:
    """Intervals per activity name (absolute µs since the epoch), the ops' wire dtypes, the start
    µs, and each tensor's (pid's) all-reduce intervals."""
    start_us = 0.0
    for e in events:
        args = e.get("args") or {}
        if e.get("ph") == "M" and "start_time_since_epoch_in_micros" in args:
            start_us = float(args["start_time_since_epoch_in_micros"])
            break
    open_: dict[Any, list[tuple[str, float]]] = defaultdict(list)
    spans: dict[str, list[Interval]] = defaultdict(list)
    per_tensor: dict[Any, list[Interval]] = defaultdict(list)
    dtypes: Counter[str] = Counter()
    for e in events:
        ph = e.get("ph")
        if ph not in ("B", "E"):
            continue
        try:
            ts = start_us + float(e["ts"])
        except (KeyError, TypeError, ValueError):
            continue
        pid = e.get("pid")
        if ph == "B":
            open_[pid].append((str(e.get("name", "")), ts))
        elif open_[pid]:
            name, begun = open_[pid].pop()
            spans[name].append((begun, ts))
            if name == "ALLREDUCE":
                per_tensor[pid].append((begun, ts))
            dtype = (e.get("args") or {}).get("dtype")
            if dtype and name in OPS:
                dtypes[str(dtype)] += 1
    return spans, dtypes, start_us, per_tensor


def summarize_timeline(
    path: str | os.PathLike[str], windows_s: list[tuple[float, float]] | None = None
) -> Any:
    """Summarise a Horovod timeline; ``windows_s``: the run's training windows (wall seconds)."""
    from advisor.store.trace_summary import TraceSummary

    t0 = time.perf_counter()
    p = Path(path)
    spans, dtypes, start_us, per_tensor = activities(load_events(p))
    ops = merge(i for name in OPS for i in spans.get(name, []))
    if not ops:
        raise TraceError(
            f"{p}: the timeline holds no collective op (did training reach its first step?)"
        )
    negotiate = merge(i for name, v in spans.items() if name.startswith("NEGOTIATE_") for i in v)
    notes: list[str] = []
    windows = merge((a * 1e6, b * 1e6) for a, b in windows_s or [])
    if windows and start_us and intersect(ops, windows):
        basis = "the run's training windows"
    else:
        if windows:
            notes.append(
                "the timeline does not overlap the run's training windows: shares are of its own "
                "span"
            )
        reduces = sorted(spans.get("ALLREDUCE", [])) or ops
        windows = [(reduces[0][0], max(e for _, e in reduces))]
        basis = "the span from the first to the last all-reduce"
    span = measure(windows)
    rounds = _rounds(per_tensor, windows)
    fields: dict[str, Any] = {
        "files": [p.name],
        "hardware": "unknown",
        "on_device": False,
        "steps": len(rounds),
        "communication_percent": 100.0 * measure(intersect(ops, windows)) / span,
        "collective_ops": sorted(name for name in OPS if spans.get(name)),
        "xprof_properties": {"profiler": "horovod-timeline", "basis": basis},
        "notes": notes
        + [
            "Horovod overlaps all-reduce with the backward pass; the timeline has no compute, "
            "so the overlap is not measured"
        ],
        "horovod_negotiate_percent": 100.0 * measure(intersect(negotiate, windows)) / span,
        "horovod_wire_dtypes": dict(dtypes),
        "horovod_tensors": len(per_tensor),
    }
    if len(rounds) >= 2:
        gaps = [(b - a) / 1000.0 for a, b in zip(rounds, rounds[1:])]
        fields["step_time_ms_mean"] = statistics.fmean(gaps)
        fields["step_time_ms_std"] = statistics.pstdev(gaps)
    summary = TraceSummary.model_validate(fields)
    summary.seconds = time.perf_counter() - t0
    return summary


def _rounds(per_tensor: dict[Any, list[Interval]], windows: list[Interval]) -> list[float]:
    """Start times of the all-reduces of the tensor reduced most often inside the windows: one per
    step."""
    best: list[float] = []
    for intervals in per_tensor.values():
        starts = sorted(s for s, _ in intervals if any(a <= s < b for a, b in windows))
        if len(starts) > len(best):
            best = starts
    return best
