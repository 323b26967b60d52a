"""The run-directory contract: the manifest and the record types, as pydantic models.

A run directory holds ``run.json`` (the manifest, written atomically by the chief), one
append-only ``worker-<rank>.jsonl`` per worker, and ``traces/``. Every record is one JSON object
on one line with a ``type`` and a wall-clock timestamp ``t`` (seconds since the epoch).

Within one ``SCHEMA_VERSION`` the contract only grows: new optional fields and new record types.
Readers ignore record types they do not know; a manifest with a newer ``schema_version`` is
refused (it could mean something this reader would misread).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from advisor.store.schema_base import Record, SchemaModel, Timestamp
from advisor.store.schema_budget import (
    BudgetRecord,
    CallbackTime,
    CheckpointTime,
    CompileEvent,
    CompileRecord,
    GcTime,
)
from advisor.store.schema_whatif import (
    WHATIF_CANDIDATES,
    WHATIF_CEILINGS,
    BackendRun,
    BackendsRecord,
    WhatIfCandidate,
    WhatIfRecord,
)

SCHEMA_VERSION = 1
MANIFEST_NAME = "run.json"
TRACES_DIR = "traces"
WORKER_FILE_RE = re.compile(r"^worker-(0|[1-9]\d{0,5})\.jsonl$")
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

Status = Literal["running", "finished", "failed", "terminated", "killed"]


def worker_file_name(rank: int) -> str:
    return f"worker-{rank}.jsonl"


class HostInfo(SchemaModel):
    hostname: str = ""
    platform: str = ""
    python: str = ""
    cpu_count: int | None = None
    memory_bytes: int | None = None


class FrameworkInfo(SchemaModel):
    keras_version: str | None = None
    backend: str | None = None  # tensorflow | jax | torch | numpy
    backend_version: str | None = None
    tensorflow_version: str | None = None
    legacy_keras: bool = False  # tf_keras (Keras 2) is training


class Manifest(SchemaModel):
    """``run.json``: what the run is. Written by the chief, replaced atomically."""

    schema_version: int = SCHEMA_VERSION
    run_id: str = Field(pattern=RUN_ID_RE.pattern)
    created: Timestamp
    updated: Timestamp | None = None
    ended: Timestamp | None = None
    status: Literal["running", "finished", "failed", "terminated"] = "running"
    signal: str | None = None  # "terminated": the signal that ended it (SIGTERM)
    pid: int | None = None
    hostname: str | None = None
    scope: str | None = None  # kernel boot + PID namespace of ``pid`` (see store/status.py)
    advisor_version: str | None = None
    name: str | None = None
    sweep_id: str | None = None
    framework: FrameworkInfo = Field(default_factory=FrameworkInfo)
    strategy: str | None = None
    num_workers: int = 1
    replicas: int | None = None
    all_reduce: str | None = None
    global_batch_size: int | None = None
    per_replica_batch_size: int | None = None
    steps_per_execution: int | None = None
    dtype_policy: str | None = None
    jit_compile: bool | None = None
    instance_type: str | None = None
    instance_source: str | None = None  # "argument" | "env" | "dmi" | "metadata"
    price_per_hour: float | None = None
    price_source: str | None = None  # "argument" | "table:<date>" | "pricing-api" | ...
    host: HostInfo = Field(default_factory=HostInfo)
    tags: dict[str, str] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    dropped_records: int | None = None  # records the chief lost to write errors (at close)
    end_record_lost: str | None = None  # why the chief's end record could not be written


# ---------------------------------------------------------------------------------------------
# Records (one per line in worker-<rank>.jsonl)


class StartRecord(Record):
    type: Literal["start"] = "start"
    rank: int = 0
    pid: int | None = None
    hostname: str | None = None
    scope: str | None = None  # kernel boot + PID namespace of ``pid`` (see store/status.py)
    node: str | None = None  # the cluster node of this rank (Slurm's node name, Ray's node), if any


class HeartbeatRecord(Record):
    """Written when nothing else was for a while: the writer is alive (see store/status.py)."""

    type: Literal["heartbeat"] = "heartbeat"


class EndRecord(Record):
    type: Literal["end"] = "end"
    status: Literal["finished", "failed", "terminated"] = "finished"
    signal: str | None = None  # "terminated": the signal that ended it (SIGTERM)
    advisor_seconds: float | None = None  # time spent inside the advisor's own hooks
    train_seconds: float | None = None
    dropped_records: int | None = None  # records lost to write errors (full disk, read-only store)


class WindowRecord(Record):
    """Training throughput over one wall-clock window (validation time excluded)."""

    type: Literal["window"] = "window"
    epoch: int
    seconds: float
    steps: int
    samples: int | None = None  # None (absent) when the batch size could not be learned
    step_begin: int  # optimizer iterations at the window's start
    step_end: int
    warmup: bool = False
    profiled: bool = False  # a profiler was capturing during this window (slower: not a summary)
    # Time between consecutive batch ends (one per host dispatch) within the window, seconds; a
    # window that opens an epoch counts its first step from that step's begin, not the epoch's.
    step_count: int | None = None
    step_time_mean: float | None = None
    step_time_std: float | None = None
    step_time_max: float | None = None
    step_outliers: int | None = None  # intervals above mean + 3σ of this window
    step_outlier_seconds: float | None = None  # time those intervals took beyond the mean
    # [wall clock at its begin, seconds, seconds beyond the mean] of each outlier (the first 50;
    # newer writers), to match the stalls with what ran then (saves, garbage collections).
    step_outlier_spans: list[list[float]] | None = None
    # A window that opens an epoch: from epoch begin to its first step's begin (the input
    # iterator's creation and first fill, epoch-begin callbacks). In ``seconds``, not in the steps.
    epoch_start_seconds: float | None = None
    # The part of epoch_start_seconds that the epoch's first step spent waiting for its input
    # beyond a usual step (a new iterator's shuffle buffer or cache filling, prefetch warming):
    # taken out of the step statistics, so it is not a step outlier (newer writers).
    epoch_first_wait_seconds: float | None = None
    # The part of epoch_start_seconds spent in Python's full garbage collections (newer writers).
    epoch_start_gc_seconds: float | None = None
    # Consecutive stretches of about half a second: [steps, seconds] each (the first windows of a
    # run only). A short run has too few windows to judge its stability; their slices do.
    slices: list[list[float]] | None = None


class EpochRecord(Record):
    type: Literal["epoch"] = "epoch"
    epoch: int
    seconds: float  # wall time from epoch begin to epoch end (training + validation)
    train_seconds: float
    val_seconds: float = 0.0
    steps: int
    samples: int | None = None
    val_steps: int | None = None


class FirstStepRecord(Record):
    """Time from ``on_train_begin`` to the end of the first training step (compile + first
    batch)."""

    type: Literal["first_step"] = "first_step"
    seconds: float


class ContextRecord(Record):
    """Introspection at train begin: a flat mapping of ``context.*`` values."""

    type: Literal["context"] = "context"
    values: dict[str, Any]


class EventRecord(Record):
    """A warning or an error the advisor wants people to see (collector failures, notes)."""

    type: Literal["event"] = "event"
    level: Literal["info", "warning", "error"] = "info"
    source: str
    message: str
    detail: str | None = None


# NVML clock-event reasons (the ``throttle`` bitmask of a gpu sample) that mean the GPU is held
# back — not idle, not a user setting: SW power cap, HW slowdown, SW/HW thermal, power brake.
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


class GpuSample(Record):
    type: Literal["gpu"] = "gpu"
    index: int
    util: float | None = None  # percent
    mem_util: float | None = None  # percent (memory controller busy)
    mem_used: int | None = None  # bytes
    mem_total: int | None = None
    power_w: float | None = None
    energy_j: float | None = None  # total-energy counter, joules since driver load
    temp_c: float | None = None
    sm_clock_mhz: float | None = None
    throttle: int | None = None  # NVML clock-throttle reasons bitmask
    pcie_tx_bps: float | None = None
    pcie_rx_bps: float | None = None
    # other processes with a compute context on this GPU, and the bytes they hold (recorded only
    # where NVML lists this process too, so that its PIDs are the job's own: not in a container
    # whose PIDs NVML gives as the host's)
    others_procs: int | None = None
    others_mem: int | None = None


class HostSample(Record):
    type: Literal["host"] = "host"
    cpu_percent: list[float] = Field(default_factory=list)  # per core
    iowait: float | None = None  # percent
    steal: float | None = None  # percent: a VM's CPU time its hypervisor gave to other guests
    mem_used: int | None = None
    mem_total: int | None = None
    disk_read_bps: float | None = None
    disk_write_bps: float | None = None
    net_rx_bps: float | None = None
    net_tx_bps: float | None = None
    proc_cpu_percent: float | None = None
    proc_rss: int | None = None


class MemoryRecord(Record):
    """One epoch's memory (the memory collector): the training process at the epoch's begin and
    end, its peak in between, its child processes, the memory it can still take, and each
    device's allocator counters (``{device, peak, in_use, total}``, bytes)."""

    type: Literal["memory"] = "memory"
    epoch: int
    seconds: float | None = None  # the epoch's wall time
    rss_begin: int | None = None
    rss: int | None = None  # at the epoch's end
    rss_peak: int | None = None  # the high-water mark during the epoch, where the kernel keeps it
    children_rss: int | None = None  # the input's worker processes and other children
    available: int | None = None  # what the process can still take (host, or its cgroup limit)
    devices: list[dict[str, Any]] = Field(default_factory=list)


class BaselineRecord(Record):
    """Throughputs of the input baselines: cached, real, data-only and source-cached input."""

    type: Literal["baseline"] = "baseline"
    steps: int
    batch_size: int | None = None
    real_samples_per_s: float | None = None
    cached_samples_per_s: float | None = None
    data_only_samples_per_s: float | None = None
    source_cached_samples_per_s: float | None = None
    input_kind: str | None = None  # tf.data | numpy | generator | pydataset | torch
    error: str | None = None
    mode: str | None = None  # auto | start | end | api: when it ran
    warmup_steps: int | None = None  # steps run before each measurement and not counted
    seconds: float | None = None  # wall time the whole baseline took (not training time)
    # Interleaved rounds (newer writers): samples/s of each arm per round, None where a segment
    # measured nothing; the figures above are their medians. Bands: ``advisor.noise``.
    rounds: int | None = None
    real_rounds: list[float | None] | None = None
    cached_rounds: list[float | None] | None = None
    data_only_rounds: list[float | None] | None = None
    source_cached_rounds: list[float | None] | None = None
    real_steps: int | None = None  # measured steps of the real arm, all rounds
    cached_steps: int | None = None
    measured_seconds: float | None = None  # time inside measured segments (warm-ups excluded)
    target_seconds: float | None = None  # the time asked for (``seconds=``)
    budget_seconds: float | None = None  # the budget the baseline had to stay within
    stopped: str | None = None  # why it ended before its planned rounds (e.g. the budget)
    skipped: str | None = (
        None  # why baseline="auto" did not measure (too short a fit, multi-worker…)
    )
    # The slow callbacks' batch hooks (newer writers): the cached input trained with those hooks
    # called as in the fit ("hooks" arm), beside the cached input without them. Their ratio is the
    # ceiling "without the slow callbacks' batch hooks" (docs/goodput.md).
    hooks_rounds: list[float | None] | None = None
    hooks_samples_per_s: float | None = None
    hooks_steps: int | None = None
    hooks_of: list[str] | None = None  # "Class.hook" of each hook the arm called


class PipelineRecord(Record):
    """Static inspection of the input pipeline (tf.data graph, storage)."""

    type: Literal["pipeline"] = "pipeline"
    values: dict[str, Any]


class TraceRecord(Record):
    """A profiler capture window and, once summarised, where its summary lies."""

    type: Literal["trace"] = "trace"
    path: str  # relative to the run directory
    step_begin: int | None = None
    step_end: int | None = None
    steps_marked: bool | None = None
    marked_steps: int | None = None  # step markers the capture opened (newer writers)
    summary: str | None = None  # relative path of the TraceSummary JSON
    error: str | None = None


class FactsRecord(Record):
    """Facts measured elsewhere and attached to a run (e.g. an imported trace or cloud data)."""

    type: Literal["facts"] = "facts"
    source: str
    values: dict[str, Any]


RECORD_TYPES: dict[str, type[Record]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        StartRecord,
        HeartbeatRecord,
        EndRecord,
        WindowRecord,
        EpochRecord,
        FirstStepRecord,
        ContextRecord,
        EventRecord,
        GpuSample,
        HostSample,
        MemoryRecord,
        BaselineRecord,
        WhatIfRecord,
        BackendsRecord,
        PipelineRecord,
        TraceRecord,
        FactsRecord,
        BudgetRecord,
        CompileRecord,
    )
}

__all__ = [
    "WHATIF_CANDIDATES",
    "WHATIF_CEILINGS",
    "BackendRun",
    "BackendsRecord",
    "BudgetRecord",
    "CallbackTime",
    "CheckpointTime",
    "CompileEvent",
    "CompileRecord",
    "GcTime",
    "Record",
    "Timestamp",
    "WhatIfCandidate",
    "WhatIfRecord",
]
