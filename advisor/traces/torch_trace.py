"""Summaries of torch.profiler chrome traces (``*.pt.trace.json``) as a :class:`TraceSummary`.

The Keras torch backend has no XProf profile: the profiler collector captures the window with
``torch.profiler`` and exports Kineto's chrome trace. This module reads such a trace (ours, or
one taken by hand) and fills the same summary fields as XProf does, where torch measures them:

- steps: the ``ProfilerStep#N`` ranges (the name torch's own ``profiler.step()`` uses). A step's
  *cycle* runs from its start to the next step's start, so it holds the batch fetch too: the
  torch trainer reads the batch between two steps, outside the step range.
- input share: time inside the DataLoader's ``__next__`` (every Keras input reaches the torch
  trainer through a DataLoader, arrays and tf.data included) ÷ cycle time.
- host compute share: time in which some thread of the training process runs an (outermost)
  ``cpu_op``, outside the input, ÷ cycle time; the rest of the cycle (Python, Keras, callbacks)
  is "all others".
- on a GPU: kernel, copy (``Memcpy HtoD`` / ``DtoH``), collective (NCCL) and kernel-launch shares,
  and device idle time.
- top ops by self time: host ops (their time less that of the ops they call) on a CPU trace,
  the GPU's kernels and copies on a GPU trace.

Pure Python over the JSON; nothing here imports torch.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from advisor.errors import TraceError
from advisor.traces.intervals import merge, overlap, subtract
from advisor.traces.reading import read_trace_text

TORCH_SUFFIX = ".pt.trace.json"
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def find_torch_traces(path: str | os.PathLike[str]) -> list[Path]:
    """The chrome traces of the newest profile session under ``path`` (a file or a folder)."""
    p = Path(path)
    if p.is_file():
        return [p] if p.name.endswith(TORCH_SUFFIX) else []
    if not p.is_dir():
        return []
    files = sorted(f for f in p.rglob(f"*{TORCH_SUFFIX}") if f.is_file())
    if not files:
        return []
    sessions: dict[Path, list[Path]] = {}
    for f in files:
        sessions.setdefault(f.parent, []).append(f)
    newest = max(sessions, key=lambda d: (d.name, max(f.stat().st_mtime for f in sessions[d])))
    return sessions[newest]


def summarize_torch(path: str | os.PathLike[str]) -> Any:
    """Summarise the torch chrome trace(s) at ``path``. Raises :class:`TraceError`."""
    from advisor.store.trace_summary import TraceSummary

    t0 = time.perf_counter()
    files = find_torch_traces(path)
    if not files:
        raise TraceError(f"{path}: no *{TORCH_SUFFIX} torch profiler trace here")
    trace = _load(files[0])  # one process, one file: the first worker's when there are several
    fields = summarize_events(trace.get("traceEvents") or [])
    fields["files"] = [f.name for f in files]
    fields["hosts"] = [f.name[: -len(TORCH_SUFFIX)] for f in files]
    fields["xprof_properties"] = {
        "profiler": "torch.profiler",
        "torch_schema": str(trace.get("schemaVersion", "")),
    }
    summary = TraceSummary.model_validate(fields)
    summary.seconds = time.perf_counter() - t0
    return summary


def _load(file: Path) -> dict[str, Any]:
    text = read_trace_text(
        file,
        empty_hint="was the profiler stopped before it saved?",
        large_hint="profile fewer steps",
    )
    try:
        data = json.loads(text)
    except ValueError:
        raise TraceError(f"{file}: not a readable chrome trace (truncated or not JSON)") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise TraceError(f"{file}: not a torch.profiler chrome trace (no traceEvents list)")
    return data


# ---------------------------------------------------------------------------------------------
# the analysis


def summarize_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    """TraceSummary fields from a chrome trace's events (times in µs)."""
    from advisor.traces.xprof_tables import TOP_OPS, is_copy

    spans = [e for e in events if e.get("ph") == "X" and isinstance(e.get("dur"), (int, float))]
    steps = sorted(
        (
            (int(m.group(1)), float(e["ts"]), float(e["ts"]) + float(e["dur"]), e.get("pid"))
            for e in spans
            if e.get("cat") == "user_annotation" and (m := STEP_RE.match(str(e.get("name", ""))))
        ),
        key=lambda s: s[1],
    )
    device = [e for e in spans if e.get("cat") in DEVICE_CATS]
    on_device = bool(device)
    fields: dict[str, Any] = {
        "hardware": "GPU" if on_device else "CPU_ONLY",
        "on_device": on_device,
        "device_type": "GPU" if on_device else None,
        "steps": len(steps),
        "notes": [],
    }
    host_ops = [e for e in spans if e.get("cat") == "cpu_op"]
    self_us = _self_times(host_ops)
    fields.update(_top_ops(host_ops, self_us, device, TOP_OPS, on_device))
    if on_device:
        # An aten op on a CUDA tensor only launches kernels: its host time is dispatch, and its
        # work is in the kernel rows. Which ops ran on host tensors the trace does not say.
        fields["notes"].append(
            "top ops are the GPU kernels; host ops that ran on the CPU are not told apart"
        )
    fields["top_ops_copies"] = sum(1 for op in fields["top_ops"] if is_copy(op["name"]))
    if len(steps) < 2:
        fields["notes"].append(
            "fewer than two ProfilerStep# ranges: no per-step breakdown (mark each step with "
            "torch.profiler.record_function('ProfilerStep#N') or profiler.step())"
        )
        return fields
    cycles = [(a[1], b[1]) for a, b in itertools.pairwise(steps)]  # start to next start
    total = sum(end - start for start, end in cycles)
    durations = [(end - start) / 1000.0 for start, end in cycles]
    mean = sum(durations) / len(durations)
    fields["step_time_ms_mean"] = mean
    fields["step_time_ms_std"] = (sum((d - mean) ** 2 for d in durations) / len(durations)) ** 0.5
    main_pid = steps[0][3]  # ops of every thread of the training process (autograd runs its own)
    inputs = [
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in spans
        if e.get("cat") == "user_annotation"
        and "DataLoader" in str(e.get("name"))
        and "__next__" in str(e.get("name"))
    ]
    input_us = overlap(merge(inputs), cycles)
    outer = [
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in host_ops
        if e.get("pid") == main_pid and id(e) in self_us.outermost
    ]
    op_us = overlap(subtract(merge(outer), merge(inputs)), cycles)
    pct = 100.0 / total if total > 0 else 0.0
    fields["input_percent"] = input_us * pct
    fields["host_compute_percent"] = op_us * pct
    fields["all_others_percent"] = max(0.0, total - input_us - op_us) * pct
    fields["breakdown_percent"] = {
        "input": fields["input_percent"],
        "host_compute": fields["host_compute_percent"],
        "all_others": fields["all_others_percent"],
    }
    if on_device:
        fields.update(_device_shares(spans, device, cycles, total))
    return fields


class _SelfTimes(dict):  # type: ignore[type-arg]
    """id(event) → self time (µs); ``outermost`` holds the ids of ops no other op encloses."""

    outermost: set[int]


def _self_times(ops: list[dict[str, Any]]) -> _SelfTimes:
    """Each op's duration less its direct children's, per thread (ops nest as a call stack)."""
    out = _SelfTimes()
    out.outermost = set()
    by_thread: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for e in ops:
        by_thread[(e.get("pid"), e.get("tid"))].append(e)
    for thread_ops in by_thread.values():
        thread_ops.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack: list[tuple[float, dict[str, Any]]] = []
        for e in thread_ops:
            start, dur = float(e["ts"]), float(e["dur"])
            while stack and stack[-1][0] <= start:
                stack.pop()
            out[id(e)] = dur
            if stack:
                parent = stack[-1][1]
                out[id(parent)] -= dur
            else:
                out.outermost.add(id(e))
            stack.append((start + dur, e))
    return out


def _top_ops(
    host_ops: list[dict[str, Any]],
    self_us: dict[int, float],
    device: list[dict[str, Any]],
    limit: int,
    on_device: bool,
) -> dict[str, Any]:
    """Host ops by self time on a CPU-only trace; the GPU's kernels and copies on a GPU trace."""
    host: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for e in host_ops:
        entry = host[str(e.get("name"))]
        entry[0] += 1
        entry[1] += max(0.0, self_us.get(id(e), 0.0))
    dev: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for e in device:
        entry = dev[str(e.get("name"))]
        entry[0] += 1
        entry[1] += float(e["dur"])
    rows: list[dict[str, Any]] = []
    for where, table in (("device", dev),) if on_device else (("host", host),):
        side_total = sum(v[1] for v in table.values()) or 1.0
        for name, (count, us) in table.items():
            rows.append(
                {
                    "name": name,
                    "type": _op_type(name),
                    "where": where,
                    "occurrences": int(count),
                    "self_time_ms": us / 1000.0,
                    "self_time_percent": 100.0 * us / side_total,
                    "eager": False,
                }
            )
    rows.sort(key=lambda r: -r["self_time_ms"])
    return {"top_ops": rows[:limit]}


def _op_type(name: str) -> str:
    """``aten::addmm`` → ``addmm``; kernels and others keep their name."""
    return name.split("::", 1)[1] if "::" in name else name


def _device_shares(
    spans: list[dict[str, Any]],
    device: list[dict[str, Any]],
    cycles: list[tuple[float, float]],
    total: float,
) -> dict[str, Any]:
    def ranges(pred: Any) -> list[tuple[float, float]]:
        return [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in spans if pred(e)]

    pct = 100.0 / total if total > 0 else 0.0
    busy = overlap(merge(ranges(lambda e: e.get("cat") in DEVICE_CATS)), cycles)
    kernels = ranges(lambda e: e.get("cat") == "kernel")
    nccl = ranges(lambda e: e.get("cat") == "kernel" and "nccl" in str(e.get("name")).lower())
    h2d = ranges(lambda e: e.get("cat") == "gpu_memcpy" and "htod" in str(e.get("name")).lower())
    d2h = ranges(lambda e: e.get("cat") == "gpu_memcpy" and "dtoh" in str(e.get("name")).lower())
    launch = ranges(
        lambda e: e.get("cat") == "cuda_runtime" and "launch" in str(e.get("name")).lower()
    )
    comm = overlap(merge(nccl), cycles)
    compute = overlap(subtract(merge(kernels), merge(nccl)), cycles)
    out: dict[str, Any] = {
        "device_compute_percent": compute * pct,
        "device_idle_percent": max(0.0, 100.0 - busy * pct),
        "h2d_percent": overlap(merge(h2d), cycles) * pct,
        "d2h_percent": overlap(merge(d2h), cycles) * pct,
        "kernel_launch_percent": overlap(merge(launch), cycles) * pct,
        "communication_percent": comm * pct,
        "collective_ops": sorted(
            {str(e.get("name")) for e in device if "nccl" in str(e.get("name")).lower()}
        )[:20],
    }
    return out
