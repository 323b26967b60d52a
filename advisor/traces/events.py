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
    steps: list[Interval] = []
    compute: dict[int, list[Interval]] = defaultdict(list)
    backward: list[Interval] = []
    comm: dict[int, list[Interval]] = defaultdict(list)
    h2d: list[Interval] = []
    d2h: list[Interval] = []
    device_busy: dict[int, list[Interval]] = defaultdict(list)
    kernels: dict[str, list[float]] = {}  # name → [count, total µs]
    eager: list[Interval] = []
    collective_names: set[str] = set()
    tf_events = False
    for e in events:
        if e.get("ph") != "X":
            continue
        try:
            start = float(e["ts"])
            end = start + float(e.get("dur", 0.0))
        except (KeyError, TypeError, ValueError):
            continue
        name = str(e.get("name", ""))
        args = e.get("args") or {}
        pid = e.get("pid", 0)
        if "step_num" in args:
            steps.append((start, end))
            continue
        if name.startswith(("EagerExecute", "TFE_Py_")):
            tf_events = True
        if name.startswith(_EAGER_PREFIX):
            tf_events = True
            if not name[len(_EAGER_PREFIX) :].startswith("__inference_"):
                eager.append((start, end))
            continue
        if name.startswith(_BOOKKEEPING):
            continue
        process = processes.get(pid, "")
        on_device = _is_device(process)
        if on_device:
            thread = threads.get((pid, e.get("tid", 0)), "")
            if not thread.startswith("Stream"):  # derived lines (XLA Ops, TF Ops...) repeat kernels
                continue
            device_busy[pid].append((start, end))
            if H2D_RE.search(name):
                h2d.append((start, end))
                continue
            if D2H_RE.search(name):
                d2h.append((start, end))
                continue
            op_name = name
            entry = kernels.setdefault(name, [0, 0.0])
            entry[0] += 1
            entry[1] += end - start
        elif "long_name" in args:  # a TF op executed by the host (CPU) executor
            op_name = str(args["long_name"])
        elif "hlo_op" in args:  # an XLA op run by the host (JAX on CPU): e.g. all-reduce.7
            op_name = str(args["hlo_op"])
        else:
            continue
        if COMMUNICATION_RE.search(op_name):
            comm[pid].append((start, end))
            collective_names.add(op_name.split(":")[-1] if ":" in op_name else name)
        else:
            compute[pid].append((start, end))
            if BACKWARD_RE.search(op_name):
                backward.append((start, end))

    merged_steps = merge(steps)
    out: dict[str, Any] = {
        "steps": len(steps),
        "tf_events": tf_events,
        "devices": sorted({processes[p] for p in processes if _is_device(processes[p])}),
        "collective_ops": sorted(collective_names)[:20],
    }
    all_compute = merge(i for v in compute.values() for i in v)
    all_ops = merge([*all_compute, *(i for v in comm.values() for i in v)])
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

    all_comm = merge(i for v in comm.values() for i in v)
    comm_in_steps = intersect(all_comm, windows)
    out["communication_us"] = measure(comm_in_steps)
    out["communication_percent"] = 100.0 * out["communication_us"] / span
    if comm_in_steps:
        overlapped = 0.0
        total = 0.0
        for pid, intervals in comm.items():
            c = intersect(merge(intervals), windows)
            k = merge(compute.get(pid, []))
            overlapped += measure(intersect(c, k))
            total += measure(c)
        if total > 0:
            out["communication_overlap"] = overlapped / total
        if merged_steps:
            reference = merge(backward) or all_compute
            raw_comm = [i for v in comm.values() for i in v]
            after = _share_after_first_collective(sorted(steps), reference, raw_comm)
            if after is not None:
                out["communication_backward_after"] = after
                out["communication_at_end"] = bool(after < AT_END_MAX_AFTER)
    if device_busy:
        out["h2d_percent"] = 100.0 * measure(intersect(merge(h2d), windows)) / span
        out["d2h_percent"] = 100.0 * measure(intersect(merge(d2h), windows)) / span
        busy = [measure(intersect(merge(v), windows)) for v in device_busy.values()]
        out["device_busy_percent"] = 100.0 * statistics.fmean(busy) / span
    if kernels:
        total = sum(t for _, t in kernels.values())
        if total > 0:
            sixteen = sum(t for name, (_, t) in kernels.items() if KERNEL_16BIT_RE.search(name))
            out["kernel_16bit_percent"] = 100.0 * sixteen / total
            ranked = sorted(kernels.items(), key=lambda kv: -kv[1][1])[:TOP_KERNELS]
            out["top_kernels"] = [
                {"name": name, "occurrences": int(n), "time_us": t, "percent": 100.0 * t / total}
                for name, (n, t) in ranked
            ]
    if tf_events:
        out["eager_percent"] = 100.0 * measure(intersect(merge(eager), windows)) / span
    return out


def _share_after_first_collective(
    steps: Sequence[Interval], work: Sequence[Interval], comm: Sequence[Interval]
) -> float | None:
    """Median over steps of the share of a step's (backward) work after its first collective ends.

    ``comm`` holds the collective ops one by one (not merged): the earliest single completion counts.
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
