"""The physical range of every field the reader trusts, and the invariants between fields.

:mod:`advisor.store.validate` says what no record can hold on its own (a negative count, a
percentage above 100); this module says what a record cannot hold *in its run*: a duration
longer than the run's wall clock, a timestamp outside the run's life (give or take
:data:`CLOCK_SKEW_S`), a window faster than :data:`MIN_STEP_S` a step, more samples than its
steps times the global batch; and what a manifest cannot hold: a price of zero, a global batch
that is not its replicas times the per-replica batch, a host with no CPU. A record that breaks a
range is skipped and said like any other doubt; a manifest value is read as unknown and said.
The bounds are far from anything a real run writes: they catch corrupt values, not slow ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from advisor.store.schema import (
    BaselineRecord,
    BudgetRecord,
    EndRecord,
    EpochRecord,
    FactsRecord,
    FirstStepRecord,
    GpuSample,
    HostSample,
    Manifest,
    Record,
    StartRecord,
    TraceRecord,
    WindowRecord,
)
from advisor.store.trace_summary import SUMMARY_NAME

# Clocks of one job's hosts agree within this (NTP); a record beyond it is not of this run.
CLOCK_SKEW_S = 600.0
# No training step takes less than a microsecond: a window faster than that is not a measurement.
MIN_STEP_S = 1e-6
# Pulling a batch from an input in Python is a call at least (~50 ns): a data-only rate faster than
# this is not a measurement. An in-memory Sequence that returns array views gives a batch in about
# 0.5 µs, faster than any training step, so the data-only rate has this bound, not MIN_STEP_S.
MIN_PULL_S = 1e-8
MAX_BATCH = 2**31  # samples in one global batch
MAX_REPLICAS = 2**20
MAX_CPUS = 2**20
MAX_BYTES = 2**60  # memory of one host or device
MAX_RATE_BPS = 1e13  # bytes per second through one disk, NIC or PCIe link
MAX_POWER_W = 1e4  # one accelerator
MAX_CLOCK_MHZ = 1e5
MAX_TEMP_C = 200.0
MAX_PRICE_PER_HOUR = 1e6  # dollars per hour of the whole job
MAX_STEPS_PER_EXECUTION = 2**31

# Durations that happen inside the run: none is longer than its wall clock.
_DURATIONS: dict[type[Record], tuple[str, ...]] = {
    WindowRecord: (
        "seconds",
        "step_time_mean",
        "step_time_std",
        "step_time_max",
        "step_outlier_seconds",
        "epoch_start_seconds",
    ),
    EpochRecord: ("seconds", "train_seconds", "val_seconds"),
    FirstStepRecord: ("seconds",),
    EndRecord: ("advisor_seconds", "train_seconds"),
    BaselineRecord: ("seconds", "measured_seconds"),
    BudgetRecord: ("wall_seconds",),
}
_CEILINGS: dict[type[Record], dict[str, float]] = {
    GpuSample: {
        "mem_used": MAX_BYTES,
        "mem_total": MAX_BYTES,
        "power_w": MAX_POWER_W,
        "energy_j": MAX_POWER_W * 3.2e9,  # a century at full power
        "temp_c": MAX_TEMP_C,
        "sm_clock_mhz": MAX_CLOCK_MHZ,
        "pcie_tx_bps": MAX_RATE_BPS,
        "pcie_rx_bps": MAX_RATE_BPS,
        "others_procs": MAX_CPUS,
        "others_mem": MAX_BYTES,
    },
    HostSample: {
        "mem_used": MAX_BYTES,
        "mem_total": MAX_BYTES,
        "proc_rss": MAX_BYTES,
        "disk_read_bps": MAX_RATE_BPS,
        "disk_write_bps": MAX_RATE_BPS,
        "net_rx_bps": MAX_RATE_BPS,
        "net_tx_bps": MAX_RATE_BPS,
        "proc_cpu_percent": 100.0 * MAX_CPUS,
    },
}
_BASELINE_RATES = (
    "real_samples_per_s",
    "cached_samples_per_s",
    "data_only_samples_per_s",
    "source_cached_samples_per_s",
    "hooks_samples_per_s",
)
# Written by other processes after the fit (a trace summarised later, imported facts): they may
# come after the run's end, never after now.
_LATE = frozenset({TraceRecord, FactsRecord})


@dataclass(frozen=True)
class RunBounds:
    """What a record of one run can hold: its life on the wall clock and its global batch."""

    created: float
    end: float  # the run's end (or now, while it runs)
    now: float
    global_batch: int | None = None

    @classmethod
    def of(cls, manifest: Manifest, now: float | None = None) -> RunBounds:
        """The bounds of a checked manifest (see :func:`manifest_range_doubts`)."""
        now = time.time() if now is None else now
        end = max(now, manifest.created) if manifest.ended is None else manifest.ended
        return cls(manifest.created, end, max(now, end), manifest.global_batch_size)

    @property
    def wall_seconds(self) -> float:
        """The longest any duration inside the run can be."""
        return self.end - self.created + 2 * CLOCK_SKEW_S

    def doubt(self, record: Record) -> str | None:
        """Why ``record`` cannot belong to this run (a time outside its life, a duration longer
        than it, more samples than its steps can hold); None when it can."""
        kind = type(record)
        t = record.t
        if t < self.created - CLOCK_SKEW_S:
            return f"t ({t:.0f}) is {self.created - t:.0f} s before the run was created"
        latest = self.now if kind in _LATE or kind is StartRecord else self.end
        if t > latest + CLOCK_SKEW_S:
            after = "now" if latest == self.now else "the run ended"
            return f"t ({t:.0f}) is {t - latest:.0f} s after {after}"
        values = record.__dict__
        wall = self.wall_seconds
        for name in _DURATIONS.get(kind, ()):
            value = values.get(name)
            if value is not None and value > wall:
                return f"{name} ({value:g} s) is longer than the run ({wall:.0f} s)"
        for name, ceiling in _CEILINGS.get(kind, {}).items():
            value = values.get(name)
            if value is not None and value > ceiling:
                return f"{name} ({value:g}) is above {ceiling:g}"
        if isinstance(record, (WindowRecord, EpochRecord)):
            return self._steps_doubt(record)
        if isinstance(record, (GpuSample, HostSample)):
            return _used_doubt(record.mem_used, record.mem_total)
        if isinstance(record, BudgetRecord):
            return _budget_doubt(record)
        if isinstance(record, BaselineRecord):
            return _baseline_doubt(record)
        if isinstance(record, TraceRecord) and record.summary is not None:
            name = PurePosixPath(record.summary.replace("\\", "/")).name
            if name != SUMMARY_NAME:
                return f"summary ({record.summary[:60]!r}) is not a trace summary ({SUMMARY_NAME})"
        return None

    def _steps_doubt(self, record: WindowRecord | EpochRecord) -> str | None:
        """Steps, samples and seconds that agree: each step takes time, holds a batch at most."""
        seconds = record.seconds if isinstance(record, WindowRecord) else record.train_seconds
        if record.steps > 0 and seconds < record.steps * MIN_STEP_S:
            return f"{record.steps} steps in {seconds:g} s (less than {MIN_STEP_S:g} s a step)"
        batch = self.global_batch or MAX_BATCH
        if record.samples is not None and record.samples > record.steps * batch:
            source = "global_batch_size" if self.global_batch else "the largest batch"
            return (
                f"samples ({record.samples}) is more than steps × {source} "
                f"({record.steps} × {batch})"
            )
        if isinstance(record, EpochRecord):
            slack = record.seconds * 1e-6 + 1e-3
            for name in ("train_seconds", "val_seconds"):
                if getattr(record, name) > record.seconds + slack:
                    return f"{name} is longer than the epoch's seconds ({record.seconds:g})"
            return None
        # The step times may include the step that closed the window before (a torch or
        # tf.data fit writes step_count = steps + 1 at a window's edge): one more, never two.
        if record.step_count is not None and record.step_count > record.steps + 1:
            return f"step_count ({record.step_count}) is more than steps ({record.steps}) + 1"
        if (
            record.step_outliers is not None
            and record.step_count is not None
            and record.step_outliers > record.step_count
        ):
            return f"step_outliers ({record.step_outliers}) is more than step_count"
        return None


def _used_doubt(used: int | None, total: int | None) -> str | None:
    if used is not None and total is not None and used > total:
        return f"mem_used ({used}) is more than mem_total ({total})"
    return None


def _budget_doubt(record: BudgetRecord) -> str | None:
    slack = record.wall_seconds * 1e-6 + 1e-3
    for name, value in record.seconds.items():
        if value > record.wall_seconds + slack:
            return f"seconds.{name} ({value:g}) is longer than wall_seconds"
    return None


def baseline_rate_ceiling(name: str, batch_size: int | None) -> float:
    """The fastest a baseline's ``name`` rate (samples/s) can be: a batch a microsecond for the
    arms that train (:data:`MIN_STEP_S`), a batch in :data:`MIN_PULL_S` for the input alone
    (``data_only_*``)."""
    floor = MIN_PULL_S if name.startswith("data_only") else MIN_STEP_S
    return (batch_size or MAX_BATCH) / floor


def _baseline_doubt(record: BaselineRecord) -> str | None:
    for name in _BASELINE_RATES:
        value = getattr(record, name)
        if value is not None and value > baseline_rate_ceiling(name, record.batch_size):
            per = "in 10 ns" if name.startswith("data_only") else "a microsecond"
            return f"{name} ({value:g}) is more than a batch {per}"
    return None


def manifest_range_doubts(manifest: Manifest) -> dict[str, Any]:
    """The manifest's values outside their range, or that disagree with each other, each
    mapped to ``(the value it is read as, why)``: a price of zero or above any job's, a batch or
    replica count beyond any machine's, a global batch that is not replicas × per-replica batch
    (which ``//`` rounds down), a host with no CPU."""
    out: dict[str, Any] = {}
    price = manifest.price_per_hour
    if price is not None and price < 0:
        out["price_per_hour"] = (None, f"price_per_hour is negative ({price})")
    elif price is not None and (price == 0 or price > MAX_PRICE_PER_HOUR):
        out["price_per_hour"] = (None, f"price_per_hour ({price:g}) is outside (0, 1e6] $/h")
    for name in ("replicas", "global_batch_size", "per_replica_batch_size", "steps_per_execution"):
        value = getattr(manifest, name)
        if value is not None and value < 1:
            out[name] = (None, f"{name} is below 1 ({value})")
    ceilings = {
        "replicas": MAX_REPLICAS,
        "global_batch_size": MAX_BATCH,
        "per_replica_batch_size": MAX_BATCH,
        "steps_per_execution": MAX_STEPS_PER_EXECUTION,
    }
    for name, ceiling in ceilings.items():
        value = getattr(manifest, name)
        if value is not None and value > ceiling:
            out[name] = (None, f"{name} ({value}) is above {ceiling}")
    replicas, batch = manifest.replicas, manifest.global_batch_size
    per_replica = manifest.per_replica_batch_size
    if out.keys().isdisjoint({"replicas", "global_batch_size", "per_replica_batch_size"}):
        if replicas and batch and replicas > batch:
            out["replicas"] = (None, f"replicas ({replicas}) is more than global_batch_size")
        elif replicas and batch and per_replica and batch // replicas != per_replica:
            why = (
                f"global_batch_size ({batch}) is not replicas × per_replica_batch_size "
                f"({replicas} × {per_replica})"
            )
            for name in ("replicas", "global_batch_size", "per_replica_batch_size"):
                out[name] = (None, why)
        elif batch and per_replica and per_replica > batch:
            out["per_replica_batch_size"] = (None, "per_replica_batch_size is above the global")
    host = manifest.host
    for name, ceiling in (("cpu_count", MAX_CPUS), ("memory_bytes", MAX_BYTES)):
        value = getattr(host, name)
        if value is not None and not 1 <= value <= ceiling:
            out[f"host.{name}"] = (None, f"host.{name} ({value}) is outside 1…{ceiling}")
    return out
