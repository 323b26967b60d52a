"""The trace summary file: what one profile says, in the advisor's terms.

``<run>/traces/<session>/advisor-summary.json`` is written by :mod:`advisor.traces` (at train
end, or later by ``advisor trace``) and read by the ``trace.*`` facts. Absent fields (None) are not
measurable in that profile. A summary from a newer advisor is refused, never misread.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

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


def load_summary(path: str | os.PathLike[str]) -> TraceSummary:
    """A saved summary, read within the store's size and depth limits; a newer version is
    refused."""
    from advisor.store.limits import load_versioned

    return load_versioned(
        Path(path),
        TraceSummary,
        what="trace summary",
        version_key="summary_version",
        known=SUMMARY_VERSION,
        error=TraceError,
    )
