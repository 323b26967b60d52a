"""The collector protocol and the guard that keeps collectors harmless.

A collector is a plain object with any of the hook methods below. ``AdvisorCallback`` calls them
from Keras; each call goes through the guard: the first exception is logged once, recorded as an
``event`` in the run, and switches that collector off. Nothing reaches ``fit()``.

Hot path: only the batch hooks run every step. Collectors that need ``on_train_batch_end`` set
``batch_hook = True`` (``batch_begin_hook = True`` for ``on_train_batch_begin``) and must keep it
to a clock read and a counter bump (or return at once outside their window).

On JAX and torch, Keras may run ``on_train_batch_end`` on a worker thread (asynchronous callback
dispatch) when every callback of the fit says it is ``async_safe``. ``AdvisorCallback`` says so
when all its collectors with a batch-end hook set ``async_safe = True``: such a hook must be safe
to run off the training thread, concurrently with the next step and with other calls of itself
(no reading model state, no opening per-thread contexts). ``on_train_batch_begin`` and every
other hook always run on the training thread.
"""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.collectors.session import Session

log = logging.getLogger("advisor")

HOOKS = (
    "on_train_begin",
    "on_epoch_begin",
    "on_train_batch_begin",
    "on_train_batch_end",
    "on_test_begin",
    "on_test_end",
    "on_epoch_end",
    "on_train_end",
    "on_before_close",
    "on_run_closed",
)


class Collector:
    """Base class: override the hooks you need. ``name`` identifies it in events and config."""

    name = "collector"
    batch_hook = False
    batch_begin_hook = False
    async_safe = False  # the batch-end hook may run off the training thread (see the module docs)

    def __init__(self) -> None:
        self._session: Session | None = None

    def attach(self, session: Session) -> None:
        self._session = session

    @property
    def attached(self) -> bool:
        return self._session is not None

    @property
    def session(self) -> Session:
        """The fit this collector records (set by ``attach`` when the fit begins)."""
        if self._session is None:
            raise RuntimeError(f"{self.name} collector used before attach()")
        return self._session

    def on_train_begin(self) -> None: ...

    def on_epoch_begin(self, epoch: int) -> None: ...

    def on_train_batch_begin(self, batch: int) -> None: ...

    def on_train_batch_end(self, batch: int) -> None: ...

    def on_test_begin(self) -> None: ...

    def on_test_end(self) -> None: ...

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None) -> None: ...

    def on_train_end(self) -> None: ...

    def on_before_close(self, status: str) -> None:
        """Just before the run's end record: every other hook of the fit has run (every rank)."""

    def on_run_closed(self, status: str) -> None:
        """After the run directory is complete (end record written, manifest final); every rank."""


class Guard:
    """Calls collector hooks; a collector whose hook raises is logged once and switched off."""

    def __init__(self, collectors: list[Collector], session: Session | None = None) -> None:
        self.collectors = list(collectors)
        self.session = session
        self.disabled: dict[str, str] = {}

    def call(self, hook: str, *args: Any) -> None:
        from advisor.probes.quiet import quiet_tracing

        with quiet_tracing():  # the advisor's own traces are no retracing in the user's code
            self._call_each(hook, *args)

    def _call_each(self, hook: str, *args: Any) -> None:
        ledger = self.session.ledger if self.session is not None else None
        for collector in self.collectors:
            if collector.name in self.disabled:
                continue
            if ledger is not None:  # each collector's time is its own in the fit's budget
                ledger.enter(f"advisor:{collector.name}")
            try:
                getattr(collector, hook)(*args)
            except Exception as exc:
                self.fail(collector, hook, exc)
            finally:
                if ledger is not None:
                    ledger.leave()

    def fail(self, collector: Collector, hook: str, exc: BaseException) -> None:
        from advisor.store.redact import redact_text

        # training logs are shared too (CI output, a cluster's job log): no secret from the message
        message = redact_text(
            f"{collector.name} collector failed in {hook}: {type(exc).__name__}: {exc}"
        )
        self.disabled[collector.name] = message
        log.warning("advisor: %s; it is switched off, training goes on", message)
        if self.session is not None:
            try:
                detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
                self.session.event(collector.name, message, level="error", detail=detail)
            except Exception:
                pass

    def active(self, hook_attr: str | None = None) -> list[Collector]:
        return [
            c
            for c in self.collectors
            if c.name not in self.disabled and (hook_attr is None or getattr(c, hook_attr, False))
        ]
