"""Profiler capture window: profile training steps ``start..stop`` into the run's ``traces/``.

    model.fit(ds, callbacks=[AdvisorCallback(profile_steps=(10, 34))])   # with everything else
    model.fit(ds, callbacks=[ProfilerCallback(profile_steps=(10, 34))])  # the profiler alone

Steps count from 1 across epochs, both ends included (as TensorBoard's ``profile_batch``). Each
step in the window is wrapped in a step marker (TF: ``tf.profiler.experimental.Trace("train",
step_num=i, _r=1)``; JAX: ``jax.profiler.StepTraceAnnotation``; torch:
``record_function("ProfilerStep#i")``): without it XProf finds no steps. TensorFlow and JAX write
XProf's ``.xplane.pb``; torch writes a chrome trace, summarised by
:mod:`advisor.traces.torch_trace` into the same ``trace.*`` facts where torch measures them.
The marker opens in ``on_train_batch_begin`` and closes in ``on_train_batch_end``, so a step
includes the callbacks' own time, as it does for the training job. With ``steps_per_execution``
k > 1 Keras runs k steps per call and XProf cannot see them apart: the capture still runs, the
``trace`` record says ``steps_marked=False`` and an event explains it.

Outside the window the batch hooks do one comparison and return; after the window they switch
themselves off. A profiler that is already running, a failed start or a failed save is recorded
(an ``event`` and a ``trace`` record with ``error``) and training goes on. At train end the
capture is summarised with XProf's converter (in a child process with a timeout) when ``xprof``
is installed; otherwise ``advisor trace RUN`` does it later.

Backends plug in through :data:`BACKENDS`: an object with ``start(logdir)``, ``stop()`` and
``marker(step)`` (a context manager) per Keras backend.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.option_spec import Option, positive
from advisor.collectors.profiler_backends import BACKENDS, ProfilerBackend
from advisor.errors import UsageError, one_line
from advisor.store.schema import TraceRecord

log = logging.getLogger("advisor")

SOURCE = "profiler"
DEFAULT_PROFILE_STEPS = (10, 34)  # 25 marked steps: trace shares need at least 20 to be stable
AUTO_PROFILE_STEPS = 25  # profile_steps="auto": this many steps, starting after the warm-up


def parse_profile_steps(value: Any) -> tuple[int, int]:
    """``(10, 34)``, ``[10, 34]``, ``"10,34"`` or ``12`` → (start, stop), 1-based and inclusive."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        parts = [value, value]
    if len(parts) == 1:
        parts = parts * 2
    try:
        start, stop = (int(p) for p in parts)
        if isinstance(parts[0], bool) or isinstance(parts[1], bool) or len(parts) != 2:
            raise ValueError
    except (TypeError, ValueError):
        raise UsageError(
            f"profile_steps={value!r}: give (start, stop), two step numbers from 1, e.g. (10, 34)"
        ) from None
    if start < 1 or stop < start:
        raise UsageError(f"profile_steps={value!r}: need 1 <= start <= stop (steps count from 1)")
    return start, stop


def profile_window(name: str, value: Any) -> tuple[int, int] | str | None:
    """None (no profile), ``"auto"`` (a short window after the warm-up, chosen at train begin)
    or (start, stop): the one interpretation of profile_steps=."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    return parse_profile_steps(value)


def auto_profile_window(
    warmup_steps: int, steps_per_execution: int = 1, epoch_steps: int | None = None
) -> tuple[int, int]:
    """The steps ``profile_steps="auto"`` captures: AUTO_PROFILE_STEPS steps (trace shares need
    20 to be stable) from a few steps after the warm-up, on whole executions; earlier (but after
    the warm-up) when that keeps the window inside the first epoch."""
    spe = max(1, int(steps_per_execution))

    def execution_start(step: int) -> int:  # the first step of the execution holding ``step``
        return ((step - 1) // spe) * spe + 1

    earliest = execution_start(warmup_steps + spe) if warmup_steps else 1
    start = max(earliest, execution_start(warmup_steps + 5 + spe))
    if epoch_steps and start + AUTO_PROFILE_STEPS - 1 > epoch_steps:
        start = max(earliest, execution_start(epoch_steps - AUTO_PROFILE_STEPS + 1))
    return start, start + AUTO_PROFILE_STEPS - 1


OPTIONS = (
    Option(
        "profile_steps",
        "tuple[int, int] | str | int | None",
        None,
        '``(start, stop)``: profile these training steps (1-based, inclusive); ``"auto"``: 25 '
        "steps from a few steps after the warm-up.",
        profile_window,
        stored="tuple[int, int] | str | None",
        record=lambda v: list(v) if isinstance(v, tuple) else v,
    ),
    Option("profile_summary", "bool", True, "summarise the profile with XProf at train end."),
    Option(
        "profile_timeout_seconds",
        "float | None",
        None,
        "seconds the summary may take (None: ``$ADVISOR_TRACE_TIMEOUT_S``, else 120).",
        positive(optional=True),
        env="ADVISOR_TRACE_TIMEOUT_S",
        old_names=("profile_timeout_s",),
        recorded_as="profile_timeout_s",
    ),
)


class ProfilerCollector(Collector):
    """Captures one profile of training steps ``start..stop`` (see the module docs)."""

    name = "profiler"
    batch_hook = True
    batch_begin_hook = True

    def __init__(
        self,
        profile_steps: tuple[int, int] | str = DEFAULT_PROFILE_STEPS,
        summarize: bool = True,
        timeout_s: float | None = None,
        backend: ProfilerBackend | None = None,
    ) -> None:
        super().__init__()
        # profile_window's value (the options checked it): "auto" or (start, stop)
        window = profile_steps
        self.auto = window == "auto"  # the window is chosen at train begin (after the warm-up)
        self.start_step, self.stop_step = (0, 0) if isinstance(window, str) else window
        self.summarize = bool(summarize)
        self.timeout_s = timeout_s
        self._backend = backend
        self._spe = 1
        self._calls = 0  # executions finished so far
        self._first_call = 1 << 62  # first execution in the window (set at train begin)
        self._last_call = -1
        self._active = False
        self._done = False
        self._marker: AbstractContextManager[Any] | None = None
        self._logdir: Path | None = None
        self._sessions_before: set[str] = set()
        self._window_first_step = 0
        self._marked_steps = 0  # step markers opened in this window
        self.records: list[TraceRecord] = []

    # -- hooks ---------------------------------------------------------------------------------
    def on_train_begin(self) -> None:
        s = self.session
        self._spe = max(1, int(s.steps_per_execution or 1))
        if self.auto:
            self.start_step, self.stop_step = auto_profile_window(
                s.options.warmup_steps, self._spe, s.data.steps_per_epoch
            )
        if self._backend is None:
            factory = BACKENDS.get(s.backend or "")
            if factory is None:
                s.event(
                    SOURCE,
                    f"profiling is not supported on the {s.backend!r} backend yet; "
                    "no profile taken",
                    level="warning",
                )
                self._finish_hooks()
                return
            self._backend = factory()
        self._first_call = (self.start_step - 1) // self._spe
        self._last_call = (self.stop_step - 1) // self._spe
        self._logdir = Path(s.writer.path) / "traces" / f"worker-{s.rank}"
        s.notes.profiler_window = (self.start_step, self.stop_step)

    def on_train_batch_begin(self, batch: int) -> None:
        if self._calls < self._first_call:
            return
        if not self._active:
            if self._done:
                return
            self._open_window()
            if not self._active:
                return
        if self._spe == 1:
            self._enter_marker(self._calls + 1)

    def on_train_batch_end(self, batch: int) -> None:
        self._calls += 1
        if not self._active:
            return
        if self._marker is not None:
            self._exit_marker()
        if self._calls > self._last_call:
            self._close_window(self._calls * self._spe)

    def on_train_end(self) -> None:
        if self._active:  # fit ended inside the window (early stop, short epoch, error)
            self._exit_marker()
            self._close_window(self._calls * self._spe)
        self._done = True
        self._finish_hooks()
        if self.summarize:
            for record in list(self.records):
                if record.error is None:
                    self._summarize(record)

    # -- window --------------------------------------------------------------------------------
    def _open_window(self) -> None:
        assert self._backend is not None and self._logdir is not None
        self._done = True  # one window per fit, whatever happens next
        first = self._calls * self._spe + 1
        self._window_first_step = first
        marked = self._spe == 1
        try:
            self._logdir.mkdir(parents=True, exist_ok=True)
            self._sessions_before = _sessions(self._logdir)
            self._backend.start(str(self._logdir))
        except Exception as exc:  # noqa: BLE001 — recorded; training goes on
            reason = (
                "another profiler is already running in this process "
                "(e.g. TensorBoard's profile_batch)"
                if self._backend.already_running(exc)
                else f"the profiler did not start: {one_line(exc)}"
            )
            self._record(first, None, marked, error=reason)
            self.session.event(SOURCE, f"no profile taken: {reason}", level="warning")
            self._finish_hooks()
            return
        self._active = True
        if not marked:
            self.session.event(
                SOURCE,
                f"steps_per_execution={self._spe}: Keras runs {self._spe} steps per call, "
                "so the profile cannot "
                "mark single steps; it has op statistics but no step-time breakdown (profile with "
                "steps_per_execution=1 for that)",
                level="warning",
            )

    def _close_window(self, last_step: int) -> None:
        assert self._backend is not None and self._logdir is not None
        self._active = False
        self._finish_hooks()
        marked = self._spe == 1
        try:
            self._backend.stop()
        except Exception as exc:  # noqa: BLE001 — recorded; training goes on
            reason = f"the profiler could not save the profile: {one_line(exc)}"
            self._record(self._window_first_step, last_step, marked, error=reason)
            self.session.event(SOURCE, reason, level="warning")
            return
        new = sorted(_sessions(self._logdir) - self._sessions_before)
        folder = self._logdir / "plugins" / "profile" / new[-1] if new else self._logdir
        self._record(self._window_first_step, last_step, marked, path=folder)

    def _enter_marker(self, step: int) -> None:
        assert self._backend is not None
        try:
            marker = self._backend.marker(step)
            marker.__enter__()
            self._marker = marker
            self._marked_steps += 1
        except Exception as exc:  # noqa: BLE001 — recorded; training goes on
            self._marker = None
            self.session.event(
                SOURCE, f"could not mark step {step}: {one_line(exc)}", level="warning"
            )

    def _exit_marker(self) -> None:
        marker, self._marker = self._marker, None
        if marker is not None:
            try:
                marker.__exit__(None, None, None)
            except Exception:  # noqa: BLE001, S110 — closing a step marker must never fail a step
                pass

    def _finish_hooks(self) -> None:
        """Take this collector off the per-batch hot path (from the next epoch boundary on)."""
        self.batch_hook = False
        self.batch_begin_hook = False
        self._first_call = 1 << 62

    # -- records -------------------------------------------------------------------------------
    def _record(
        self,
        first: int,
        last: int | None,
        marked: bool,
        path: Path | None = None,
        error: str | None = None,
        summary: str | None = None,
    ) -> TraceRecord:
        run_path = Path(self.session.writer.path)
        target = path if path is not None else (self._logdir or run_path / "traces")
        record = TraceRecord(
            t=time.time(),
            path=os.path.relpath(target, run_path),
            step_begin=first,
            step_end=last,
            steps_marked=marked,
            marked_steps=self._marked_steps if marked else 0,
            summary=summary,
            error=error,
        )
        self.session.writer.write(record)
        self.records.append(record)
        return record

    def _summarize(self, record: TraceRecord) -> None:
        from advisor.errors import TraceError
        from advisor.store.trace_summary import save_summary
        from advisor.traces.summarize import summarize, xprof_available
        from advisor.traces.torch_trace import find_torch_traces

        run_path = Path(self.session.writer.path)
        if not xprof_available() and not find_torch_traces(run_path / record.path):
            self.session.event(
                SOURCE,
                "the profile was saved but not summarised: xprof is not installed "
                f"(pip install xprof, then `advisor trace {run_path}`)",
            )
            return
        folder = run_path / record.path
        try:
            summary = summarize(folder, timeout_s=self.timeout_s)
            if self.session.backend == "jax":
                _jax_input_unseen(summary)
            target = save_summary(summary, folder)
        except TraceError as exc:
            self.session.event(
                SOURCE, f"the profile could not be summarised: {exc}", level="warning"
            )
            return
        updated = record.model_copy(
            update={"t": time.time(), "summary": os.path.relpath(target, run_path)}
        )
        self.session.writer.write(updated)
        self.records.append(updated)


def _jax_input_unseen(summary: Any) -> None:
    """XProf sees input only through tf.data's own ops. Keras on JAX feeds numpy batches from
    Python, so a profile without any input-pipeline time has not measured the input at all: its
    fetch time sits in "all others". Say so instead of reporting 0 %."""
    if summary.input_percent is not None and not any(summary.input_breakdown_us.values()):
        summary.input_percent = None
        summary.input_classification = None
        summary.breakdown_percent.pop("input", None)
        summary.notes.append(
            "input share unknown: on JAX, XProf does not see the batch fetch (it counts "
            "as 'all others'); the cached-input baseline measures it (baseline='end')"
        )


def _sessions(logdir: Path) -> set[str]:
    folder = logdir / "plugins" / "profile"
    try:
        return {p.name for p in folder.iterdir() if p.is_dir()}
    except OSError:
        return set()
