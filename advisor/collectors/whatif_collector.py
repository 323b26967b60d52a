"""The what-if as a collector (``AdvisorCallback(whatif="auto")``) and as a function
(``advisor.whatif(model, data)``): both build the situation and call the engine (``whatif.py``).

Inside ``fit`` the situation comes from what the other collectors left in the session at train
end — the tf.data graph (pipeline), the input's cost (baseline), the compiled settings and device
(context), the time to the first step (epochs) — since collectors never read the diagnosis.
Outside ``fit`` the same values are read from the model and the input directly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from advisor.collectors.base import Collector
from advisor.collectors.feed_base import InputError, leading_dim
from advisor.collectors.options import (
    WHATIF_FIT_SHARE,
    WHATIF_MAX_SECONDS,
    WHATIF_ROUNDS,
    normalize_whatif,
)
from advisor.collectors.whatif_result import WhatIfResult
from advisor.collectors.whatif_trials import Situation, unchanged_trial
from advisor.errors import UsageError

log = logging.getLogger("advisor")


def default_budget(fit_seconds: float | None) -> float:
    """The smaller of 10% of the fit and 60 s (60 s when the fit's length is unknown)."""
    if fit_seconds is None or fit_seconds <= 0:
        return WHATIF_MAX_SECONDS
    return min(WHATIF_FIT_SHARE * fit_seconds, WHATIF_MAX_SECONDS)


def _summary(dataset: Any) -> dict[str, Any] | None:
    from advisor.probes.tfdata import PipelineInspectionError, inspect_dataset

    try:
        return inspect_dataset(dataset)
    except PipelineInspectionError:
        return None


def situation_from_session(session: Any) -> Situation:
    """The situation at train end, from the session the collectors share."""
    from advisor.collectors.input_feeds import feeds_from_session
    from advisor.collectors.whatif_inputs import cpu_count

    data, model, shared = session.data, session.model, session.shared
    context = shared.get("context") or {}
    kind = data.kind or "unknown"
    adapter = data.adapter
    dataset = data.dataset if kind == "tf.data" else None
    arrays = py_dataset = loader = summary = None
    if kind == "tf.data":
        pipeline = shared.get("pipeline") or {}
        summary = pipeline.get("summary") if isinstance(pipeline.get("summary"), dict) else _summary(dataset)
    elif kind == "numpy":
        feeds = feeds_from_session(data, session.backend)
        if feeds.resize is not None:
            feeds.resize(2**62)  # every whole batch of the arrays: the user's epoch
        arrays = dict(feeds.real or {})
    elif kind == "pydataset":
        py_dataset = getattr(adapter, "py_dataset", None) or getattr(adapter, "_keras_sequence", None)
    elif kind == "torch":
        loader = getattr(adapter, "_dataloader", None)
    spe = session.steps_per_execution
    unchanged = unchanged_trial(model, kind, dataset=dataset, arrays=arrays, py_dataset=py_dataset, loader=loader,
                                batch_size=data.batch_size, steps_per_epoch=data.steps_per_epoch, spe=spe)
    tally = session.tally  # training's last epoch: its length is known where the input's is not
    if unchanged.finite and unchanged.epoch_length is None and tally is not None and tally.steps:
        unchanged.epoch_length = tally.steps
    baseline = shared.get("baseline")
    return Situation(
        model=model, backend=session.backend, flavor=session.keras_flavor, kind=kind, unchanged=unchanged,
        batch_size=unchanged.batch_size, steps_per_execution=spe, dataset=dataset, summary=summary,
        py_dataset=py_dataset, loader=loader, jit_compile=context.get("context.jit_compile"),
        run_eagerly=bool(context.get("context.run_eagerly")), dtype_policy=context.get("context.dtype_policy"),
        device=context.get("context.device"),
        input_cost=getattr(baseline, "bound_fraction", None), input_cost_outside_band=getattr(
            baseline, "bound_outside_band", None),
        compile_seconds=shared.get("first_step_seconds"), cpu_count=cpu_count(),
        step_seconds=_training_step_seconds(shared, unchanged.batch_size),
    )


def _training_step_seconds(shared: dict[str, Any], batch_size: int) -> float | None:
    """One step's time during training (from the throughput collector's last window), if known."""
    rate = shared.get("throughput.last_samples_per_s")
    return batch_size / float(rate) if isinstance(rate, (int, float)) and rate > 0 and batch_size else None


def situation_from_user(model: Any, data: Any, batch_size: int | None = None,
                        steps_per_epoch: int | None = None) -> Situation:
    """The situation for ``whatif(model, data)``: the same values, read from the objects."""
    from advisor.collectors.context import device_kind, dtype_policy_of
    from advisor.collectors.input_feeds import _is_generator, _is_pydataset, _is_tf_dataset
    from advisor.collectors.whatif_inputs import cpu_count
    from advisor.probes.framework import detect_framework, steps_per_execution

    flavor, backend, _ = detect_framework(model)
    spe = steps_per_execution(model)
    dataset = arrays = py_dataset = loader = summary = None
    size = batch_size
    if _is_tf_dataset(data):
        kind, dataset, summary = "tf.data", data, _summary(data)
    elif _is_pydataset(data):
        kind, py_dataset = "pydataset", data
        size = size or leading_dim(data[0])
    elif type(data).__name__ == "DataLoader":
        kind, loader = "torch", data
        size = size or data.batch_size
    elif _is_generator(data):
        kind = "generator"
    elif isinstance(data, tuple) and 1 <= len(data) <= 3:
        x, y, sw = (tuple(data) + (None, None))[:3]
        kind, size = "numpy", int(batch_size or 32)
        arrays = {"x": x, "y": y, "sample_weight": sw, "batch_size": size, "shuffle": True}
    else:
        raise InputError(f"unsupported input {type(data).__name__}: pass a tf.data.Dataset, a tuple (x, y) of "
                         "arrays, a keras.utils.PyDataset or a torch DataLoader")
    unchanged = unchanged_trial(model, kind, dataset=dataset, arrays=arrays, py_dataset=py_dataset, loader=loader,
                                batch_size=size, steps_per_epoch=steps_per_epoch, spe=spe)
    jit = getattr(model, "jit_compile", None)
    return Situation(
        model=model, backend=backend, flavor=flavor, kind=kind, unchanged=unchanged, batch_size=unchanged.batch_size,
        steps_per_execution=spe, dataset=dataset, summary=summary, py_dataset=py_dataset, loader=loader,
        jit_compile=bool(jit) if jit is not None else None, run_eagerly=bool(getattr(model, "run_eagerly", False)),
        dtype_policy=dtype_policy_of(model), device=device_kind(backend)[0], cpu_count=cpu_count(),
    )


def whatif(model: Any, data: Any, candidates: str | Sequence[str] = "auto", *, max_seconds: float = WHATIF_MAX_SECONDS,
           rounds: int = WHATIF_ROUNDS, batch_size: int | None = None, steps_per_epoch: int | None = None,
           input_cost: float | None = None, seconds: float | None = None) -> WhatIfResult:
    """Try recommended changes on ``model`` and ``data`` and measure each gain; see docs/whatif.md.

    ``data`` is what you pass to ``fit`` (a tf.data.Dataset, ``(x, y)`` arrays with ``batch_size``,
    a PyDataset or a DataLoader). ``candidates``: ``"auto"`` (those the model and the input point
    to) or a list of names. Everything stays within ``max_seconds``; the model's weights,
    optimizer and metrics are afterwards exactly what they were. ``input_cost``: the share of
    step time the input costs, if you measured it (``advisor.measure_input``), to focus "auto".
    ``seconds``: measure the rounds for about this long in all and stop (default: what
    ``max_seconds`` leaves after preparing the candidates).
    """
    from advisor.collectors.baseline import _check_model
    from advisor.collectors.whatif import run_whatif

    started = time.perf_counter()
    _check_model(model)
    requested = normalize_whatif(candidates)
    if requested is None:
        raise UsageError("whatif(): candidates must be 'auto' or a list of names")
    if not isinstance(max_seconds, (int, float)) or not max_seconds > 0:
        raise UsageError(f"max_seconds must be a positive number, got {max_seconds!r}")
    if seconds is not None and (not isinstance(seconds, (int, float)) or not seconds > 0):
        raise UsageError(f"seconds must be a positive number or None, got {seconds!r}")
    situation = situation_from_user(model, data, batch_size, steps_per_epoch)
    if input_cost is not None:
        situation.input_cost, situation.input_cost_outside_band = float(input_cost), float(input_cost) > 0.05
    return run_whatif(situation, requested, budget=float(max_seconds), rounds=rounds, mode="api", started=started,
                      seconds=None if seconds is None else float(seconds))


class WhatIfCollector(Collector):
    """Runs the what-if at train end, after the baseline, and records it."""

    name = "whatif"

    def __init__(self, requested: str | Sequence[str] = "auto", max_seconds: float | None = None,
                 rounds: int = WHATIF_ROUNDS, seconds: float | None = None) -> None:
        super().__init__()
        self.seconds = seconds
        self.requested = normalize_whatif(requested) or "auto"
        self.max_seconds = max_seconds
        self.rounds = rounds
        self.result: WhatIfResult | None = None

    def on_train_end(self) -> None:
        from advisor.collectors.whatif import run_whatif
        from advisor.collectors.whatif_result import WhatIfResult

        s = self.s
        now = time.perf_counter()
        fit_seconds = now - s.train_begin_t - float(s.shared.get("baseline_seconds", 0.0))
        budget = self.max_seconds if self.max_seconds is not None else default_budget(fit_seconds)
        requested = self.requested if isinstance(self.requested, str) else list(self.requested)
        skipped = None
        if s.num_workers > 1:
            skipped = (f"{s.num_workers} workers: every worker would have to try each change in lockstep, "
                       "which the what-if does not coordinate; run it on a single-worker job")
        situation = None
        interrupted = False
        if skipped is None:
            if s.rank == 0:
                log.info("advisor: what-if: trying changes on this model for up to %.0f s "
                         "(Ctrl-C ends it and keeps the run)", budget)
            try:
                situation = situation_from_session(s)
            except InputError as exc:
                skipped = str(exc)
            except KeyboardInterrupt:  # inspecting the input took the Ctrl-C: the run goes on
                skipped, interrupted = "interrupted (Ctrl-C) before it started", True
        if situation is None:
            result = WhatIfResult("end", s.data.kind, s.data.batch_size, requested, budget, fit_seconds, skipped=skipped)
            if interrupted:
                result.interrupted, result.stopped = True, skipped
            s.writer.write(result.to_record())
            s.event("whatif", f"what-if skipped: {skipped}", level="info")
            return
        try:
            self.result = run_whatif(situation, self.requested, budget=budget, rounds=self.rounds, mode="end",
                                     fit_seconds=fit_seconds, started=now, seconds=self.seconds)
        finally:
            s.shared["whatif_seconds"] = time.perf_counter() - now
        s.writer.write(self.result.to_record())
        s.shared["whatif"] = self.result
        if self.result.interrupted:
            s.event("whatif", "what-if interrupted (Ctrl-C): the run and what was measured are kept", level="warning")
        if s.rank == 0:
            log.info("advisor: what-if (%.1f of %.1f s): %s", self.result.seconds, budget, self.result.summary())
