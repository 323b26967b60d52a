"""The what-if as a function, ``advisor.whatif(model, data)``: the situation read from the objects,
then the engine (``engine.py``). Inside ``fit`` the collector (``collectors/whatif.py``) builds
the situation from what the other collectors recorded instead.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advisor.errors import UsageError
from advisor.experiments.feeds.base import InputError
from advisor.experiments.settings import (
    WHATIF_FIT_SHARE,
    WHATIF_MAX_SECONDS,
    WHATIF_ROUNDS,
    normalize_whatif,
)
from advisor.experiments.whatif.result import WhatIfResult
from advisor.experiments.whatif.trials import Situation, unchanged_trial
from advisor.probes.batch import leading_dim


def default_allowance(fit_seconds: float | None) -> float:
    """The smaller of 10% of the fit and 60 s (60 s when the fit's length is unknown)."""
    if fit_seconds is None or fit_seconds <= 0:
        return WHATIF_MAX_SECONDS
    return min(WHATIF_FIT_SHARE * fit_seconds, WHATIF_MAX_SECONDS)


def pipeline_summary(dataset: Any) -> dict[str, Any] | None:
    from advisor.probes.tfdata import PipelineInspectionError, inspect_dataset

    try:
        return inspect_dataset(dataset)
    except PipelineInspectionError:
        return None


def situation_from_user(
    model: Any, data: Any, batch_size: int | None = None, steps_per_epoch: int | None = None
) -> Situation:
    """The situation for ``whatif(model, data)``: the same values, read from the objects."""
    from advisor.experiments.feeds.choose import is_generator, is_pydataset, is_tf_dataset
    from advisor.experiments.whatif.inputs import cpu_count
    from advisor.probes.framework import (
        detect_framework,
        device_kind,
        dtype_policy_of,
        steps_per_execution,
    )

    flavor, backend, _ = detect_framework(model)
    spe = steps_per_execution(model)
    dataset = arrays = py_dataset = loader = summary = None
    size = batch_size
    if is_tf_dataset(data):
        kind, dataset, summary = "tf.data", data, pipeline_summary(data)
    elif is_pydataset(data):
        kind, py_dataset = "pydataset", data
        size = size or leading_dim(data[0])
    elif type(data).__name__ == "DataLoader":
        kind, loader = "torch", data
        size = size or data.batch_size
    elif is_generator(data):
        kind = "generator"
    elif isinstance(data, tuple) and 1 <= len(data) <= 3:
        x, y, sw = (tuple(data) + (None, None))[:3]
        kind, size = "numpy", int(batch_size or 32)
        arrays = {"x": x, "y": y, "sample_weight": sw, "batch_size": size, "shuffle": True}
    else:
        raise InputError(
            f"unsupported input {type(data).__name__}: pass a tf.data.Dataset, a tuple (x, y) of "
            "arrays, a keras.utils.PyDataset or a torch DataLoader"
        )
    unchanged = unchanged_trial(
        model,
        kind,
        dataset=dataset,
        arrays=arrays,
        py_dataset=py_dataset,
        loader=loader,
        batch_size=size,
        steps_per_epoch=steps_per_epoch,
        spe=spe,
    )
    jit = getattr(model, "jit_compile", None)
    return Situation(
        model=model,
        backend=backend,
        flavor=flavor,
        kind=kind,
        unchanged=unchanged,
        batch_size=unchanged.batch_size,
        steps_per_execution=spe,
        dataset=dataset,
        summary=summary,
        py_dataset=py_dataset,
        loader=loader,
        jit_compile=bool(jit) if jit is not None else None,
        run_eagerly=bool(getattr(model, "run_eagerly", False)),
        dtype_policy=dtype_policy_of(model),
        device=device_kind(backend)[0],
        cpu_count=cpu_count(),
    )


def whatif(
    model: Any,
    data: Any,
    candidates: str | Sequence[str] = "auto",
    *,
    max_seconds: float = WHATIF_MAX_SECONDS,
    rounds: int = WHATIF_ROUNDS,
    batch_size: int | None = None,
    steps_per_epoch: int | None = None,
    input_cost: float | None = None,
    seconds: float | None = None,
    backends_max_seconds: float | None = None,
    backends_candidates: Sequence[str] | None = None,
    port_backends: bool = False,
) -> WhatIfResult:
    """Try recommended changes on ``model`` and ``data`` and measure each gain; see docs/whatif.md.

    ``data`` is what you pass to ``fit`` (a tf.data.Dataset, ``(x, y)`` arrays with ``batch_size``,
    a PyDataset or a DataLoader). ``candidates``: ``"auto"`` (those the model and the input point
    to) or a list of names. Everything stays within ``max_seconds``; the model's weights,
    optimizer and metrics are afterwards exactly what they were. ``input_cost``: the share of
    step time the input costs, if you measured it (``advisor.measure_input``), to focus "auto".
    ``seconds``: measure the rounds for about this long in all and stop (default: what
    ``max_seconds`` leaves after preparing the candidates).

    ``"backends"`` among the candidates also measures the model on every installed Keras backend
    × compile mode, each in a fresh process (``advisor.experiments.backends``), within
    ``backends_max_seconds`` (default 300 s) of its own; the result is ``result.backends``.
    ``backends_candidates``: only these of them, e.g. ``["jax+jit", "torch"]`` (the model's own
    backend is measured beside them all the same). ``port_backends``: measure there the portable
    variant of the model's custom classes (their backend calls replaced by ``keras.ops``;
    ``result.backends.diff`` is the rewrite).
    """
    from advisor.experiments.baseline.engine import check_model
    from advisor.experiments.whatif.engine import run_whatif

    started = time.perf_counter()
    check_model(model)
    candidates, backends = _split_backends(candidates)
    chosen = _backend_names(backends_candidates)
    plan = _BackendPlan(batch_size, backends_max_seconds, chosen, port_backends)
    if backends and not candidates:
        return _backends_only(model, data, plan, started)
    requested = normalize_whatif(candidates)
    if requested is None:
        raise UsageError("whatif(): candidates must be 'auto' or a list of names")
    if not isinstance(max_seconds, (int, float)) or not max_seconds > 0:
        raise UsageError(f"max_seconds must be a positive number, got {max_seconds!r}")
    if seconds is not None and (not isinstance(seconds, (int, float)) or not seconds > 0):
        raise UsageError(f"seconds must be a positive number or None, got {seconds!r}")
    situation = situation_from_user(model, data, batch_size, steps_per_epoch)
    if input_cost is not None:
        situation.input_cost, situation.input_cost_outside_band = (
            float(input_cost),
            float(input_cost) > 0.05,
        )
    result = run_whatif(
        situation,
        requested,
        allowance=float(max_seconds),
        rounds=rounds,
        mode="api",
        started=started,
        seconds=None if seconds is None else float(seconds),
    )
    if backends:
        result.backends = _measure_backends(model, data, plan)
    return result


BACKENDS = "backends"


def _split_backends(candidates: Any) -> tuple[Any, bool]:
    """The in-process candidates, and whether the backend what-if was asked for."""
    if isinstance(candidates, str) or not isinstance(candidates, Sequence):
        return ([], True) if candidates == BACKENDS else (candidates, False)
    names = list(candidates)
    return [n for n in names if n != BACKENDS], BACKENDS in names


@dataclass(frozen=True)
class _BackendPlan:
    """What the backend what-if is asked for: batch size, time, candidates, the portable variant."""

    batch_size: int | None
    max_seconds: float | None
    candidates: list[str] | None
    port: bool


def _backend_names(names: Sequence[str] | None) -> list[str] | None:
    """``backends_candidates`` checked before anything starts: an unknown name is a UsageError."""
    from advisor.experiments.backends.result import Config

    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) for n in names) or not names:
        raise UsageError(
            f"backends_candidates must be a non-empty list of names such as 'jax+jit', got "
            f"{names!r}"
        )
    return [Config.parse(n).name for n in names]


def _measure_backends(model: Any, data: Any, plan: _BackendPlan) -> Any:
    from advisor.experiments.backends import measure_backends
    from advisor.experiments.backends.runner import MAX_SECONDS

    return measure_backends(
        model,
        data,
        plan.candidates,
        batch_size=plan.batch_size,
        max_seconds=MAX_SECONDS if plan.max_seconds is None else float(plan.max_seconds),
        port=plan.port,
    )


def _backends_only(model: Any, data: Any, plan: _BackendPlan, started: float) -> WhatIfResult:
    from advisor.experiments.backends.runner import MAX_SECONDS

    allowance = MAX_SECONDS if plan.max_seconds is None else plan.max_seconds
    result = WhatIfResult("api", None, plan.batch_size, [BACKENDS], allowance)
    result.backends = _measure_backends(model, data, plan)
    result.seconds = time.perf_counter() - started
    return result
