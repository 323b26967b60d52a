"""Ctrl-C during a what-if: the first one ends it at the next batch and keeps what was measured."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


class Interrupted(KeyboardInterrupt):
    """Ctrl-C asked the what-if to end; raised between segments, never inside ``fit``."""


class StopFlag:
    """Set by the what-if's SIGINT handler; segments end at the next batch when it is."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self) -> bool:
        return self.requested

    def check(self) -> None:
        if self.requested:
            raise Interrupted


@contextlib.contextmanager
def ctrl_c_stops(flag: StopFlag) -> Iterator[None]:
    """While the what-if runs, the first Ctrl-C sets ``flag`` instead of raising inside a nested
    ``fit`` (TensorFlow can hang at exit when an iterator is abandoned with a ``py_function`` in
    flight); a second Ctrl-C interrupts at once. Only Python's own handler on the main thread is
    replaced: a handler of the user's stays in charge."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def first(signum: int, frame: Any) -> None:
        flag.requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)

    signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is first:
            signal.signal(signal.SIGINT, signal.default_int_handler)
