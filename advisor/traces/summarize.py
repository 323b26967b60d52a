"""Profile summaries: any TensorBoard / XProf profile → a typed :class:`TraceSummary`.

    summary = summarize("logs/plugins/profile/2026_01_01_12_00_00")   # or a .xplane.pb, or a run

XProf's own converter reads the ``.xplane.pb`` files (tools ``overview_page``,
``input_pipeline_analyzer``, ``framework_op_stats`` and ``trace_viewer``). It runs in a child
process (:mod:`advisor.traces.xprof_worker`) with a timeout and a memory limit, on symbolic
links in a temporary folder, so that a huge or damaged trace cannot take this process down and
nothing is ever written into the profile's own folder. This module never imports xprof.

A summary of a run's trace is saved beside the trace as ``<session>/advisor-summary.json`` and
named by a ``trace`` record; :mod:`advisor.analysis.facts.trace` turns it into ``trace.*`` facts.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from advisor.errors import TraceError
from advisor.store.trace_summary import TraceSummary

XPLANE_SUFFIX = ".xplane.pb"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MEMORY_MB = 8192
TIMEOUT_ENV = "ADVISOR_TRACE_TIMEOUT_S"
MEMORY_ENV = "ADVISOR_TRACE_MEMORY_MB"


# ---------------------------------------------------------------------------------------------
# Finding the profile


def find_xplanes(path: str | os.PathLike[str]) -> list[Path]:
    """The ``.xplane.pb`` files of one profile session under ``path`` (a file, session or logdir).

    A TensorBoard log directory can hold many sessions (``plugins/profile/<timestamp>/``): the
    newest is taken. A run directory's ``traces/`` folder is searched the same way.
    """
    p = Path(path)
    if not p.exists():
        raise TraceError(f"{p}: no such file or directory")
    if p.is_file():
        if not p.name.endswith(XPLANE_SUFFIX):
            raise TraceError(
                f"{p}: not an XProf profile (expected a *{XPLANE_SUFFIX} file or a profile folder)"
            )
        return [p]
    try:
        files = sorted(f for f in p.rglob(f"*{XPLANE_SUFFIX}") if f.is_file())
    except OSError as exc:
        raise TraceError(f"{p}: cannot list the folder ({exc.strerror or exc})") from None
    if not files:
        raise TraceError(
            f"{p}: no *{XPLANE_SUFFIX} profile in this folder "
            "(TensorBoard writes them to <logdir>/plugins/profile/<session>/<host>.xplane.pb)"
        )
    sessions: dict[Path, list[Path]] = {}
    for f in files:
        sessions.setdefault(f.parent, []).append(f)
    newest = max(sessions, key=lambda d: (d.name, max(f.stat().st_mtime for f in sessions[d])))
    return sessions[newest]


def _check_files(files: list[Path]) -> None:
    for f in files:
        try:
            size = f.stat().st_size
        except OSError as exc:
            raise TraceError(f"{f}: cannot read ({exc.strerror or exc})") from None
        if size == 0:
            raise TraceError(
                f"{f}: the profile file is empty (was the profiler stopped before it saved?)"
            )
        if not os.access(f, os.R_OK):
            raise TraceError(f"{f}: permission denied")


# ---------------------------------------------------------------------------------------------
# Summarising


def xprof_available() -> bool:
    return importlib.util.find_spec("xprof") is not None


def summarize(
    path: str | os.PathLike[str],
    *,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
) -> TraceSummary:
    """Summarise the profile at ``path``. Raises :class:`TraceError` with a one-line reason."""
    from advisor.traces.horovod_timeline import is_horovod_timeline, summarize_timeline
    from advisor.traces.torch_trace import find_torch_traces, summarize_torch

    if is_horovod_timeline(path):  # horovodrun --timeline-filename
        return summarize_timeline(path)

    if find_torch_traces(path):  # a torch.profiler chrome trace (Keras torch backend)
        try:
            find_xplanes(path)
        except TraceError:
            return summarize_torch(path)
    t0 = time.perf_counter()
    files = find_xplanes(path)
    _check_files(files)
    timeout = (
        timeout_s
        if timeout_s is not None
        else float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_S))
    )
    memory = (
        memory_mb if memory_mb is not None else int(os.environ.get(MEMORY_ENV, DEFAULT_MEMORY_MB))
    )
    where = files[0] if len(files) == 1 else files[0].parent
    with tempfile.TemporaryDirectory(prefix="advisor-trace-") as tmp:
        inputs = _stage(files, Path(tmp) / "in")
        out_dir = Path(tmp) / "out"
        out_dir.mkdir()
        result = _run_worker(inputs, out_dir, timeout, memory, where)
        tools = {p.stem: p.read_text(encoding="utf-8") for p in out_dir.glob("*.json")}
    summary = build_summary(tools, files)
    if result.returncode != 0 and "events" not in tools:
        summary.notes.append(
            f"timeline analysis failed: {_last_line(result.stderr) or f'exit {result.returncode}'}"
        )
    summary.seconds = time.perf_counter() - t0
    return summary


def _stage(files: list[Path], folder: Path) -> list[Path]:
    """Links (or copies) the profile files into a private folder: XProf may write caches there."""
    folder.mkdir(parents=True)
    staged = []
    for i, f in enumerate(files):
        target = folder / (f.name if not (folder / f.name).exists() else f"{i}-{f.name}")
        try:
            target.symlink_to(f.resolve())
        except OSError:
            shutil.copyfile(f, target)
        staged.append(target)
    return staged


def _run_worker(
    inputs: list[Path], out_dir: Path, timeout: float, memory_mb: int, where: Path
) -> subprocess.CompletedProcess[str]:
    if not xprof_available():
        raise TraceError("reading profiles needs XProf's converter: pip install xprof")
    env = dict(os.environ)
    env[MEMORY_ENV] = str(memory_mb)
    env["TF_CPP_MIN_LOG_LEVEL"] = env.get("TF_CPP_MIN_LOG_LEVEL", "2")
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "advisor.traces.xprof_worker", str(out_dir), *map(str, inputs)]
    try:
        result = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise TraceError(
            f"{where}: summarising took longer than {timeout:g} s and was stopped "
            f"(raise the limit with --timeout or {TIMEOUT_ENV})"
        ) from None
    from advisor.traces.xprof_worker import EXIT_NO_XPROF, EXIT_UNREADABLE

    produced = {p.stem for p in out_dir.glob("*.json")}
    if result.returncode == EXIT_UNREADABLE:
        raise TraceError(
            f"{where}: not a readable XProf profile (truncated or not an XSpace protobuf)"
        )
    if result.returncode == EXIT_NO_XPROF:
        raise TraceError(
            "reading profiles needs XProf's converter: pip install xprof "
            f"({_last_line(result.stderr)})"
        )
    if (
        result.returncode != 0
        and not {"overview_page", "input_pipeline_analyzer", "framework_op_stats"} <= produced
    ):
        if result.returncode < 0 or any(
            m in result.stderr for m in ("MemoryError", "bad_alloc", "allocate memory")
        ):
            raise TraceError(
                f"{where}: XProf's converter stopped (exit {result.returncode}), probably at the "
                f"memory limit of {memory_mb} MB (raise it with --memory-mb or {MEMORY_ENV})"
            )
        raise TraceError(
            f"{where}: XProf's converter failed: "
            f"{_last_line(result.stderr) or f'exit {result.returncode}'}"
        )
    return result


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def build_summary(tools: dict[str, str], files: list[Path]) -> TraceSummary:
    """A summary from the worker's output files (tool name → JSON text)."""
    from advisor.traces import xprof_tables as tt

    try:
        overview = tt.load_tables(tools["overview_page"])
        pipeline = tt.load_tables(tools.get("input_pipeline_analyzer", "[]"))
        ops = tt.load_tables(tools.get("framework_op_stats", "[]"))
        events: dict[str, Any] = json.loads(tools["events"]) if "events" in tools else {}
        meta: dict[str, Any] = json.loads(tools["meta"]) if "meta" in tools else {}
    except (KeyError, ValueError) as exc:
        raise TraceError(f"{files[0]}: XProf's converter gave unexpected output ({exc})") from None
    fields: dict[str, Any] = {}
    fields.update(tt.overview_fields(overview))
    on_device = bool(fields.get("on_device"))
    fields.update(tt.step_fields(pipeline or overview, on_device))
    fields.update(tt.input_fields(pipeline))
    fields.update(tt.op_fields(ops, on_device))
    shares = fields.get("breakdown_percent", {})
    for ours, theirs in (
        ("input_percent", "input"),
        ("host_compute_percent", "host_compute"),
        ("all_others_percent", "all_others"),
        ("compile_percent", "compile"),
        ("output_percent", "output"),
        ("kernel_launch_percent", "kernel_launch"),
        ("device_compute_percent", "device_compute"),
        ("device_collectives_percent", "device_collectives"),
    ):
        if theirs in shares:
            fields[ours] = shares[theirs]
    fields.pop("device_eager_percent", None)
    fields.pop("host_eager_op_percent", None)
    fields.pop("compute_32bit_percent", None)
    fields.pop("device_duty_cycle_percent", None)
    if events:
        for key in (
            "communication_percent",
            "communication_overlap",
            "communication_at_end",
            "h2d_percent",
            "d2h_percent",
            "eager_percent",
        ):
            if key in events:
                fields[key] = events[key]
        fields["collective_ops"] = list(events.get("collective_ops", []))
        if on_device:
            _device_fallbacks(fields, events)
    elif meta.get("events_error"):
        fields.setdefault("notes", []).append(f"timeline analysis skipped: {meta['events_error']}")
    if fields.get("steps", 0) == 0:
        # No step markers: per-step shares are meaningless. Say why.
        for key in list(fields):
            if key.endswith("_percent") and key not in (
                "compute_16bit_percent",
                "device_idle_percent",
            ):
                fields.pop(key)
        fields["breakdown_percent"] = {}
        fields.pop("communication_at_end", None)
        fields.pop("input_statement", None)
        fields.pop("input_next_step", None)
        if fields.get("input_classification") == "UNKNOWN":
            fields.pop("input_classification")
        fields.setdefault("notes", []).append(
            "XProf found no steps: each step must be wrapped in a step marker "
            "(tf.profiler.experimental.Trace('train', step_num=i, _r=1)); with steps_per_execution "
            "> 1 steps cannot be marked"
        )
    fields["files"] = [f.name for f in files]
    fields["hosts"] = [f.name[: -len(XPLANE_SUFFIX)] for f in files]
    fields["xprof_version"] = meta.get("xprof_version")
    return TraceSummary.model_validate(fields)


def _device_fallbacks(fields: dict[str, Any], events: dict[str, Any]) -> None:
    """Device numbers from the timeline where XProf's op tables have none.

    With CUDA command buffers (graphs), as JAX uses by default, XProf sees one opaque device op
    per step: no device rows in its op table, no idle share, a 16-bit share of 0. The kernels on
    the device streams are still in the timeline.
    """
    from advisor.traces.xprof_tables import TOP_OPS, count_host_ops, is_copy

    has_device_ops = any(op.get("where") == "device" for op in fields.get("top_ops", []))
    if fields.get("device_idle_percent") is None and "device_busy_percent" in events:
        fields["device_idle_percent"] = max(0.0, 100.0 - float(events["device_busy_percent"]))
    kernels = events.get("top_kernels") or []
    if has_device_ops or not kernels:
        return
    # XProf's 16-bit share needs per-op metrics it did not have here (it says 0 %). Kernel names
    # show 16-bit work only sometimes (cuBLAS "bf16" GEMMs yes, Triton or nvjet kernels no): a
    # share found in them is a lower bound, and none found is no evidence, so it stays unknown.
    fields["compute_16bit_percent"] = None
    found = float(events.get("kernel_16bit_percent") or 0.0)
    fields.setdefault("notes", []).append(
        "16-bit share of compute unknown: XProf has no per-op precision data for this profile"
        + (f" (kernel names show at least {found:.1f}% in 16-bit kernels)" if found > 0 else "")
    )
    ops = [
        {
            "name": k["name"],
            "type": "kernel",
            "where": "device",
            "occurrences": k["occurrences"],
            "self_time_ms": k["time_us"] / 1000.0,
            "self_time_percent": k["percent"],
            "eager": False,
        }
        for k in kernels
    ]
    merged = sorted(ops + list(fields.get("top_ops", [])), key=lambda op: -op["self_time_ms"])[
        :TOP_OPS
    ]
    fields["top_ops"] = merged
    fields["top_ops_host"] = count_host_ops(merged)
    fields["top_ops_copies"] = sum(1 for op in merged if is_copy(op["name"]) or is_copy(op["type"]))
    fields.setdefault("notes", []).append(
        "device ops come from the timeline's kernels (XProf's op table had none, e.g. CUDA command "
        "buffers)"
    )
