"""Preemption said: on SIGTERM (a spot reclaim, Slurm preemption or ``scancel``, a Kubernetes
eviction) every open run is closed as ``terminated`` with the signal and the time, then the signal
goes on as it would have without the advisor.

Without this, SIGTERM's default action ends the process at once: no end record, ``run.json`` left
at ``running``, and the run read later as ``killed`` — the word of an out-of-memory SIGKILL. The
handler is installed from the main thread only (Python delivers signals there), when a fit opens
its run, and the previous one is put back when the last open run closes. It chains: a handler the
script installed before the fit still runs (``PreemptionCheckpointHandler``, a script's own
checkpoint-and-exit); with none, SIGTERM's default action ends the process as before (exit status
-15), so Keras's ``BackupAndRestore`` finds the backup it left, as without the advisor. A SIGTERM
the script ignores (``SIG_IGN``) stays ignored, and nothing is marked.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

log = logging.getLogger("advisor")

# How long the handler waits for the runs to close before passing the signal on: a close blocked
# by the interrupted main thread (it held the writer's lock) must not hang the process. Slurm and
# Kubernetes allow 30 s by default between SIGTERM and SIGKILL.
CLOSE_WAIT_S = 10.0

Handler = Callable[[int, FrameType | None], Any] | int | None


class SigtermHandler:
    """SIGTERM while runs are open: close them as terminated, then chain (module docs)."""

    def __init__(self, close_runs: Callable[[str], None]) -> None:
        self._close_runs = close_runs
        self._previous: Handler = None
        self._installed = False

    @property
    def installed(self) -> bool:
        return self._installed

    def install(self) -> bool:
        """Install the handler (main thread only; never over an ignored SIGTERM or a handler
        set outside Python, which could not be chained). Whether it is installed now."""
        if self._installed:
            return True
        if threading.current_thread() is not threading.main_thread():
            return False
        previous = signal.getsignal(signal.SIGTERM)
        if previous is None or previous == signal.SIG_IGN:
            return False
        try:
            signal.signal(signal.SIGTERM, self._handle)
        except (ValueError, OSError) as exc:  # an embedded interpreter may refuse
            log.debug("advisor: SIGTERM handler not installed: %s", exc)
            return False
        self._previous, self._installed = previous, True
        return True

    def restore(self) -> None:
        """Put the previous handler back, unless someone installed another over ours since."""
        if not self._installed or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) == self._handle:
            signal.signal(signal.SIGTERM, self._previous)  # type: ignore[arg-type]
        self._installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous
        closer = threading.Thread(
            target=self._close_quietly, args=("SIGTERM",), name="advisor-sigterm", daemon=True
        )
        closer.start()
        closer.join(CLOSE_WAIT_S)
        if closer.is_alive():
            log.warning("advisor: the run did not close within %g s of SIGTERM", CLOSE_WAIT_S)
        self.restore()
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)  # the default action: the process ends here

    def _close_quietly(self, name: str) -> None:
        try:
            self._close_runs(name)
        except Exception as exc:  # never stand between the signal and the process's end
            log.warning("advisor: could not mark the run terminated: %s", exc)
