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
from typing import Any, Protocol

from advisor.collectors.collector import Collector
from advisor.collectors.options import auto_profile_window, normalize_profile_steps
from advisor.errors import one_line
from advisor.store.schema import TraceRecord

log = logging.getLogger("advisor")

SOURCE = "profiler"


class ProfilerBackend(Protocol):
    """How one framework starts, stops and marks steps in a profile (xplane.pb output)."""

    name: str

    def start(self, logdir: str) -> None: ...

    def stop(self) -> None: ...

    def marker(self, step: int) -> AbstractContextManager[Any]: ...

    def already_running(self, exc: BaseException) -> bool: ...


class TensorFlowProfiler:
    name = "tensorflow"

    def __init__(self) -> None:
        import tensorflow as tf

        self._tf = tf

    def start(self, logdir: str) -> None:
        self._tf.profiler.experimental.start(logdir)

    def stop(self) -> None:
        self._tf.profiler.experimental.stop()

    def marker(self, step: int) -> AbstractContextManager[Any]:
        return self._tf.profiler.experimental.Trace("train", step_num=step, _r=1)  # type: ignore[no-any-return]

    def already_running(self, exc: BaseException) -> bool:
        return type(exc).__name__ == "AlreadyExistsError" or "already" in str(exc).lower()


class JaxProfiler:
    name = "jax"

    def __init__(self) -> None:
        import jax

        self._jax = jax

    def start(self, logdir: str) -> None:
        # JAX traces every Python call by default: that costs more than the steps themselves and
        # would show up as "all others" time. TF's profiler leaves Python tracing off too.
        options_cls = getattr(self._jax.profiler, "ProfileOptions", None)
        if options_cls is None:
            self._jax.profiler.start_trace(logdir)
            return
        options = options_cls()
        options.python_tracer_level = 0
        self._jax.profiler.start_trace(logdir, profiler_options=options)

    def stop(self) -> None:
        self._jax.profiler.stop_trace()

    def marker(self, step: int) -> AbstractContextManager[Any]:
        return self._jax.profiler.StepTraceAnnotation("train", step_num=step)  # type: ignore[no-any-return]

    def already_running(self, exc: BaseException) -> bool:
        return "already" in str(exc).lower()


class TorchProfiler:
    """``torch.profiler`` (Kineto): CPU activity, and CUDA where a GPU is present.

    Writes Kineto's chrome trace as ``<logdir>/plugins/profile/<session>/<host>.pt.trace.json``
    (the folder layout of TensorFlow profiles, so runs look alike). Steps are
    ``record_function("ProfilerStep#N")`` ranges, the name torch's own ``profiler.step()`` gives
    them, so TensorBoard's torch plugin and HTA read our traces too.
    """

    name = "torch"
    trace_suffix = ".pt.trace.json"

    def __init__(self) -> None:
        import torch
        import torch.profiler

        self._torch = torch
        self._profile: Any = None
        self._logdir = ""

    def start(self, logdir: str) -> None:
        profiler = self._torch.profiler
        activities = [profiler.ProfilerActivity.CPU]
        if self._torch.cuda.is_available():
            activities.append(profiler.ProfilerActivity.CUDA)
        prof = profiler.profile(activities=activities, record_shapes=False, with_stack=False)
        prof.start()
        self._profile, self._logdir = prof, logdir

    def stop(self) -> None:
        import socket

        prof, self._profile = self._profile, None
        if prof is None:
            return
        prof.stop()
        session = Path(self._logdir) / "plugins" / "profile" / time.strftime("%Y_%m_%d_%H_%M_%S")
        session.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(
            str(session / f"{socket.gethostname()}.{os.getpid()}{self.trace_suffix}")
        )

    def marker(self, step: int) -> AbstractContextManager[Any]:
        return self._torch.profiler.record_function(f"ProfilerStep#{step}")  # type: ignore[no-any-return]

    def already_running(self, exc: BaseException) -> bool:
        text = str(exc).lower()
        return "already" in text and "profil" in text


# Keras backend name → profiler backend factory.
BACKENDS: dict[str, Any] = {
    "tensorflow": TensorFlowProfiler,
    "jax": JaxProfiler,
    "torch": TorchProfiler,
}


class ProfilerCollector(Collector):
    """Captures one profile of training steps ``start..stop`` (see the module docs)."""

    name = "profiler"
    batch_hook = True
    batch_begin_hook = True

    def __init__(
        self,
        profile_steps: Any = (10, 34),
        summarize: bool = True,
        timeout_s: float | None = None,
        backend: ProfilerBackend | None = None,
    ) -> None:
        super().__init__()
        window = normalize_profile_steps(profile_steps)
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
                    f"profiling is not supported on the {s.backend!r} backend yet; no profile taken",
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
                "another profiler is already running in this process (e.g. TensorBoard's profile_batch)"
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
                f"steps_per_execution={self._spe}: Keras runs {self._spe} steps per call, so the profile cannot "
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
