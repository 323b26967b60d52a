"""The trace summary file: what one profile says, in the advisor's terms.

``<run>/traces/<session>/advisor-summary.json`` is written by :mod:`advisor.traces` (at train
end, or later by ``advisor trace``) and read by the ``trace.*`` facts. Absent fields (None) are not
measurable in that profile. A summary from a newer advisor is refused, never misread.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from advisor.errors import TraceError
from advisor.store.writer import write_json_atomic

SUMMARY_VERSION = 1
SUMMARY_NAME = "advisor-summary.json"


class TopOp(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    type: str
    where: str  # host | device
    occurrences: int = 0
    self_time_ms: float = 0.0
    self_time_percent: float = 0.0  # of all self time on its side (host or device), idle excluded
    eager: bool = False


class TraceSummary(BaseModel):
    """What one profile says, in the advisor's terms. Absent (None) = not measurable in it."""

    model_config = ConfigDict(extra="allow")

    summary_version: int = SUMMARY_VERSION
    created: float = Field(default_factory=time.time)
    files: list[str] = Field(default_factory=list)  # xplane file names (one per host)
    hosts: list[str] = Field(default_factory=list)
    xprof_version: str | None = None
    hardware: str = "unknown"  # XProf's hardware type: CPU_ONLY, GPU, TPU...
    device_type: str | None = None
    on_device: bool = False
    steps: int = 0
    step_time_ms_mean: float | None = None
    step_time_ms_std: float | None = None
    # Shares of step time (%), from XProf's per-step breakdown.
    input_percent: float | None = None
    input_classification: str | None = None  # XProf's own: HOST, DEVICE, BOTH, ...
    input_statement: str | None = None
    input_breakdown_us: dict[str, float] = Field(default_factory=dict)
    host_compute_percent: float | None = None
    kernel_launch_percent: float | None = None
    all_others_percent: float | None = None
    compile_percent: float | None = None
    output_percent: float | None = None
    device_compute_percent: float | None = None
    device_idle_percent: float | None = None
    device_collectives_percent: float | None = None
    h2d_percent: float | None = None
    d2h_percent: float | None = None
    compute_16bit_percent: float | None = None
    eager_percent: float | None = None
    top_ops: list[TopOp] = Field(default_factory=list)
    top_ops_host: int | None = None
    top_ops_copies: int | None = None
    py_func_ops: list[str] = Field(default_factory=list)
    communication_percent: float | None = None
    communication_overlap: float | None = None
    communication_at_end: bool | None = None
    collective_ops: list[str] = Field(default_factory=list)
    breakdown_percent: dict[str, float] = Field(default_factory=dict)
    statements: dict[str, str] = Field(default_factory=dict)
    xprof_properties: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    seconds: float | None = None  # time taken to summarise

    @property
    def py_func(self) -> bool:
        return bool(self.py_func_ops)


def save_summary(summary: TraceSummary, folder: str | os.PathLike[str]) -> Path:
    """Write the summary as ``folder/advisor-summary.json`` (atomically)."""
    target = Path(folder) / SUMMARY_NAME
    try:
        write_json_atomic(target, summary.model_dump(mode="json"))
    except OSError as exc:
        raise TraceError(f"{target}: cannot write the summary ({exc.strerror or exc})") from None
    return target


class SummaryDoubt(TraceError):
    """A summary that reads but holds a value that cannot be true: the run is not judgeable."""


PERCENT_SLACK = 1e-3  # a share summed from floats may exceed 100 by a rounding error


def load_summary(path: str | os.PathLike[str], wall_seconds: float | None = None) -> TraceSummary:
    """A saved summary, read within the store's size and depth limits keeping at most
    ``KEEP_ITEMS`` entries of each list (the ops with the most self time); a newer version is
    refused (:class:`TraceError`). A value outside its range (a share outside 0…100, a step
    longer than the run's ``wall_seconds``, a non-finite number) is a :class:`SummaryDoubt`
    naming the file and the field."""
    from advisor.store.json_entries import parse_json_bounded
    from advisor.store.limits import load_versioned

    dropped: dict[str, int] = {}
    nonfinite: list[str] = []

    def parse(raw: bytes) -> Any:
        value, dropped_here, nonfinite_here = parse_json_bounded(
            raw, largest={"top_ops": "self_time_ms"}
        )
        dropped.update(dropped_here)
        nonfinite.extend(nonfinite_here)
        return value

    file = Path(path)
    summary = load_versioned(
        file,
        TraceSummary,
        what="trace summary",
        version_key="summary_version",
        known=SUMMARY_VERSION,
        error=TraceError,
        parse=parse,
        strict=True,  # a quoted number is not a number: our writers never quote one
    )
    doubt = (
        f"{nonfinite[0]} is not a finite number"
        if nonfinite
        else summary_doubt(summary, wall_seconds)
    )
    if doubt is not None:
        raise SummaryDoubt(f"{file}: {doubt}; the summary is not used")
    summary.notes.extend(
        f"{key}: {count:,} more entries than the {len(getattr(summary, key, []) or [])} read"
        for key, count in dropped.items()
    )
    return summary


def summary_doubt(summary: TraceSummary, wall_seconds: float | None = None) -> str | None:
    """Why ``summary`` cannot be a profile of its run, or None: a share outside 0…100, a
    negative count or time, a mean step that is not positive or longer than the run."""
    fields = summary.model_dump(exclude={"top_ops"})
    for name, value in fields.items():
        if name.endswith("_percent") and value is not None and not _share(value):
            return f"{name} ({value:g}) is outside 0…100"
    for name, value in summary.breakdown_percent.items():
        if not _share(value):
            return f"breakdown_percent.{name} ({value:g}) is outside 0…100"
    for name in ("steps", "step_time_ms_std", "top_ops_host", "top_ops_copies", "seconds"):
        value = fields.get(name)
        if value is not None and value < 0:
            return f"{name} is negative ({value})"
    if any(v < 0 for v in summary.input_breakdown_us.values()):
        return "input_breakdown_us holds a negative time"
    overlap = summary.communication_overlap
    if overlap is not None and not 0 <= overlap <= 1 + PERCENT_SLACK:
        return f"communication_overlap ({overlap:g}) is outside 0…1"
    mean = summary.step_time_ms_mean
    if mean is not None and mean <= 0:
        return f"step_time_ms_mean ({mean:g}) is not positive"
    if mean is not None and wall_seconds is not None and mean / 1000 > wall_seconds:
        return f"step_time_ms_mean ({mean:g} ms) is longer than the run ({wall_seconds:.0f} s)"
    for number, op in enumerate(summary.top_ops, 1):
        if not _share(op.self_time_percent):
            return (
                f"top_ops[{number}].self_time_percent ({op.self_time_percent:g}) is outside 0…100"
            )
        if op.self_time_ms < 0 or op.occurrences < 0:
            return f"top_ops[{number}] has a negative time or count"
    return None


def _share(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True  # not a number: the schema says so, not the range
    return 0 <= value <= 100 + PERCENT_SLACK
