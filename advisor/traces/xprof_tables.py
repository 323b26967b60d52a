"""Reading XProf's tool output (Google-charts DataTables as JSON) into summary fields.

XProf's tools answer with lists of tables ``{"cols": [{"id"...}], "rows": [{"c": [{"v": ...}]}],
"p": {properties}}``; numbers inside ``p`` are strings such as ``"78.1%"`` or ``"5.6"``. The
functions here turn them into plain values. Step shares are recomputed from the per-step rows
(exact) rather than from XProf's rounded strings.

Device-side quantities (device compute, idle, copies, 16-bit share, kernel launch) are left out
for CPU-only profiles: XProf fills them with zeros there, and a zero that was never measured
would read as a measurement.
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

PY_FUNC_TYPES = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})
COPY_MARKERS = (
    "memcpy",
    "copytodevice",
    "copyfromdevice",
    "_send",
    "_recv",
    "h2d",
    "d2h",
    "htod",
    "dtoh",
)
TOP_OPS = 10
# Host-side rows that are not model ops falling back to the CPU: the input pipeline (host by
# design, judged by the input rules) and runtime plumbing (PJRT's host callbacks under JAX).
HOST_PLUMBING_TYPES = frozenset(
    {"Dataset", "IDLE", "ThenExecuteCallback", "GetEventForComputeStreamSyncPoint"}
)

# Per-step columns of XProf's step-time table → our names.
STEP_COLUMNS = {
    "deviceComputeTimeMs": "device_compute",
    "deviceToDeviceTimeMs": "device_to_device",
    "deviceCollectivesTimeMs": "device_collectives",
    "hostComputeTimeMs": "host_compute",
    "kernelLaunchTimeMs": "kernel_launch",
    "infeedTimeMs": "input",
    "outfeedTimeMs": "output",
    "compileTimeMs": "compile",
    "otherTimeMs": "all_others",
}


def load_tables(text: str) -> list[dict[str, Any]]:
    data = json.loads(text)
    if isinstance(data, dict):
        data = [data]
    return [t if isinstance(t, dict) else {} for t in data]


def rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    """Table rows as dicts keyed by column id."""
    ids = [c.get("id", "") for c in table.get("cols", [])]
    out = []
    for row in table.get("rows", []):
        cells = row.get("c", [])
        out.append({ids[i]: (cell or {}).get("v") for i, cell in enumerate(cells) if i < len(ids)})
    return out


def number(text: Any) -> float | None:
    """``"78.1%"``, ``"5.6"``, ``3`` → float; anything else → None."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text) if math.isfinite(text) else None
    if not isinstance(text, str):
        return None
    try:
        value = float(text.strip().rstrip("%").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _find(tables: list[dict[str, Any]], column: str) -> dict[str, Any] | None:
    for table in tables:
        if any(c.get("id") == column for c in table.get("cols", [])):
            return table
    return None


def _props(tables: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for table in tables:
        for key, value in (table.get("p") or {}).items():
            merged.setdefault(key, value)
    return merged


def step_fields(input_tables: list[dict[str, Any]], on_device: bool) -> dict[str, Any]:
    """Steps found, step time mean/σ and the per-category shares of step time."""
    table = _find(input_tables, "stepTimeMs") or _find(input_tables, "stepnum")
    out: dict[str, Any] = {"steps": 0}
    if table is None:
        return out
    steps = [r for r in rows(table) if number(r.get("stepTimeMs")) is not None]
    out["steps"] = len(steps)
    if not steps:
        return out
    times = [float(r["stepTimeMs"]) for r in steps]
    total = sum(times)
    out["step_time_ms_mean"] = statistics.fmean(times)
    out["step_time_ms_std"] = statistics.pstdev(times) if len(times) > 1 else 0.0
    if total <= 0:
        return out
    shares: dict[str, float] = {}
    for column, name in STEP_COLUMNS.items():
        values = [number(r.get(column)) for r in steps]
        if all(v is None for v in values):
            continue
        shares[name] = 100.0 * sum(v or 0.0 for v in values) / total
    device_only = {"device_compute", "device_to_device", "device_collectives", "kernel_launch"}
    out["breakdown_percent"] = {
        k: v for k, v in shares.items() if on_device or k not in device_only
    }
    return out


def input_fields(input_tables: list[dict[str, Any]]) -> dict[str, Any]:
    props = _props(input_tables)
    out: dict[str, Any] = {}
    for key in ("input_conclusion", "summary_nextstep"):
        if props.get(key):
            out["input_statement" if key == "input_conclusion" else "input_next_step"] = props[key]
    breakdown = {}
    for key in (
        "demanded_file_read_us",
        "advanced_file_read_us",
        "preprocessing_us",
        "enqueue_us",
        "unclassified_nonequeue_us",
    ):
        value = number(props.get(key))
        if value is not None:
            breakdown[key[:-3]] = value
    if breakdown:
        out["input_breakdown_us"] = breakdown
    return out


def overview_fields(overview_tables: list[dict[str, Any]]) -> dict[str, Any]:
    props = _props(overview_tables)
    out: dict[str, Any] = {}
    hardware = props.get("hardware_type") or ""
    device_type = props.get("device_type") or ""
    out["hardware"] = hardware or ("CPU_ONLY" if device_type == "CPU" else device_type or "unknown")
    out["device_type"] = device_type or None
    on_device = out["hardware"] not in ("CPU_ONLY", "unknown", "")
    out["on_device"] = on_device
    classification = props.get("bottleneck") or props.get("input_classification")
    if isinstance(classification, str) and classification:
        out["input_classification"] = classification.upper()
    for key in (
        "statement",
        "all_other_statement",
        "kernel_launch_statement",
        "precision_statement",
        "device_collectives_statement",
    ):
        if props.get(key):
            out.setdefault("statements", {})[key] = props[key]
    if on_device:
        for ours, theirs in (
            ("device_idle_percent", "device_idle_time_percent"),
            ("compute_16bit_percent", "device_compute_16bit_percent"),
            ("compute_32bit_percent", "device_compute_32bit_percent"),
            ("device_eager_percent", "device_op_time_eager_percent"),
            ("device_duty_cycle_percent", "device_duty_cycle_percent"),
        ):
            value = number(props.get(theirs))
            if value is not None:
                out[ours] = value
    value = number(props.get("host_op_time_eager_percent"))
    if value is not None:
        out["host_eager_op_percent"] = value
    # Everything XProf said, for people who want to look further (and for later rules).
    out["xprof_properties"] = {
        k: v for k, v in props.items() if isinstance(v, str) and len(v) < 400
    }
    return out


def op_fields(op_tables: list[dict[str, Any]], on_device: bool) -> dict[str, Any]:
    """Top ops (XProf's ranking, idle excluded), py-func ops, the op types seen."""
    candidates = [t for t in op_tables if _find([t], "operation")]
    # XProf gives the table twice, with and without IDLE; take the one without.
    table = next((t for t in candidates if not any(r.get("type") == "IDLE" for r in rows(t))), None)
    if table is None and candidates:
        table = candidates[0]
    out: dict[str, Any] = {"top_ops": [], "py_func_ops": [], "op_count": 0}
    if table is None:
        return out
    all_rows = [r for r in rows(table) if r.get("type") != "IDLE" and r.get("operation") != "IDLE"]
    all_rows.sort(key=lambda r: number(r.get("rank")) or math.inf)
    out["op_count"] = len(all_rows)
    host_total = sum(
        number(r.get("total_self_time")) or 0.0 for r in all_rows if _where(r) == "host"
    )
    device_total = sum(
        number(r.get("total_self_time")) or 0.0 for r in all_rows if _where(r) == "device"
    )
    top: list[dict[str, Any]] = []
    for r in all_rows[:TOP_OPS]:
        where = _where(r)
        self_us = number(r.get("total_self_time")) or 0.0
        side_total = device_total if where == "device" else host_total
        top.append(
            {
                "name": str(r.get("operation") or ""),
                "type": str(r.get("type") or ""),
                "where": where,
                "occurrences": int(number(r.get("occurrences")) or 0),
                "self_time_ms": self_us / 1000.0,
                "self_time_percent": 100.0 * self_us / side_total if side_total > 0 else 0.0,
                "eager": str(r.get("eager") or "").lower() == "eager",
            }
        )
    out["top_ops"] = top
    out["py_func_ops"] = sorted(
        {str(r.get("operation")) for r in all_rows if r.get("type") in PY_FUNC_TYPES}
    )
    out["top_ops_host"] = count_host_ops(top) if on_device else None
    out["top_ops_copies"] = sum(
        1 for op in top if is_copy(str(op["type"])) or is_copy(str(op["name"]))
    )
    return out


def _where(row: dict[str, Any]) -> str:
    return "device" if str(row.get("host_or_device", "")).lower() == "device" else "host"


def count_host_ops(top: list[dict[str, Any]]) -> int:
    """Host-side model ops among the top ops (input pipeline and runtime plumbing left out)."""
    return sum(
        1
        for op in top
        if op["where"] == "host"
        and op["type"] not in HOST_PLUMBING_TYPES
        and op["name"] not in HOST_PLUMBING_TYPES
        and not str(op["name"]).startswith("Iterator::")
    )


def is_copy(name: str) -> bool:
    lowered = name.lower()
    return any(marker in lowered for marker in COPY_MARKERS)
