"""The measured what-ifs' records: the in-process what-if (``whatif``) and the backend what-if
(``backends``: every Keras backend × compile mode, each in a fresh process)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from advisor.store.schema_base import Record, SchemaModel

# Every what-if candidate, in the order "auto" prepares them (input changes first); the engine's
# candidate list (advisor.experiments.whatif) is checked against it when it is built.
WHATIF_CANDIDATES = (
    "parallel_map",
    "parallel_interleave",
    "prefetch",
    "cache_source",
    "cache_map",
    "tfdata_options",
    "pydataset_workers",
    "pydataset_multiprocessing",
    "torch_workers",
    "cached_input",
    "steps_per_execution_8",
    "steps_per_execution_32",
    "jit_compile",
    "mixed_precision",
    "batch_x2",
    "batch_x4",
)
# What-if candidates that measure a bound, not a fix (the input served from memory): no input
# change can pass it. Writers and readers both mark them (docs/whatif.md).
WHATIF_CEILINGS = frozenset({"cached_input"})


class WhatIfCandidate(SchemaModel):
    """One candidate change of a what-if: measured (samples/s per round), or why not."""

    name: str  # e.g. parallel_map, cache_map, steps_per_execution_8, jit_compile, batch_x2
    status: str  # measured | failed | not_applicable | not_relevant | skipped
    reason: str | None = None  # why it was not measured, or what went wrong
    label: str | None = None  # what was changed, in words
    batch_size: int | None = None  # samples per step with the change
    changes_optimisation: bool = False  # the change alters what training computes (a larger batch)
    rounds: list[float | None] | None = (
        None  # samples/s per round, aligned with the unchanged arm's
    )
    steps: int | None = None  # measured steps, all rounds
    seconds: float | None = None  # wall time the candidate cost: its setup and its segments


class WhatIfRecord(Record):
    """The what-if: each candidate fix trained side by side with the unchanged configuration
    in interleaved rounds (``advisor.experiments.whatif.engine``)."""

    type: Literal["whatif"] = "whatif"
    mode: str | None = None  # end | api
    input_kind: str | None = None
    batch_size: int | None = None  # samples per step, unchanged
    requested: list[str] | str | None = None  # "auto" or the names asked for
    rounds: int | None = None
    unchanged_rounds: list[float | None] | None = (
        None  # samples/s per round, unchanged configuration
    )
    candidates: list[WhatIfCandidate] = Field(default_factory=list)
    seconds: float | None = None  # wall time of the whole what-if
    budget_seconds: float | None = None  # the budget it had to stay within
    fit_seconds: float | None = None  # the training time the default budget was taken from
    stopped: str | None = None  # why it ended before its planned rounds
    interrupted: bool = False  # Ctrl-C ended it; what was measured until then is kept
    skipped: str | None = None  # why no candidate was tried at all (multi-worker, no input, …)
    error: str | None = None


class BackendRun(SchemaModel):
    """One backend × compile mode of the backend what-if: samples/s per round, or why not."""

    name: str  # e.g. tensorflow, tensorflow+jit, jax+jit, torch+jit (jit: XLA or torch.compile)
    backend: str
    jit_compile: bool
    status: str  # measured | failed | not_installed | skipped
    reason: str | None = None
    rounds: list[float] | None = None  # samples/s per round (compute only: cached batches)
    compile_seconds: float | None = None  # the first training step
    seconds: float | None = None  # the process, start to exit


class BackendsRecord(Record):
    """The backend what-if (``advisor.experiments.backends``): ``own`` names the run's own."""

    type: Literal["backends"] = "backends"
    own: str
    batch_size: int | None = None
    candidates: list[BackendRun] = Field(default_factory=list)
    seconds: float | None = None
    budget_seconds: float | None = None
    note: str | None = None
    stopped: str | None = None
    # each custom class: the calls that tie it to a backend and their keras.ops replacements
    portability: list[dict[str, Any]] | None = None
