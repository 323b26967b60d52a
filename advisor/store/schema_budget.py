"""The records of where a fit's wall clock went: the time budget (goodput) and compile events.

Part of the run-directory contract (``advisor.store.schema`` re-exports them); see
docs/goodput.md for the categories and docs/run-directory.md for the record types.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from advisor.store.schema_base import Record, SchemaModel


class CallbackTime(SchemaModel):
    """One hook of one callback during a fit: its own time (saves it made excluded) and calls."""

    name: str  # the callback's class name (a second instance of a class: "Name#2")
    hook: str  # on_train_batch_end, on_epoch_end, ...
    seconds: float
    calls: int
    kind: str = (
        "callback"  # callback | keras (History, ProgbarLogger) | checkpoint (ModelCheckpoint…)
    )
    overlapped_seconds: float = (
        0.0  # time on Keras's worker threads (async dispatch), beside training
    )


class CheckpointTime(SchemaModel):
    """Saves made during a fit: ``model.save``/``save_weights`` and checkpoint callbacks."""

    count: int = 0
    seconds: float = 0.0
    bytes: int | None = None  # bytes of the files the saves wrote (None: not measurable)
    # who saved ("ModelCheckpoint.on_epoch_end") → count
    by: dict[str, int] = Field(default_factory=dict)
    # [wall clock at its start, seconds] of each save (the first 400; newer writers)
    times: list[list[float]] = Field(default_factory=list)


class GcTime(SchemaModel):
    """Python's full (generation-2) garbage collections during the fit, from ``gc.callbacks``."""

    count: int = 0
    seconds: float = 0.0
    # [wall clock at its start, seconds] of each (the first 400)
    pauses: list[list[float]] = Field(default_factory=list)


class BudgetRecord(Record):
    """Where the fit's wall clock went, by category (docs/goodput.md), so far.

    Written at every epoch end (``final`` False: a killed job keeps the last one) and at the
    fit's end. ``seconds`` holds exclusive categories that add up to ``wall_seconds`` but for
    ``unaccounted``: startup, train_steps, validation, epoch_boundary, callbacks, checkpoint,
    advisor_hooks, advisor_measure, profile, compile (traces and compilations moved out of
    the phase they ran in).
    """

    type: Literal["budget"] = "budget"
    final: bool = False
    wall_seconds: float = Field(ge=0)
    seconds: dict[str, float]
    steps: int | None = None  # training steps so far (optimizer steps)
    callbacks: list[CallbackTime] = Field(default_factory=list)
    checkpoint: CheckpointTime = Field(default_factory=CheckpointTime)
    gc: GcTime | None = None  # full garbage collections (newer writers)
    source: str = "callback"  # callback (AdvisorCallback) | track (custom loop markers)
    # The part of ``seconds["compile"]`` spent before the first step's end (newer writers).
    compile_startup_seconds: float | None = None


class CompileEvent(SchemaModel):
    """One trace or compilation of a function (docs/goodput.md, "Compiling")."""

    t: float  # wall clock at its end, seconds since the epoch
    seconds: float = Field(ge=0)
    function: str
    kind: str = (
        "trace"  # trace | compile | backward (torch: with the forward before it) | graph_break
    )
    cause: str = "unknown"  # first, shape, python_value, partial_batch, … (docs/goodput.md)
    detail: str = ""  # what changed ("n: 2 → 3"), the failed guard, the graph break's reason
    phase: str = "train_steps"  # the budget category it happened in (startup, validation, …)
    count: int = 1  # graph breaks: how many with this reason


class CompileRecord(Record):
    """Compile events of the process since the last such record (written at epoch ends and at
    the run's close), from the backend's own hooks: TensorFlow's tracing, ``jax.monitoring``,
    Dynamo's compile callbacks."""

    type: Literal["compile"] = "compile"
    backend: str | None = None
    events: list[CompileEvent] = Field(default_factory=list)
    # The framework's own total of compile seconds so far, where it keeps one (TensorFlow's
    # graph-building counter), to check the events against.
    framework_seconds: float | None = None
