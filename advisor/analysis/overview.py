"""A run's overview for people: what it is, its epochs and its warnings, as plain data.

Renderers (``advisor show``, the demo, the TUI) draw this and the facts; they never read records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.store.reader import Run


@dataclass(frozen=True)
class EpochRow:
    epoch: int  # 1-based
    seconds: float
    train_seconds: float
    val_seconds: float
    steps: int
    samples: int | None
    samples_per_s: float | None


EPOCH_UNITS = {
    "seconds": "s",
    "train_seconds": "s",
    "val_seconds": "s",
    "steps": "steps",
    "samples": "samples",
    "samples_per_s": "samples/s",
}


@dataclass(frozen=True)
class EpochTable:
    """A run's epochs (the chief's), as ``advisor show`` lists them."""

    run_id: str
    rows: tuple[EpochRow, ...] = ()

    def to_frame(self) -> Any:
        """One row per epoch (pandas), indexed by the 1-based epoch; units in
        ``df.attrs["units"]``."""
        from dataclasses import asdict, fields

        from advisor.dataframes import to_frame

        columns = [f.name for f in fields(EpochRow)]
        frame = to_frame([asdict(r) for r in self.rows], columns, EPOCH_UNITS, run_id=self.run_id)
        return frame.set_index("epoch")


@dataclass(frozen=True)
class EventRow:
    level: str
    source: str
    message: str


@dataclass(frozen=True)
class RunOverview:
    run_id: str
    path: str
    status: str
    created: float
    name: str | None = None
    keras_version: str | None = None
    backend: str | None = None
    backend_version: str | None = None
    legacy_keras: bool = False
    strategy: str | None = None
    num_workers: int = 1
    replicas: int | None = None
    global_batch_size: int | None = None
    per_replica_batch_size: int | None = None
    steps_per_execution: int | None = None
    dtype_policy: str | None = None
    jit_compile: bool | None = None
    instance_type: str | None = None
    price_per_hour: float | None = None
    sweep_id: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    custom_loop: bool = False  # recorded by advisor.track, not by AdvisorCallback in fit
    epochs: tuple[EpochRow, ...] = ()
    events: tuple[EventRow, ...] = ()  # warnings and errors recorded by the run, then the reader's

    def epoch_table(self) -> EpochTable:
        return EpochTable(self.run_id, self.epochs)


def overview(run: Run) -> RunOverview:
    from advisor.store.schema import EpochRecord, EventRecord

    m = run.manifest
    fw = m.framework
    chief = run.ranks[0] if run.ranks else None
    epochs = tuple(
        EpochRow(
            e.epoch + 1,
            e.seconds,
            e.train_seconds,
            e.val_seconds,
            e.steps,
            e.samples,
            e.samples / e.train_seconds if e.samples and e.train_seconds > 0 else None,
        )
        for e in (run.of_type(EpochRecord, rank=chief) if chief is not None else [])
    )
    events = tuple(
        EventRow(e.level, e.source, e.message)
        for e in run.of_type(EventRecord)
        if e.level in ("warning", "error")
    )
    events += tuple(EventRow("warning", "reader", w) for w in run.warnings)
    events += tuple(
        EventRow("error", "reader", p) for p in run.problems
    )  # data that could not be read
    return RunOverview(
        run_id=m.run_id,
        path=str(run.path),
        status=run.status,
        created=m.created,
        name=m.name,
        keras_version=fw.keras_version,
        backend=fw.backend,
        backend_version=fw.backend_version,
        legacy_keras=fw.legacy_keras,
        strategy=m.strategy,
        num_workers=m.num_workers,
        replicas=m.replicas,
        global_batch_size=m.global_batch_size,
        per_replica_batch_size=m.per_replica_batch_size,
        steps_per_execution=m.steps_per_execution,
        dtype_policy=m.dtype_policy,
        jit_compile=m.jit_compile,
        instance_type=m.instance_type,
        price_per_hour=m.price_per_hour,
        sweep_id=m.sweep_id,
        tags=dict(m.tags),
        custom_loop=m.config.get("loop") == "custom",
        epochs=epochs,
        events=events,
    )
