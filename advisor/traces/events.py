"""Timeline analysis of a profile (XProf's ``trace_viewer`` events): what XProf's summaries lack.

XProf's overview gives step breakdowns and op tables, but not where collective ops sit inside a
step, whether they overlap compute, or how much of a step the Python thread spends executing ops
eagerly. These come from the timeline: Chrome trace events ``{"ph": "X", "pid", "tid", "ts",
"dur", "name", "args"}`` in microseconds, as XProf's converter writes them.

Pure functions over plain dicts (no xprof import): the summariser's worker process calls
:func:`analyse_events` on the converter's output and hands back a small dict.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor.stats import median
from advisor.traces.intervals import Interval, clip, intersect, measure, merge

# Collective / communication ops across frameworks: TF (CollectiveReduceV2, NcclAllReduce,
# CollectiveGatherV2, CollectiveBcastSend...), XLA / JAX (all-reduce, all-gather,
# reduce-scatter, collective-permute, all-to-all), NCCL kernels, Horovod.
COMMUNICATION_RE = re.compile(
    r"collective|nccl|all[-_]?reduce|all[-_]?gather|reduce[-_]?scatter|all[-_]?to[-_]?all|horovod",
    re.IGNORECASE,
)
# Copies between host and device, as device-side events name them.
H2D_RE = re.compile(
    r"memcpy.*(h2d|htod)|(h2d|htod).*memcpy|host[-_ ]?to[-_ ]?device", re.IGNORECASE
)
D2H_RE = re.compile(
    r"memcpy.*(d2h|dtoh)|(d2h|dtoh).*memcpy|device[-_ ]?to[-_ ]?host", re.IGNORECASE
)
# Kernels computing in 16 bits, by the names CUDA libraries and XLA give them (bf16/fp16 GEMMs,
# half-precision tensor-core MMA). Used when XProf has no per-op precision data (e.g. JAX with
# CUDA command buffers, where XProf sees one opaque op per step).
KERNEL_16BIT_RE = re.compile(r"bf16|fp16|f16|half|hmma|h\d{3,5}gemm", re.IGNORECASE)
TOP_KERNELS = 10
# TraceMe bookkeeping of TF's collective executor: not ops, never counted as time.
_BOOKKEEPING = (
    "CollectiveExecutor::",
    "BaseCollectiveExecutor::",
    "CollectiveOpV2Kernel::",
    "ExecutorState::",
)
_EAGER_PREFIX = "EagerLocalExecute: "
# Backward-pass ops: TF gradient tapes, JAX transposed JVPs, torch autograd.
BACKWARD_RE = re.compile(r"gradient_tape/|gradients/|transpose\(jvp|backward", re.IGNORECASE)

# Communication is "bunched at the end" of a step when less than this share of the step's
# backward pass (or, where backward ops cannot be told apart, of its compute) runs after the
# step's first collective has completed (median over steps). The first *completion* is used, not
# the first start: a collective that started early may only be waiting for a slower replica.
AT_END_MAX_AFTER = 0.1


def _names(events: list[dict[str, Any]]) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    processes: dict[int, str] = {}
    threads: dict[tuple[int, int], str] = {}
    for e in events:
        if e.get("ph") != "M":
            continue
        name = (e.get("args") or {}).get("name")
        if not isinstance(name, str):
            continue
        if e.get("name") == "process_name":
            processes[e.get("pid", 0)] = name
        elif e.get("name") == "thread_name":
            threads[(e.get("pid", 0), e.get("tid", 0))] = name
    return processes, threads


def _is_device(process_name: str) -> bool:
    return process_name.startswith("/device:") and "CPU" not in process_name.split(" ")[0]


def analyse_events(trace: dict[str, Any]) -> dict[str, Any]:
    """Steps, communication placement, host↔device copies and eager time from one timeline.

    Returns a dict of plain numbers (absent keys were not measurable in this trace):
    ``steps`` (count of step markers), ``step_span_us``, ``communication_us``,
    ``communication_percent``, ``communication_overlap``, ``communication_backward_after``,
    ``communication_at_end``, ``collective_ops`` (names), ``h2d_percent``, ``d2h_percent``,
    ``device_busy_percent`` (kernels and copies on the device streams, mean over devices),
    ``kernel_16bit_percent`` and ``top_kernels`` (device kernels by time), ``eager_percent``,
    ``tf_events`` (the trace comes from TensorFlow), ``devices``.
    """
    events = trace.get("traceEvents") or []
    processes, threads = _names(events)
    timeline = _Timeline()
    for e in events:
        if e.get("ph") == "X":
            timeline.add(e, processes, threads)
    merged_steps = merge(timeline.steps)
    out: dict[str, Any] = {
        "steps": len(timeline.steps),
        "tf_events": timeline.tf_events,
        "devices": sorted({processes[p] for p in processes if _is_device(processes[p])}),
        "collective_ops": sorted(timeline.collective_names)[:20],
    }
    all_compute = merge(i for v in timeline.compute.values() for i in v)
    all_ops = merge([*all_compute, *(i for v in timeline.comm.values() for i in v)])
    if merged_steps:
        windows = merged_steps
    elif all_ops:  # no step markers: the profile's span of ops stands for one step
        windows = [(all_ops[0][0], all_ops[-1][1])]
    else:
        return out
    span = measure(windows)
    out["step_span_us"] = span
    if span <= 0:
        return out
    _communication(timeline, windows, span, all_compute, bool(merged_steps), out)
    if timeline.device_busy:
        _device_time(timeline, windows, span, out)
    if timeline.kernels:
        _kernel_time(timeline.kernels, out)
    if timeline.tf_events:
        out["eager_percent"] = 100.0 * measure(intersect(merge(timeline.eager), windows)) / span
    return out


@dataclass
class _Timeline:
    """The intervals of one trace's complete ("X") events, sorted by what they are."""

    steps: list[Interval] = field(default_factory=list)
    compute: dict[int, list[Interval]] = field(default_factory=lambda: defaultdict(list))
    backward: list[Interval] = field(default_factory=list)
    comm: dict[int, list[Interval]] = field(default_factory=lambda: defaultdict(list))
    h2d: list[Interval] = field(default_factory=list)
    d2h: list[Interval] = field(default_factory=list)
    device_busy: dict[int, list[Interval]] = field(default_factory=lambda: defaultdict(list))
    kernels: dict[str, list[float]] = field(default_factory=dict)  # name → [count, total µs]
    eager: list[Interval] = field(default_factory=list)
    collective_names: set[str] = field(default_factory=set)
    tf_events: bool = False

    def add(self, e: dict[str, Any], processes: dict[Any, str], threads: dict[Any, str]) -> None:
        try:
            start = float(e["ts"])
            end = start + float(e.get("dur", 0.0))
        except (KeyError, TypeError, ValueError):
            return
        name = str(e.get("name", ""))
        args = e.get("args") or {}
        pid = e.get("pid", 0)
        if "step_num" in args:
            self.steps.append((start, end))
            return
        if name.startswith(("EagerExecute", "TFE_Py_")):
            self.tf_events = True
        if name.startswith(_EAGER_PREFIX):
            self.tf_events = True
            if not name[len(_EAGER_PREFIX) :].startswith("__inference_"):
                self.eager.append((start, end))
            return
        if name.startswith(_BOOKKEEPING):
            return
        if _is_device(processes.get(pid, "")):
            thread = threads.get((pid, e.get("tid", 0)), "")
            # derived lines (XLA Ops, TF Ops...) repeat kernels
            if not thread.startswith("Stream") or not self._on_device(pid, name, start, end):
                return
            op_name = name
        elif "long_name" in args:  # a TF op executed by the host (CPU) executor
            op_name = str(args["long_name"])
        elif "hlo_op" in args:  # an XLA op run by the host (JAX on CPU): e.g. all-reduce.7
            op_name = str(args["hlo_op"])
        else:
            return
        if COMMUNICATION_RE.search(op_name):
            self.comm[pid].append((start, end))
            self.collective_names.add(op_name.split(":")[-1] if ":" in op_name else name)
        else:
            self.compute[pid].append((start, end))
            if BACKWARD_RE.search(op_name):
                self.backward.append((start, end))

    def _on_device(self, pid: Any, name: str, start: float, end: float) -> bool:
        """Count a device stream's event; False for a copy (not an op)."""
        self.device_busy[pid].append((start, end))
        if H2D_RE.search(name):
            self.h2d.append((start, end))
            return False
        if D2H_RE.search(name):
            self.d2h.append((start, end))
            return False
        entry = self.kernels.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += end - start
        return True


def _communication(
    timeline: _Timeline,
    windows: list[Interval],
    span: float,
    all_compute: list[Interval],
    has_steps: bool,
    out: dict[str, Any],
) -> None:
    """How much of the steps collectives take, how much compute hides them, and where they
    start in the backward pass."""
    comm = timeline.comm
    all_comm = merge(i for v in comm.values() for i in v)
    comm_in_steps = intersect(all_comm, windows)
    out["communication_us"] = measure(comm_in_steps)
    out["communication_percent"] = 100.0 * out["communication_us"] / span
    if not comm_in_steps:
        return
    overlapped = 0.0
    total = 0.0
    for pid, intervals in comm.items():
        c = intersect(merge(intervals), windows)
        k = merge(timeline.compute.get(pid, []))
        overlapped += measure(intersect(c, k))
        total += measure(c)
    if total > 0:
        out["communication_overlap"] = overlapped / total
    if has_steps:
        reference = merge(timeline.backward) or all_compute
        raw_comm = [i for v in comm.values() for i in v]
        after = _share_after_first_collective(sorted(timeline.steps), reference, raw_comm)
        if after is not None:
            out["communication_backward_after"] = after
            out["communication_at_end"] = bool(after < AT_END_MAX_AFTER)


def _device_time(
    timeline: _Timeline, windows: list[Interval], span: float, out: dict[str, Any]
) -> None:
    """Host↔device copies and device busy time, as shares of the steps."""
    out["h2d_percent"] = 100.0 * measure(intersect(merge(timeline.h2d), windows)) / span
    out["d2h_percent"] = 100.0 * measure(intersect(merge(timeline.d2h), windows)) / span
    busy = [measure(intersect(merge(v), windows)) for v in timeline.device_busy.values()]
    out["device_busy_percent"] = 100.0 * statistics.fmean(busy) / span


def _kernel_time(kernels: dict[str, list[float]], out: dict[str, Any]) -> None:
    """The share of kernel time in 16-bit kernels, and the costliest kernels."""
    total = sum(t for _, t in kernels.values())
    if total <= 0:
        return
    sixteen = sum(t for name, (_, t) in kernels.items() if KERNEL_16BIT_RE.search(name))
    out["kernel_16bit_percent"] = 100.0 * sixteen / total
    ranked = sorted(kernels.items(), key=lambda kv: -kv[1][1])[:TOP_KERNELS]
    out["top_kernels"] = [
        {"name": name, "occurrences": int(n), "time_us": t, "percent": 100.0 * t / total}
        for name, (n, t) in ranked
    ]


def _share_after_first_collective(
    steps: Sequence[Interval], work: Sequence[Interval], comm: Sequence[Interval]
) -> float | None:
    """Median over steps of the share of a step's (backward) work after its first collective ends.

    ``comm`` holds the collective ops one by one (not merged): the earliest single completion
    counts.
    """
    shares: list[float] = []
    for start, end in steps:
        ends = [e for s, e in comm if start <= s < end]
        k = clip(work, start, end)
        total = measure(k)
        if not ends or total <= 0:
            continue
        first_done = min(min(ends), end)
        shares.append(measure(clip(k, first_done, end)) / total)
    return median(shares)
