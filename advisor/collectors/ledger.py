"""The fit's wall clock, charged to one state at a time: the time budget behind goodput.

A :class:`Ledger` holds a current state and the clock reading it was last charged at. The
advisor's own hooks move it between the fit's phases (start-up, training steps, validation,
epoch boundaries); a wrapped hook of another callback, a model save or an advisor collector
*enters* a state of its own and *leaves* it, so their time is carved out of the phase they ran
in. Every second from the fit's begin is charged to exactly one state, so the states add up to
the wall clock by construction; what the ledger could not see stays outside and shows as
``unaccounted`` (docs/goodput.md).

Cost: ``enter``/``leave`` read the clock once each and update two dict entries; a phase switch
happens at epoch boundaries only. Calls from another thread (Keras's asynchronous callback
dispatch on JAX and torch) never touch the states: those hooks run beside training, and their
time is kept apart as overlapped.
"""

from __future__ import annotations

import threading
import time

# Phases of a fit; the advisor's callback switches between them.
STARTUP = "startup"  # train begin → the first step's end (tracing, compiling, the first batch)
TRAIN = "train_steps"  # training steps, the input wait inside them included
VALIDATION = "validation"
# an epoch's end → the next epoch's first step (a new iterator, Keras's bookkeeping)
BOUNDARY = "epoch_boundary"
ADVISOR = "advisor"  # the advisor's own hooks (its collectors enter "advisor:<name>")
CHECKPOINT = "checkpoint"  # model.save / save_weights during the fit
PHASES = (STARTUP, TRAIN, VALIDATION, BOUNDARY)


class Ledger:
    """Charges elapsed time to the current state; see the module docs."""

    __slots__ = (
        "seconds",
        "calls",
        "state",
        "last",
        "t0",
        "stack",
        "thread",
        "saves",
        "overlapped",
    )

    def __init__(self, t0: float, state: str = STARTUP) -> None:
        self.t0 = t0
        self.last = t0
        self.state = state
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.overlapped: dict[str, float] = {}  # state → seconds run off the training thread
        self.stack: list[str] = []
        self.thread = threading.get_ident()
        self.saves = (
            0  # model saves so far (a checkpoint callback's own saves are told apart by it)
        )

    def charge(self, now: float) -> None:
        """Charge the time since the last reading to the current state."""
        state = self.state
        self.seconds[state] = self.seconds.get(state, 0.0) + (now - self.last)
        self.last = now

    def phase(self, phase: str, now: float | None = None) -> None:
        """Switch the fit's phase; inside an entered state, the phase it returns to changes."""
        if self.stack:
            self.stack[0] = phase
            return
        self.charge(time.perf_counter() if now is None else now)
        self.state = phase

    @property
    def current_phase(self) -> str:
        return self.stack[0] if self.stack else self.state

    def enter(self, state: str) -> None:
        now = time.perf_counter()
        old = self.state
        self.seconds[old] = self.seconds.get(old, 0.0) + (now - self.last)
        self.last = now
        self.stack.append(old)
        self.state = state
        self.calls[state] = self.calls.get(state, 0) + 1

    def leave(self) -> None:
        now = time.perf_counter()
        state = self.state
        self.seconds[state] = self.seconds.get(state, 0.0) + (now - self.last)
        self.last = now
        self.state = self.stack.pop() if self.stack else self.current_phase

    def on_training_thread(self) -> bool:
        return threading.get_ident() == self.thread

    def wall(self, now: float) -> float:
        return now - self.t0

    def snapshot(self, now: float) -> dict[str, float]:
        """Seconds per state up to ``now``, the open state charged so far (nothing is changed)."""
        out = dict(self.seconds)
        out[self.state] = out.get(self.state, 0.0) + max(0.0, now - self.last)
        return out
