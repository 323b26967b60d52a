"""The what-if as a collector (``AdvisorCallback(whatif="auto")``, and ``"needed"``, the default:
only when training measured a sign of a change it can try): it builds the situation and calls the
experiment (``advisor.experiments.whatif``; ``advisor.whatif(model, data)`` is its API).

Inside ``fit`` the situation comes from what the other collectors left in the session at train
end — the tf.data graph (pipeline), the input's cost (baseline), the compiled settings and device
(context), the time to the first step (epochs) — since collectors never read the diagnosis.
Outside ``fit`` the same values are read from the model and the input directly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, Literal

from advisor.collectors.collector import Collector
from advisor.collectors.option_spec import Option, count, positive
from advisor.collectors.session import Notes, Session
from advisor.experiments.settings import (
    NEEDED_INPUT_COST,
    NEEDED_MIN_ALLOWANCE,
    NEEDED_STEP_S,
    WHATIF_ROUNDS,
    WhatIfPlan,
    measurement_allowance,
    parse_whatif,
)
from advisor.experiments.whatif import (
    InputError,
    Situation,
    WhatIfResult,
    cpu_count,
    default_allowance,
    feeds_from_session,
    pipeline_summary,
    run_whatif,
    unchanged_trial,
)
from advisor.noise import beyond_the_inputs_work

log = logging.getLogger("advisor")
# What whatif= accepts; True means "on, the default way" ("auto"), as for baseline=.
WhatIf = Literal["needed", "auto"] | Sequence[str] | bool | None
AUTO = WhatIfPlan("auto")  # collectors=["whatif"] with whatif=None: the changes "auto" would try


def _whatif(name: str, value: Any) -> WhatIfPlan | None:
    return parse_whatif(value)  # whatif= is interpreted there, once, for every reader


def _recorded(plan: WhatIfPlan | None) -> str | list[str] | None:
    return None if plan is None else plan.recorded()


OPTIONS = (
    Option(
        "whatif",
        "WhatIf",
        "needed",
        '``"needed"`` (default): after training, when what it measured points to a change the '
        "what-if can try (the input costs 10% of step time or more, a step under 5 ms, a step run "
        "eagerly) and the defaults' share of the fit (a tenth of a fit of a minute or more, "
        'the baseline included) leaves it 3 s, try the changes ``"auto"`` would, on a '
        'single worker; ``"auto"``: always try the changes the model and input point to; or a '
        "list of candidate names (``parallel_map``, ``cache_map``, ``jit_compile``, "
        "``steps_per_execution_8``, ``batch_x2``…). Each change is tried on this model and input "
        "beside the unchanged configuration and its measured gain is recorded (None: off); "
        '``"backends"`` in the list: every Keras backend × jit_compile in fresh processes. '
        'True: ``"auto"``. See docs/whatif.md.',
        _whatif,
        stored="WhatIfPlan | None",
        record=_recorded,
    ),
    Option(
        "whatif_max_seconds",
        "float | None",
        None,
        "the what-if's whole allowance (None: the smaller of 10% of the fit and 60 s).",
        positive(optional=True),
    ),
    Option(
        "whatif_rounds",
        "int",
        WHATIF_ROUNDS,
        "interleaved rounds of the what-if (each gain's band comes from them).",
        count(3),
    ),
    Option(
        "whatif_seconds",
        "float | None",
        None,
        "measure the rounds for about this long in all, then stop (None: use what the "
        "allowance leaves after preparing); ``whatif_max_seconds`` still caps it all.",
        positive(optional=True),
    ),
)


def situation_from_session(session: Session) -> Situation:
    """The situation at train end, from the session the collectors share."""
    data, model, notes = session.data, session.model, session.notes
    context = notes.context
    kind = data.kind or "unknown"
    adapter = data.adapter
    dataset = data.dataset if kind == "tf.data" else None
    arrays = py_dataset = loader = summary = None
    if kind == "tf.data":
        recorded = notes.pipeline.get("summary")
        summary = recorded if isinstance(recorded, dict) else pipeline_summary(dataset)
    elif kind == "numpy":
        feeds = feeds_from_session(data, session.backend)
        if feeds.resize is not None:
            feeds.resize(2**62)  # every whole batch of the arrays: the user's epoch
        arrays = dict(feeds.real or {})
    elif kind == "pydataset":
        py_dataset = getattr(adapter, "py_dataset", None) or getattr(
            adapter, "_keras_sequence", None
        )
    elif kind == "torch":
        loader = getattr(adapter, "_dataloader", None)
    spe = session.steps_per_execution
    unchanged = unchanged_trial(
        model,
        kind,
        dataset=dataset,
        arrays=arrays,
        py_dataset=py_dataset,
        loader=loader,
        batch_size=data.batch_size,
        steps_per_epoch=data.steps_per_epoch,
        spe=spe,
    )
    tally = session.tally  # training's last epoch: its length is known where the input's is not
    if unchanged.finite and unchanged.epoch_length is None and tally is not None and tally.steps:
        unchanged.epoch_length = tally.steps
    baseline = notes.baseline
    return Situation(
        model=model,
        backend=session.backend,
        flavor=session.keras_flavor,
        kind=kind,
        unchanged=unchanged,
        batch_size=unchanged.batch_size,
        steps_per_execution=spe,
        dataset=dataset,
        summary=summary,
        py_dataset=py_dataset,
        loader=loader,
        jit_compile=context.get("context.jit_compile"),
        run_eagerly=bool(context.get("context.run_eagerly")),
        dtype_policy=context.get("context.dtype_policy"),
        device=context.get("context.device"),
        input_cost=getattr(baseline, "bound_fraction", None),
        input_cost_outside_band=getattr(baseline, "bound_outside_band", None),
        compile_seconds=notes.first_step_seconds,
        cpu_count=cpu_count(),
        step_seconds=_training_step_seconds(notes, unchanged.batch_size),
        input_batch_seconds=_input_batch_seconds(baseline, unchanged.batch_size),
    )


def _input_batch_seconds(baseline: Any, batch_size: int) -> float | None:
    """Seconds per batch of the input as the baseline measured it (the slower of the real input
    and the input alone), if it did."""
    rates = [
        getattr(baseline, name, None) for name in ("real_samples_per_s", "data_only_samples_per_s")
    ]
    known = [float(r) for r in rates if isinstance(r, (int, float)) and r > 0]
    return batch_size / min(known) if known and batch_size else None


def _training_step_seconds(notes: Notes, batch_size: int) -> float | None:
    """One step's time during training (from the throughput collector's last window), if known."""
    rate = notes.last_samples_per_s
    return (
        batch_size / float(rate)
        if isinstance(rate, (int, float)) and rate > 0 and batch_size
        else None
    )


def needed(session: Session, allowance: float) -> str | None:
    """Why the default what-if (``whatif="needed"``) should run after this fit, or None: what
    training measured points to a change it can try, the allowance can hold it, one worker."""
    if session.num_workers > 1 or allowance < NEEDED_MIN_ALLOWANCE:
        return None
    notes = session.notes
    baseline = notes.baseline
    cost = getattr(baseline, "bound_fraction", None)
    if (
        isinstance(cost, (int, float))
        and cost >= NEEDED_INPUT_COST
        and getattr(baseline, "bound_outside_band", False)
        and beyond_the_inputs_work(
            cost,
            getattr(baseline, "real_samples_per_s", None),
            getattr(baseline, "data_only_samples_per_s", None),
            notes.context.get("context.host_cpu_count"),
            notes.context.get("context.device"),
        )
        is None
    ):
        return f"the input costs {cost:.0%} of step time"
    if notes.context.get("context.run_eagerly"):
        return "the step runs eagerly"
    step = _training_step_seconds(notes, session.data.batch_size or 0)
    spe = session.steps_per_execution or 1
    if step is not None and step < NEEDED_STEP_S * spe:
        return f"a step takes {1000 * step:.2f} ms: dispatch may dominate it"
    return None


class WhatIfCollector(Collector):
    """Runs the what-if at train end, after the baseline, and records it."""

    name = "whatif"

    def __init__(
        self,
        plan: WhatIfPlan = AUTO,
        max_seconds: float | None = None,
        rounds: int = WHATIF_ROUNDS,
        seconds: float | None = None,
    ) -> None:
        super().__init__()
        self.seconds = seconds
        self.backends = plan.backends
        # None: the backend what-if alone
        self.requested: str | tuple[str, ...] | None = plan.in_process
        self.max_seconds = max_seconds
        self.rounds = rounds
        self.result: WhatIfResult | None = None

    def on_train_end(self) -> None:
        if self.requested is not None:
            self._in_process()
        if self.backends:
            self._backends()

    def _backends(self) -> None:
        """The backend what-if (every Keras backend × compile mode in fresh processes), within
        ``max_seconds`` (default 300 s), on the chief only; recorded as a ``backends`` record."""
        from advisor.errors import AdvisorError
        from advisor.experiments.backends import MAX_SECONDS, data_from_session, measure_backends

        s = self.session
        if s.rank != 0:
            return
        allowance = self.max_seconds if self.max_seconds is not None else MAX_SECONDS
        log.info(
            "advisor: backend what-if: this model on every installed backend x compile mode, "
            "each in a "
            "fresh process, for up to %.0f s",
            allowance,
        )
        now = time.perf_counter()
        try:
            data, batch_size = data_from_session(s.data)
            result = measure_backends(
                s.model, data, batch_size=batch_size or s.data.batch_size, max_seconds=allowance
            )
        except (AdvisorError, OSError) as exc:
            s.event("whatif", f"backend what-if skipped: {exc}", level="info")
            return
        finally:
            s.notes.whatif_seconds += time.perf_counter() - now
        s.writer.write(result.to_record())
        log.info("advisor: backend what-if (%.1f s): %s", result.seconds, result.summary())

    def _situation(self, allowance: float) -> tuple[Situation | None, str | None, bool]:
        """(the situation, or None with why it was skipped, whether a Ctrl-C did it)."""
        s = self.session
        if s.num_workers > 1:
            return (
                None,
                f"{s.num_workers} workers: every worker would have to try each change in "
                "lockstep, which the what-if does not coordinate; run it on a single-worker job",
                False,
            )
        if s.rank == 0:
            log.info(
                "advisor: what-if: trying changes on this model for up to %.0f s "
                "(Ctrl-C ends it and keeps the run)",
                allowance,
            )
        try:
            return situation_from_session(s), None, False
        except InputError as exc:
            return None, str(exc), False
        except KeyboardInterrupt:  # inspecting the input took the Ctrl-C: the run goes on
            return None, "interrupted (Ctrl-C) before it started", True

    def _in_process(self) -> None:
        assert self.requested is not None
        s = self.session
        now = time.perf_counter()
        fit_seconds = now - s.train_begin_t - s.notes.baseline_seconds
        allowance = (
            self.max_seconds if self.max_seconds is not None else default_allowance(fit_seconds)
        )
        wanted = self.requested
        if wanted == "needed":
            if self.max_seconds is None:  # the defaults together keep to their share of the fit
                allowance = max(
                    0.0,
                    min(allowance, measurement_allowance(fit_seconds) - s.notes.baseline_seconds),
                )
            why = needed(s, allowance)
            if why is None:
                # nothing measured points to a change: the fit ends as it would without it
                return
            log.debug("advisor: what-if needed: %s", why)
            wanted = "auto"
        situation, skipped, interrupted = self._situation(allowance)
        if situation is None:
            requested = wanted if isinstance(wanted, str) else list(wanted)
            result = WhatIfResult(
                "end",
                s.data.kind,
                s.data.batch_size,
                requested,
                allowance,
                fit_seconds,
                skipped=skipped,
            )
            if interrupted:
                result.interrupted, result.stopped = True, skipped
            s.writer.write(result.to_record())
            s.event("whatif", f"what-if skipped: {skipped}", level="info")
            return
        try:
            self.result = run_whatif(
                situation,
                wanted,
                allowance=allowance,
                rounds=self.rounds,
                mode="end",
                fit_seconds=fit_seconds,
                started=now,
                seconds=self.seconds,
            )
        finally:
            s.notes.whatif_seconds = time.perf_counter() - now
        s.writer.write(self.result.to_record())
        s.notes.whatif = self.result
        if self.result.interrupted:
            s.event(
                "whatif",
                "what-if interrupted (Ctrl-C): the run and what was measured are kept",
                level="warning",
            )
        if s.rank == 0:
            log.info(
                "advisor: what-if (%.1f of %.1f s): %s",
                self.result.seconds,
                allowance,
                self.result.summary(),
            )
