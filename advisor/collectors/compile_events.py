"""Compile events: every trace and compilation the backend runs during a fit or a custom loop, with
its seconds, its function and its cause (docs/goodput.md, "Compiling").

At train begin the collector installs the backend's listener — TensorFlow's tracing
(:mod:`~advisor.collectors.compile_tf`), ``jax.monitoring`` (:mod:`~advisor.collectors.compile_jax`)
or Dynamo's callbacks (:mod:`~advisor.collectors.compile_torch`) — and takes it off at train end, so
the advisor's own measurements after the fit are not counted. Each event is charged to the budget
phase it ran in (start-up, training steps, validation): the goodput collector and a custom loop's
budget move those seconds into the ``compile`` category. Events are written as a ``compile`` record
at every epoch end and at train end; nothing happens in batch hooks.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.ledger import PHASES, STARTUP

log = logging.getLogger("advisor")
MAX_EVENTS = 5000  # events kept per fit; a process compiling more is summarised by its counts
MAX_SPANS = 1000  # recent events whose time the throughput collector may look up


class CompileCollector(Collector):
    name = "compile"

    def __init__(self) -> None:
        super().__init__()
        self._pending: list[dict[str, Any]] = []
        self._listener: Any = None
        self._kept = 0
        self._dropped = 0

    def on_train_begin(self) -> None:
        self.session.notes.compile_seconds = {}
        self._listener = _listener_for(self.session.backend, self._emit)
        if self._listener is not None and not self._listener.install():
            self._listener = None

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None) -> None:
        self._flush()

    def on_train_end(self) -> None:
        self._stop()

    def on_before_close(self, status: str) -> None:
        self._stop()

    def _stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            for reason, count in listener.new_graph_breaks().items():
                self._pending.append(
                    {
                        "t": time.time(),
                        "seconds": 0.0,
                        "function": "graph",
                        "kind": "graph_break",
                        "cause": "graph_break",
                        "detail": reason,
                        "count": count,
                        "phase": self._phase(),
                    }
                )
            listener.uninstall()
            self._flush(force=True)  # a record, even empty: the events were counted

    def _phase(self) -> str:
        ledger = self.session.ledger
        if ledger is not None:
            state = ledger.state
            return state if state in PHASES else ("callbacks" if state.startswith("cb:") else state)
        loop_phase = self.session.notes.loop_phase
        return loop_phase() if loop_phase is not None else "train_steps"

    def _emit(self, event: dict[str, Any]) -> None:
        """Called by the listener, on the thread that compiled; never raises into it."""
        try:
            phase = self._phase()
            event["phase"] = phase
            notes = self.session.notes
            notes.compile_seconds[phase] = notes.compile_seconds.get(phase, 0.0) + event["seconds"]
            notes.compile_spans.append((time.perf_counter(), float(event["seconds"])))
            if len(notes.compile_spans) > MAX_SPANS:
                del notes.compile_spans[: MAX_SPANS // 2]
            if self._kept < MAX_EVENTS:
                self._kept += 1
                self._pending.append(event)
            else:
                self._dropped += 1
        except Exception as exc:  # pragma: no cover - defensive: the training goes on
            log.debug("advisor: a compile event was lost (%s)", exc)

    def _flush(self, force: bool = False) -> None:
        if not self._pending and not force:
            return
        from advisor.store.schema import CompileEvent, CompileRecord

        pending, self._pending = self._pending, []
        events = [CompileEvent(**e) for e in pending]
        framework = None
        if "tensorflow" in sys.modules:
            from advisor.collectors.compile_tf import framework_seconds

            framework = framework_seconds()
        self.session.writer.write(
            CompileRecord(
                t=time.time(),
                backend=self.session.backend,
                events=events,
                framework_seconds=framework,
            )
        )


class _Listeners:
    """The listeners of every framework the process has loaded (a TensorFlow loop may have JAX
    loaded beside it, through Keras)."""

    def __init__(self, listeners: list[Any]) -> None:
        self.listeners = listeners

    def install(self) -> bool:
        installed = []
        for listener in self.listeners:
            try:
                if listener.install():
                    installed.append(listener)
            except Exception as exc:  # an internal API this version lacks: that backend only
                log.debug("advisor: no compile events from %s (%s)", type(listener).__name__, exc)
        self.listeners = installed
        return bool(installed)

    def uninstall(self) -> None:
        for listener in self.listeners:
            listener.uninstall()

    def new_graph_breaks(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for listener in self.listeners:
            if hasattr(listener, "new_graph_breaks"):
                out.update(listener.new_graph_breaks())
        return out


def _listener_for(backend: str | None, emit: Any) -> _Listeners | None:
    """The listeners of the loaded frameworks (torch's when it compiles or is the backend)."""
    found: list[Any] = []
    if "tensorflow" in sys.modules:
        from advisor.collectors.compile_tf import TracingListener

        found.append(TracingListener(emit))
    if "jax" in sys.modules:
        from advisor.collectors.compile_jax import CompileSpans

        found.append(CompileSpans(emit))
    if "torch._dynamo" in sys.modules or (backend == "torch" and "torch" in sys.modules):
        from advisor.collectors.compile_torch import DynamoCompiles

        found.append(DynamoCompiles(emit))
    return _Listeners(found) if found else None


def move_compile(seconds: dict[str, float], spent: dict[str, float]) -> float:
    """Move compile seconds out of the phases they ran in into ``seconds["compile"]`` (a budget's
    categories, changed in place); returns the part moved from start-up."""
    moved = startup = 0.0
    for phase, value in spent.items():
        if phase not in PHASES or phase not in seconds:
            continue  # inside a callback or a measurement: left where it is
        take = max(0.0, min(value, seconds[phase]))
        seconds[phase] -= take
        moved += take
        if phase == STARTUP:
            startup = take
    if moved or spent:
        seconds["compile"] = seconds.get("compile", 0.0) + moved
    return startup
