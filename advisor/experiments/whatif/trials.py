"""The what-if's vocabulary: the situation at train end, a trial (one way to train), a candidate.

A *situation* is what the collectors know when training ends: the model and its compiled
settings, the input and its kind, the tf.data graph summary, the baseline's input cost, the step
time. A *candidate* is one recommended change (``parallel_map``, ``jit_compile``, ``batch_x2``…):
it says whether the situation makes it relevant and builds a *trial* — the fit arguments and the
model settings that train with the change — or raises :class:`NotApplicable` with the reason.
The unchanged configuration is a trial too; the engine (``whatif.py``) measures them side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from advisor.experiments.feeds.base import INFINITE, InputError


class NotApplicable(Exception):
    """The change cannot be made here; the message says why (one line)."""


@dataclass
class Trial:
    """One way to train the model: what ``fit`` gets and what is set around each segment."""

    name: str
    label: str  # what is changed, in words
    model: Any  # the model that trains (the user's, or a clone for a different dtype policy)
    kwargs: dict[str, Any]  # fit arguments: the input (and batch_size for arrays)
    finite: bool  # the input ends (whole epochs until the clock stops them)
    batch_size: int  # samples per step
    epoch_steps: int | None = (
        None  # steps per epoch of an endless input (the user's steps_per_epoch)
    )
    epoch_length: int | None = None  # steps in one epoch of a finite input (None: not known)
    spe: int = 1  # steps per execution while it trains
    changes_optimisation: bool = (
        False  # e.g. a larger batch: same speed question, different training
    )
    setup_estimate: float = 0.0  # extra seconds its first steps may take (a compile, a clone)
    fill: Callable[[float, Callable[[], bool]], None] | None = (
        None  # one-off preparation (a cache fill):
    )
    # (deadline, stop requested?) → None
    fill_estimate: float = 0.0  # seconds ``fill`` is expected to take
    enter: Callable[[], None] | None = None  # before each of its segments (swap the train step in)
    leave: Callable[[], None] | None = None  # after each of its segments (swap it out)
    close: Callable[[], None] | None = None  # when the what-if ends (release a clone, worker pools)


@dataclass
class Situation:
    """What is known when the what-if starts (from the collectors, or from ``whatif()``'s
    arguments)."""

    model: Any
    backend: str | None
    flavor: str  # keras3 | tf_keras
    kind: str  # tf.data | numpy | pydataset | torch | generator | unknown
    unchanged: Trial
    batch_size: int
    steps_per_execution: int = 1
    dataset: Any = None  # the tf.data.Dataset
    summary: dict[str, Any] | None = None  # its graph summary (advisor.probes.tfdata)
    py_dataset: Any = None
    loader: Any = None
    jit_compile: bool | None = None
    run_eagerly: bool = False
    dtype_policy: str | None = None
    device: str | None = None  # cpu | gpu | tpu
    input_cost: float | None = None  # the baseline's 1 − real ÷ cached
    input_cost_outside_band: bool | None = None
    compile_seconds: float | None = (
        None  # time to the first step of the fit (trace, compile, first batch)
    )
    step_seconds: float | None = None  # one unchanged step (from the calibration segment)
    cpu_count: int = 1
    fill_seconds: float = 5.0  # what one cache fill may take (set by the engine from the allowance)
    # seconds the input alone takes per batch, as the baseline measured it (real or data-only
    # rate, the slower): what filling a cache costs per batch, where the what-if's few
    # calibration steps, served from prefetched buffers, look faster
    input_batch_seconds: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def input_bound(self) -> bool:
        """The baseline says the input costs more than half of step time (beyond its noise)."""
        return bool(
            self.input_cost is not None and self.input_cost >= 0.5 and self.input_cost_outside_band
        )

    @property
    def input_costs(self) -> bool:
        """The baseline measured an input cost beyond its noise band (of any size)."""
        return bool(
            self.input_cost is not None and self.input_cost > 0 and self.input_cost_outside_band
        )

    @property
    def input_free(self) -> bool:
        """The baseline found no measurable input cost."""
        return self.input_cost_outside_band is False

    @property
    def stages(self) -> list[dict[str, Any]]:
        summary = self.summary or {}
        return [
            s for s in summary.get("stages") or [] if s.get("kind") not in ("options", "passive")
        ]


@dataclass(frozen=True)
class Candidate:
    """A recommended change the what-if can try: ``relevant`` returns None when the situation
    points to it (else the reason it is left out of ``"auto"``); ``build`` makes its trial."""

    name: str
    area: str  # input | model
    build: Callable[[Situation], Trial]
    relevant: Callable[[Situation], str | None]


def unchanged_trial(
    model: Any,
    kind: str,
    *,
    dataset: Any = None,
    arrays: dict[str, Any] | None = None,
    py_dataset: Any = None,
    loader: Any = None,
    batch_size: int | None,
    steps_per_epoch: int | None,
    spe: int,
) -> Trial:
    """The user's own configuration as a trial: the same input, replayed epoch after epoch."""
    from advisor.experiments.feeds.tfdata import cardinality

    label = "as trained"
    if kind == "tf.data":
        card = cardinality(dataset)
        if card == 0:
            raise InputError("the input dataset is empty")
        size = batch_size or _first_batch_size(dataset)
        finite = card != INFINITE
        return Trial(
            "unchanged",
            label,
            model,
            {"x": dataset},
            finite=finite,
            batch_size=size,
            epoch_steps=None if finite else steps_per_epoch,
            spe=spe,
            epoch_length=(card if card > 0 else steps_per_epoch) if finite else None,
        )
    if kind == "numpy" and arrays is not None:
        size = int(arrays["batch_size"])
        return Trial(
            "unchanged",
            label,
            model,
            dict(arrays),
            finite=True,
            batch_size=size,
            spe=spe,
            epoch_length=_batches(_rows(arrays.get("x")), size),
        )
    if kind == "pydataset" and py_dataset is not None:
        finite = getattr(py_dataset, "num_batches", 1) is not None
        return Trial(
            "unchanged",
            label,
            model,
            {"x": py_dataset},
            finite=finite,
            batch_size=int(batch_size or 1),
            epoch_steps=None if finite else steps_per_epoch,
            spe=spe,
            epoch_length=_length(py_dataset) if finite else None,
        )
    if kind == "torch" and loader is not None:
        return Trial(
            "unchanged",
            label,
            model,
            {"x": loader},
            finite=True,
            batch_size=int(batch_size or 1),
            spe=spe,
            epoch_length=_length(loader),
        )
    if kind == "generator":
        raise InputError(
            "a Python generator can be read only once: the what-if needs an input it can replay "
            "(tf.data, arrays, a PyDataset or a DataLoader)"
        )
    raise InputError(f"the what-if cannot replay this input ({kind})")


def _length(data: Any) -> int | None:
    """``len(data)`` (batches in an epoch) when it is defined and positive."""
    try:
        length = len(data)
    except Exception:  # noqa: BLE001 — no length (an iterable dataset, a PyDataset without num_batches)
        return None
    return length if isinstance(length, int) and length > 0 else None


def _rows(x: Any) -> int | None:
    """Samples in an array input (the first array of a structure)."""
    while isinstance(x, (list, tuple, dict)) and x:
        x = next(iter(x.values())) if isinstance(x, dict) else x[0]
    shape = getattr(x, "shape", None)
    return int(shape[0]) if shape and shape[0] is not None else None


def _batches(rows: int | None, size: int) -> int | None:
    return -(-rows // size) if rows and size > 0 else None


def _first_batch_size(dataset: Any) -> int:
    from advisor.experiments.feeds.tfdata import first_element
    from advisor.probes.batch import leading_dim

    size = leading_dim(first_element(dataset.take(1).cache().repeat()))
    if not size:
        raise InputError("cannot tell the batch size of the input")
    return size
