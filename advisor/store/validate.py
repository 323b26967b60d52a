"""Semantic checks of records read back: what parses but cannot be true.

The schema says what a record looks like; these checks say whether its values can have been
measured: counts and durations are never negative, a percentage stays within 0…100, a window's
steps are its step range, a worker's clock does not jump back and its windows do not overlap,
and no line is written twice. A record that fails is skipped and reported by the reader (the
tolerant-reader rule: skip, count, say), so a corrupt value never turns into a confident figure.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from advisor.store.limits import MAX_WORKER_FILES
from advisor.store.ranges import manifest_range_doubts
from advisor.store.schema import (
    MANIFEST_NAME,
    RUN_ID_RE,
    BaselineRecord,
    BudgetRecord,
    ContextRecord,
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
    worker_file_name,
)
from advisor.store.status import WorkerState

# A worker's wall clock may be stepped back a little (NTP); more than this is not a clock.
CLOCK_STEP_BACK_S = 10.0

_NON_NEGATIVE: dict[type[Record], tuple[str, ...]] = {
    WindowRecord: (
        "epoch",
        "seconds",
        "steps",
        "samples",
        "step_begin",
        "step_end",
        "step_count",
        "step_time_mean",
        "step_time_std",
        "step_time_max",
        "step_outliers",
        "step_outlier_seconds",
        "epoch_start_seconds",
    ),
    EpochRecord: (
        "epoch",
        "seconds",
        "train_seconds",
        "val_seconds",
        "steps",
        "samples",
        "val_steps",
    ),
    FirstStepRecord: ("seconds",),
    EndRecord: ("advisor_seconds", "train_seconds", "dropped_records"),
    BaselineRecord: (
        "steps",
        "batch_size",
        "real_samples_per_s",
        "cached_samples_per_s",
        "data_only_samples_per_s",
        "source_cached_samples_per_s",
        "warmup_steps",
        "seconds",
        "rounds",
        "real_steps",
        "cached_steps",
        "measured_seconds",
        "target_seconds",
        "budget_seconds",
        "hooks_samples_per_s",
        "hooks_steps",
    ),
    GpuSample: (
        "index",
        "util",
        "mem_util",
        "mem_used",
        "mem_total",
        "power_w",
        "energy_j",
        "sm_clock_mhz",
        "throttle",
        "pcie_tx_bps",
        "pcie_rx_bps",
        "others_procs",
        "others_mem",
    ),
    HostSample: (
        "iowait",
        "steal",
        "mem_used",
        "mem_total",
        "disk_read_bps",
        "disk_write_bps",
        "net_rx_bps",
        "net_tx_bps",
        "proc_cpu_percent",
        "proc_rss",
    ),
    BudgetRecord: ("wall_seconds", "steps"),
}


def _getter(names: tuple[str, ...]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """The values of ``names`` from a record's ``__dict__``, as a tuple, in one C call."""
    get = operator.itemgetter(*names)
    return get if len(names) > 1 else lambda d: (get(d),)


_GETTERS = {kind: _getter(names) for kind, names in _NON_NEGATIVE.items()}
_KNOWN = functools.partial(operator.is_not, None)  # a written value (not None), tested in C
_PERCENT: dict[type[Record], tuple[str, ...]] = {
    GpuSample: ("util", "mem_util"),
    HostSample: ("iowait", "steal"),
}
# Attached later by other processes (trace, facts), or stamped when the writer opened, before
# the records it was handed (start): these do not move a worker's clock.
_UNORDERED = frozenset({TraceRecord, FactsRecord, StartRecord})
_ROUNDS = (
    "real_rounds",
    "cached_rounds",
    "data_only_rounds",
    "source_cached_rounds",
    "hooks_rounds",
)


def record_doubt(record: Record) -> str | None:
    """Why ``record`` cannot be a measurement (a negative count, a percentage above 100, a
    window whose steps are not its step range); None when nothing is wrong with it alone."""
    kind = type(record)
    names = _NON_NEGATIVE.get(kind)
    # min over the written values in C (a week-long run has 60,000 windows); names only on failure
    if names and min(filter(_KNOWN, _GETTERS[kind](record.__dict__)), default=0) < 0:
        name, value = next(
            (n, v)
            for n, v in zip(names, _GETTERS[kind](record.__dict__), strict=True)
            if v is not None and v < 0
        )
        return f"{name} is negative ({value})"
    for name in _PERCENT.get(kind, ()):
        value = getattr(record, name, None)
        if value is not None and value > 100:
            return f"{name} is above 100% ({value})"
    if isinstance(record, WindowRecord):
        if record.step_end - record.step_begin != record.steps:
            return (
                f"steps ({record.steps}) is not step_end - step_begin "
                f"({record.step_end} - {record.step_begin})"
            )
        for pair in record.slices or ():
            if any(v < 0 for v in pair):
                return "a slice is negative"
    elif isinstance(record, HostSample):
        if any(not 0 <= v <= 100 for v in record.cpu_percent):
            return "a core's cpu_percent is outside 0…100"
    elif isinstance(record, BudgetRecord):
        negative = next(
            (k for k, v in record.seconds.items() if v < 0 and k != "unaccounted"), None
        )
        if negative is not None:
            return f"seconds.{negative} is negative"
    elif isinstance(record, BaselineRecord):
        for name in _ROUNDS:
            if any(v is not None and v < 0 for v in getattr(record, name) or ()):
                return f"{name} holds a negative throughput"
    return None


@dataclass
class WorkerOrder:
    """The order of one worker's records: its clock, its windows' step ranges, its lines."""

    latest_t: float = -math.inf
    window_end: int = -1
    seen: dict[int, int] = field(default_factory=dict)  # hash of a line → its line number

    def doubt(self, record: Record, line: bytes, number: int) -> str | None:
        """Why ``record`` (line ``number``) does not follow the records before it, or None."""
        first = self.seen.setdefault(hash(line), number)
        if first != number:
            return f"repeats line {first}"
        kind = type(record)
        if kind not in _UNORDERED:
            t = record.t
            if t < self.latest_t - CLOCK_STEP_BACK_S:
                return f"its time goes back {self.latest_t - t:.0f} s"
            if t > self.latest_t:
                self.latest_t = t
        if isinstance(record, WindowRecord):
            if record.step_begin < self.window_end:
                return (
                    f"its steps {record.step_begin}–{record.step_end} overlap the previous "
                    f"window's (up to {self.window_end})"
                )
            self.window_end = record.step_end
        return None


def checked_manifest(
    manifest: Manifest, nonfinite: tuple[str, ...] = ()
) -> tuple[Manifest, list[str], list[str]]:
    """The manifest with values that cannot be true read as unknown (None), and why: a negative
    price, a batch or replica count below one, a run that ended before it was created, a value
    outside its range (:func:`advisor.store.ranges.manifest_range_doubts`) or not finite
    (``nonfinite``: the fields whose NaN or Infinity were read as missing) are doubts about the
    measurement; a ``num_workers`` below one reads as one. A ``sweep_id`` that is no sweep id
    (sweep ids are run-id prefixes) only loses the sweep link: a note, not a doubt."""
    changes: dict[str, Any] = {}
    doubts: list[str] = []
    notes: list[str] = []
    if manifest.sweep_id is not None and not RUN_ID_RE.match(manifest.sweep_id):
        changes["sweep_id"] = None
        shown = (
            manifest.sweep_id if len(manifest.sweep_id) <= 40 else manifest.sweep_id[:37] + "..."
        )
        notes.append(
            f"sweep_id {shown!r} is not a sweep id (letters, digits, '.', '_', '-', at most "
            "128); the run is read without its sweep"
        )
    if manifest.num_workers < 1:
        changes["num_workers"] = 1
        doubts.append(f"num_workers is below 1 ({manifest.num_workers})")
    for name in ("updated", "ended"):
        value = getattr(manifest, name)
        if value is not None and value < manifest.created - CLOCK_STEP_BACK_S:
            changes[name] = None
            doubts.append(f"{name} is before created")
    doubts.extend(f"{name} is not a finite number" for name in nonfinite)
    host: dict[str, Any] = {}
    for name, (value, why) in manifest_range_doubts(manifest).items():
        if name.startswith("host."):
            host[name.removeprefix("host.")] = value
        elif name not in changes:
            changes[name] = value
        if why not in doubts:
            doubts.append(why)
    if host:
        changes["host"] = manifest.host.model_copy(update=host)
    return (manifest.model_copy(update=changes) if changes else manifest), doubts, notes


def missing_records(records: list[Record]) -> list[str]:
    """Records of one worker that must have been written but are not there: a window between
    two windows of the same epoch (their step ranges leave a gap; windows of one epoch follow
    each other without one), windows that hold fewer steps than their epoch record counts (the
    windows of an epoch tile it), an epoch record between two epochs that have theirs. An
    epoch's only windows, or the last epoch record, can go missing without a trace."""
    if _dropped(records):  # the writer counted what it lost: that explains what is missing
        return []
    out: list[str] = []
    previous: WindowRecord | None = None
    window_steps: dict[int, int] = {}  # epoch → the steps its windows hold
    gapped: set[int] = set()  # epochs with a gap already said
    epochs: list[EpochRecord] = []
    for record in records:
        if isinstance(record, EpochRecord):
            epochs.append(record)
        if not isinstance(record, WindowRecord):
            continue
        window_steps[record.epoch] = window_steps.get(record.epoch, 0) + record.steps
        if (
            previous is not None
            and previous.epoch == record.epoch
            and record.step_begin > previous.step_end
        ):
            gapped.add(record.epoch)
            out.append(
                f"epoch {record.epoch}: steps {previous.step_end}–{record.step_begin} are in no "
                "window (a window record is missing)"
            )
        previous = record
    for epoch in epochs:
        if (
            epoch.epoch not in gapped
            and 0 < window_steps.get(epoch.epoch, epoch.steps) < epoch.steps
        ):
            out.append(
                f"epoch {epoch.epoch}: its windows hold {window_steps[epoch.epoch]} of its "
                f"{epoch.steps} steps (a window record is missing)"
            )
    window_epochs = set(window_steps)
    ended = {e.epoch for e in epochs}
    if ended:
        gaps = sorted(e for e in window_epochs if e not in ended and e < max(ended))
        if gaps:
            out.append(
                f"epoch {gaps[0]}{' and more' if len(gaps) > 1 else ''} has windows but no epoch "
                "record, although later epochs have theirs (an epoch record is missing)"
            )
    return out


def missing_at_the_edges(config: dict[str, Any], records: list[Record], chief: bool) -> list[str]:
    """Records that the advisor's own writers always write, missing from a worker that trained
    (it has windows): the chief's context record (train begin; the context collector is on
    unless ``collectors`` leaves it out, and a custom loop always writes one), and, for a fit
    that finished, the epoch record of its last epoch (Keras ends every epoch it began, also
    when training stops early). Runs written by other tools (no ``config``, or imported) are
    not held to this."""
    if (
        not config
        or config.get("imported_from")
        or _dropped(records)
        or not any(isinstance(r, WindowRecord) for r in records)
    ):
        return []
    out: list[str] = []
    custom = config.get("loop") == "custom"
    collectors = config.get("collectors")
    context_on = (
        custom or collectors is None or (isinstance(collectors, list) and "context" in collectors)
    )
    if chief and context_on and not any(isinstance(r, ContextRecord) for r in records):
        out.append("no context record, though the context collector was on (a record is missing)")
    end = next((r for r in reversed(records) if isinstance(r, EndRecord)), None)
    if not custom and end is not None and end.status == "finished":
        last = max(r.epoch for r in records if isinstance(r, WindowRecord))
        if not any(isinstance(r, EpochRecord) and r.epoch == last for r in records):
            out.append(
                f"epoch {last} has windows but no epoch record, although the fit finished "
                "(an epoch record is missing)"
            )
    return out


def missing_ends(
    manifest: Manifest, records: dict[int, list[Record]], workers: dict[int, WorkerState]
) -> list[str]:
    """A worker read as ended although its file has no end record: the manifest said so, but
    the file's last lines (the end record among them) may have been lost, so what is left is
    not the whole run."""
    out = []
    for rank, state in workers.items():
        if state.status in ("finished", "failed") and not any(
            isinstance(r, EndRecord) for r in reversed(records.get(rank, []))
        ):
            if manifest.end_record_lost:  # the writer knew, and could still say so in the manifest
                out.append(
                    f"{worker_file_name(rank)}: the end record was lost to a write error "
                    f"({manifest.end_record_lost}); {MANIFEST_NAME} says {manifest.status!r}"
                )
            else:
                out.append(
                    f"{worker_file_name(rank)}: no end record although {MANIFEST_NAME} says "
                    f"{manifest.status!r}; its last records may be lost"
                )
    return out


def _dropped(records: list[Record]) -> bool:
    """The worker's end record counts records lost to write errors."""
    return any(isinstance(r, EndRecord) and r.dropped_records for r in reversed(records))


def absent_workers(manifest: Manifest, found: set[int]) -> list[str]:
    """The worker files a run's manifest promises but its directory lacks (every worker writes
    its own): what the missing workers did is not in the run. A run imported from elsewhere
    (one writer for a job of several instances) is not held to this."""
    if manifest.config.get("imported_from") or not found:
        return []
    expected = min(manifest.num_workers, MAX_WORKER_FILES)
    absent = [rank for rank in range(expected) if rank not in found]
    if not absent:
        return []
    names = ", ".join(worker_file_name(rank) for rank in absent[:3]) + (
        ", …" if len(absent) > 3 else ""
    )
    return [
        f"{len(absent)} worker file{'s' if len(absent) > 1 else ''} missing ({names}): "
        f"{MANIFEST_NAME} says {manifest.num_workers} workers"
    ]
