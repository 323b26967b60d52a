"""The scaling table: strategy × workers, from the runs of a sweep (or of a whole store).

Per row: mean epoch time with its spread over repeats, speedup versus the smallest worker count of
the same strategy, efficiency (speedup ÷ (N ÷ N₀)), samples/s, samples per dollar (the price of
every instance the configuration occupies), accelerator utilization, energy per epoch and per
sample, the computation / communication / other shares of the step from traces, and goodput (the
share of the wall clock in training steps, from the runs' time budgets). What was not
measured stays None and the row carries a note saying so; nothing here plots or prints.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from advisor.analysis.scaling_points import Point, instances_for

SCALING_SCHEMA_VERSION = 1
MB = float(1 << 20)
# Units of the row fields (the columns of ``ScalingTable.to_frame()``).
ROW_UNITS = {
    "epoch_s": "s",
    "epoch_s_std": "s",
    "epoch_s_min": "s",
    "epoch_s_max": "s",
    "first_epoch_s": "s",
    "speedup": "x",
    "efficiency": "fraction",
    "samples_per_s": "samples/s",
    "step_ms": "ms",
    "global_batch": "samples",
    "per_replica_batch": "samples",
    "usd_per_hour": "USD/h",
    "samples_per_dollar": "samples/USD",
    "usd_per_epoch": "USD",
    "gpu_util": "%",
    "energy_wh_per_epoch": "Wh",
    "energy_j_per_sample": "J",
    "compute_percent": "%",
    "communication_percent": "%",
    "exposed_communication_percent": "%",
    "other_percent": "%",
    "communication_overlap": "fraction",
    "val_fraction": "fraction",
    "step_time_spread": "fraction",
    "goodput": "fraction",
    "speed_of_light": "fraction",
    "straggler_wait_ms": "ms",
    "straggler_share": "fraction",
    "straggler_s_per_epoch": "s",
    "host_peak_mb": "MB",
    "device_peak_mb": "MB",
    "memory_peak_fraction": "fraction",
}


@dataclass
class Row:
    strategy: str
    workers: int
    runs: int
    run_ids: list[str]
    epoch_s: float | None = None
    epoch_s_std: float | None = None
    epoch_s_min: float | None = None
    epoch_s_max: float | None = None
    first_epoch_s: float | None = None
    speedup: float | None = None
    efficiency: float | None = None
    samples_per_s: float | None = None
    step_ms: float | None = None
    global_batch: float | None = None
    per_replica_batch: float | None = None
    instances: int | None = None
    gpus_per_instance: int | None = None
    usd_per_hour: float | None = None
    samples_per_dollar: float | None = None
    usd_per_epoch: float | None = None
    gpu_util: float | None = None
    energy_wh_per_epoch: float | None = None
    energy_j_per_sample: float | None = None
    compute_percent: float | None = None  # computation, communication excluded
    communication_percent: float | None = None  # all communication, hidden or not
    exposed_communication_percent: float | None = None  # communication not overlapped by compute
    other_percent: float | None = None
    communication_overlap: float | None = None
    val_fraction: float | None = None
    step_time_spread: float | None = None
    goodput: float | None = None  # mean over the runs that have a time budget
    speed_of_light: float | None = None  # mean fraction of the device's measured speed of light
    # The worker the others wait for, from the run where it costs most (D651 decides whether it
    # is named a straggler; the report shows the name only then).
    straggler: str | None = None  # "rank 1 on host": set where D651 found a straggler on its runs
    straggler_rank: int | None = None
    straggler_host: str | None = None
    straggler_wait_ms: float | None = None  # per step
    straggler_share: float | None = None  # of the step time
    straggler_s_per_epoch: float | None = None
    # Peak memory: the largest over the configuration's runs and their processes (MB = 2**20 B).
    host_peak_mb: float | None = None  # one training process's resident memory (RSS)
    device_peak_mb: float | None = None  # one device's allocator peak (where the backend says)
    memory_peak_fraction: float | None = None  # the larger of host/device peak ÷ its limit
    notes: list[str] = field(default_factory=list)


@dataclass
class Failure:
    strategy: str
    workers: int
    run_id: str
    repeat: int | None = None
    reason: str | None = None
    hint: str | None = None
    log_tail: str | None = None
    state: str = (
        "failed"  # or the sweep's state of a configuration not ended yet (submitted, running…)
    )


@dataclass
class Recommendation:
    """The best configuration of a sweep for one goal, or a labelled projection beyond it.

    ``goal``: ``samples_per_s`` | ``samples_per_dollar`` | ``energy`` (lowest J/sample) |
    ``projection`` (the next worker count, from the measured computation/communication split).
    ``value`` is in ``unit``; ``reason`` says why in one line; ``assumptions`` (projections) list
    what the figure rests on; ``findings`` are the sweep's D6 codes that bear on it.
    """

    goal: str
    strategy: str
    workers: int
    value: float | None = None
    unit: str = ""
    reason: str = ""
    projected: bool = False
    assumptions: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)


@dataclass
class SweepFinding:
    """A failed D6 rule on one run of the sweep (the service diagnoses them; see
    ``advisor.service.scaling``), with the evidence behind it."""

    code: str
    name: str
    severity: str
    strategy: str
    workers: int
    run_id: str
    message: str
    impact: float | None = None
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class ScalingTable:
    source: str
    sweep_ids: list[str]
    rows: list[Row]
    failures: list[Failure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    recommendations: list[Recommendation] = field(default_factory=list)
    findings: list[SweepFinding] = field(default_factory=list)
    schema_version: int = SCALING_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScalingTable:
        """A table saved with ``advisor report --format json`` (unknown keys are ignored)."""
        if int(data.get("schema_version", 0) or 0) > SCALING_SCHEMA_VERSION:
            raise ValueError(
                f"scaling report schema {data['schema_version']} is newer than "
                f"{SCALING_SCHEMA_VERSION}; upgrade advisor to read it"
            )
        rows = [Row(**_known(Row, r)) for r in data.get("rows", [])]
        failures = [Failure(**_known(Failure, f)) for f in data.get("failures", [])]
        recommendations = [
            Recommendation(**_known(Recommendation, r)) for r in data.get("recommendations", [])
        ]
        findings = [SweepFinding(**_known(SweepFinding, f)) for f in data.get("findings", [])]
        return cls(
            str(data.get("source", "")),
            list(data.get("sweep_ids", [])),
            rows,
            failures,
            list(data.get("notes", [])),
            recommendations,
            findings,
        )

    def to_frame(self) -> Any:
        """One row per strategy × workers (pandas); units in ``df.attrs["units"]``, notes joined by
        "; "."""
        from advisor.dataframes import to_frame

        columns = [f.name for f in fields(Row)]
        rows = [{**asdict(r), "notes": "; ".join(r.notes)} for r in self.rows]
        return to_frame(
            rows,
            columns,
            ROW_UNITS,
            source=self.source,
            sweep_ids=list(self.sweep_ids),
            notes=list(self.notes),
        )

    def row(self, strategy: str, workers: int) -> Row | None:
        return next((r for r in self.rows if r.strategy == strategy and r.workers == workers), None)

    @property
    def strategies(self) -> list[str]:
        return list(dict.fromkeys(r.strategy for r in self.rows))


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _mean(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.fmean(got) if got else None


def build_table(
    points: list[Point],
    source: str = "",
    failures: list[Failure] | None = None,
    price_per_hour: float | None = None,
    gpus_per_instance: int | None = None,
) -> ScalingTable:
    """Aggregate points (finished runs) into rows; ``price_per_hour`` (per instance) and
    ``gpus_per_instance`` override what the runs recorded."""
    groups: dict[tuple[str, int], list[Point]] = {}
    for p in points:
        groups.setdefault((p.strategy, p.workers), []).append(p)
    rows = [_row(key, pts, price_per_hour, gpus_per_instance) for key, pts in groups.items()]
    rows.sort(key=lambda r: (_first_index(points, r.strategy), r.workers))
    _relative(rows)
    table = ScalingTable(
        source, sorted({p.sweep_id for p in points if p.sweep_id}), rows, list(failures or [])
    )
    table.notes = _table_notes(rows) + _unfinished_repeats(rows, table.failures)
    return table


def _unfinished_repeats(rows: list[Row], failures: list[Failure]) -> list[str]:
    """A row built from some of its repeats says so (the others are listed among the failures):
    on the row, and as a note of the table, counting the preempted ones."""
    notes = []
    for row in rows:
        mine = [f for f in failures if (f.strategy, f.workers) == (row.strategy, row.workers)]
        if not mine:
            continue
        preempted = sum(1 for f in mine if (f.reason or "").startswith("preempted:"))
        said = f"{row.runs} of {row.runs + len(mine)} repeats finished"
        if preempted:
            said += f", {preempted} preempted"
        row.notes.append(said)
        notes.append(
            f"{row.strategy} ×{row.workers}: from its finished repeats alone ({said}; the others "
            "are listed as failed: `advisor scale --sweep-id ID --resume` measures them)"
        )
    return notes


def _first_index(points: list[Point], strategy: str) -> int:
    return next(i for i, p in enumerate(points) if p.strategy == strategy)


def _row(key: tuple[str, int], pts: list[Point], price: float | None, gpus_per: int | None) -> Row:
    strategy, workers = key
    row = Row(strategy, workers, len(pts), [p.run_id for p in pts])
    epochs = [p.epoch_s for p in pts if p.epoch_s is not None]
    if epochs:
        row.epoch_s = statistics.fmean(epochs)
        row.epoch_s_min, row.epoch_s_max = min(epochs), max(epochs)
        row.epoch_s_std = statistics.stdev(epochs) if len(epochs) > 1 else None
    row.first_epoch_s = _mean([p.first_epoch_s for p in pts])
    row.samples_per_s = _mean([p.samples_per_s for p in pts])
    step = _mean([p.step_s for p in pts])
    row.step_ms = step * 1000.0 if step is not None else None
    row.global_batch = _mean([p.global_batch for p in pts])
    row.per_replica_batch = _mean([p.per_replica_batch for p in pts])
    row.instances, row.gpus_per_instance = instances_for(pts[0], gpus_per)
    unit_price = price if price is not None else _mean([p.price_per_hour for p in pts])
    if unit_price:
        row.usd_per_hour = unit_price * row.instances
        if row.samples_per_s:
            row.samples_per_dollar = row.samples_per_s * 3600.0 / row.usd_per_hour
        if row.epoch_s is not None:
            row.usd_per_epoch = row.epoch_s / 3600.0 * row.usd_per_hour
    else:
        row.notes.append("no price")
    row.gpu_util = _mean([p.gpu_util for p in pts])
    energy = [p.energy_wh / p.epochs for p in pts if p.energy_wh is not None and p.epochs]
    row.energy_wh_per_epoch = statistics.fmean(energy) if energy else None
    row.energy_j_per_sample = _mean([p.energy_j_per_sample for p in pts])
    if row.gpu_util is None and row.energy_wh_per_epoch is None:
        row.notes.append("no GPU data")
    _step_shares(row, pts)
    row.val_fraction = _mean([p.val_fraction for p in pts])
    row.step_time_spread = _mean([p.step_time_spread for p in pts])
    row.goodput = _mean([p.goodput for p in pts])
    row.speed_of_light = _mean([p.speed_of_light for p in pts])
    _straggler(row, pts)
    _memory(row, pts)
    return row


def _memory(row: Row, pts: list[Point]) -> None:
    """The largest peaks over the runs: a configuration needs the memory of its worst repeat."""
    host = [p.host_peak_bytes for p in pts if p.host_peak_bytes is not None]
    device = [p.device_peak_bytes for p in pts if p.device_peak_bytes is not None]
    fraction = [p.memory_peak_fraction for p in pts if p.memory_peak_fraction is not None]
    row.host_peak_mb = max(host) / MB if host else None
    row.device_peak_mb = max(device) / MB if device else None
    row.memory_peak_fraction = max(fraction) if fraction else None
    if not host and not device:
        row.notes.append("no memory data")


def _straggler(row: Row, pts: list[Point]) -> None:
    measured = [p for p in pts if p.straggler_share is not None]
    if not measured:
        return
    worst = max(measured, key=lambda p: p.straggler_share or 0.0)
    row.straggler_rank, row.straggler_host = worst.straggler_rank, worst.straggler_host
    row.straggler_share = _mean([p.straggler_share for p in measured])
    wait = _mean([p.straggler_wait_s for p in measured])
    row.straggler_wait_ms = None if wait is None else wait * 1000.0
    row.straggler_s_per_epoch = _mean([p.straggler_s_per_epoch for p in measured])


def _step_shares(row: Row, pts: list[Point]) -> None:
    """Split the step into three disjoint shares: computation, exposed communication, other.

    Communication overlapped by compute is hidden inside the computation share; where the trace's
    compute share counts the collectives too (CPU hosts), the exposed part is taken out of it.
    """
    compute = _mean([p.compute_percent for p in pts])
    comm = _mean([p.communication_percent for p in pts])
    row.communication_percent = comm
    row.communication_overlap = _mean([p.communication_overlap for p in pts])
    if compute is None and comm is None:
        row.notes.append("no trace data")
        return
    exposed = None
    if comm is not None:
        exposed = min(100.0, comm * (1.0 - (row.communication_overlap or 0.0)))
        row.exposed_communication_percent = exposed
    if compute is not None:
        if exposed and any(p.compute_includes_communication for p in pts):
            compute -= exposed
        row.compute_percent = min(max(0.0, compute), 100.0 - (exposed or 0.0))
    row.other_percent = max(0.0, 100.0 - (row.compute_percent or 0.0) - (exposed or 0.0))


def _relative(rows: list[Row]) -> None:
    """Speedup and efficiency versus the smallest measured worker count of each strategy."""
    for strategy in dict.fromkeys(r.strategy for r in rows):
        mine = [r for r in rows if r.strategy == strategy and r.epoch_s]
        if not mine:
            continue
        base = min(mine, key=lambda r: r.workers)
        for r in mine:
            assert r.epoch_s is not None and base.epoch_s is not None
            r.speedup = base.epoch_s / r.epoch_s
            r.efficiency = r.speedup / (r.workers / base.workers)


def _table_notes(rows: list[Row]) -> list[str]:
    notes = []
    for note, say in (
        ("no GPU data", "no GPU data: accelerator utilization and energy are not shown"),
        (
            "no trace data",
            (
                "no trace data: computation vs communication needs a profile "
                "(AdvisorCallback(profile_steps=...))"
            ),
        ),
        (
            "no price",
            (
                "no price: pass --instance-type to `advisor scale` or "
                "--price-per-hour to `advisor report` for samples per dollar"
            ),
        ),
    ):
        if rows and all(note in r.notes for r in rows):
            notes.append(say)
    return notes
