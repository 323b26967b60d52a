"""Stopping a Ray sweep within a deadline, also when Ray itself does not answer.

Ctrl-C ends the running configuration (its workers, actors and placement group) and then the Ray
session: a connection is closed, a Ray instance the sweep started (GCS, raylet, dashboard agents,
workers) is shut down. Each of those Ray calls waits on the cluster, which a loaded host can leave
unanswered for minutes, so each runs with a timeout: the configuration's cleanup within
``ACTORS_STOP_S``, ``ray.shutdown`` within ``SHUTDOWN_S``; then the processes of the instance the
sweep started are SIGKILLed and waited for up to ``KILL_WAIT_S``. Whatever Ray does, Ctrl-C ends
the sweep within ``STOP_DEADLINE_S`` (and Python's exit).

Killed are only this process's own: the children it started in ``ray.init`` and their descendants
(actors and their workers), listed at the start and again at the stop, since a child of a killed
raylet is no longer ours to find. A cluster given by ``--address`` is never touched beyond our
actors and placement group (and those the cluster ends with our job when the driver leaves).

A second Ctrl-C during the stop skips what is left of it: the processes are killed at once and
the sweep ends with 130, as an interrupted command does (docs/check.md).

When ``ray.shutdown`` did not return, Ray stays half-connected in this process, and Python's exit
crashed on it (SIGSEGV, each time it was tried): the process then ends by ``exit_now``
(``os._exit``), after the summary when the sweep was not interrupted.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn

import psutil

log = logging.getLogger("advisor")

ACTORS_STOP_S = 15.0  # the configuration's workers stopped, actors killed, placement group removed
SHUTDOWN_S = 15.0  # ray.shutdown of the session
KILL_WAIT_S = 5.0  # the instance's processes SIGKILLed, then waited for
STOP_DEADLINE_S = ACTORS_STOP_S + SHUTDOWN_S + KILL_WAIT_S
INTERRUPTED_EXIT = 130  # the CLI's exit codes (advisor.cli.main, docs/check.md): interrupted,
ERROR_EXIT = 2  # and a usage or internal error


def bounded(call: Callable[[], object], timeout_s: float, what: str) -> bool:
    """Run ``call`` in a daemon thread; whether it returned (or raised) within ``timeout_s``.

    A call that does not return is left behind in its thread: Ray offers no way to cancel it.
    ``KeyboardInterrupt`` in the waiting thread passes."""
    done = threading.Event()

    def target() -> None:
        try:
            call()
        except Exception as exc:  # noqa: BLE001 (a cleanup step: what failed is logged, the stop goes on)
            log.debug("%s failed: %s", what, exc)
        finally:
            done.set()

    threading.Thread(target=target, name=f"advisor-ray-{what}", daemon=True).start()
    if done.wait(max(0.0, timeout_s)):
        return True
    log.warning("%s did not return within %g s", what, timeout_s)
    return False


class OwnProcesses:
    """The processes a ``ray.init`` in this process started: its new children and their
    descendants. Children that were there before (another Ray cluster started by this process,
    for one) and theirs are never included."""

    def __init__(self) -> None:
        self._me = psutil.Process()
        self._before = {_key(p) for p in self._me.children()}
        self._found: dict[tuple[int, float], psutil.Process] = {}

    def note(self) -> None:
        """Add the new children and the descendants of all found so far (call after ``ray.init``
        and before stopping: a descendant whose parent dies is reparented out of reach)."""
        roots = [p for p in self._me.children() if _key(p) not in self._before]
        for root in [*roots, *self._found.values()]:
            try:
                family = [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
            for proc in family:
                key = _key(proc)
                if key[1] >= 0:
                    self._found.setdefault(key, proc)

    def alive(self) -> list[psutil.Process]:
        return [p for p in self._found.values() if _running(p)]

    def wait(self, timeout_s: float) -> list[psutil.Process]:
        """Wait up to ``timeout_s`` for them to exit; those still running."""
        _, alive = psutil.wait_procs(self.alive(), timeout=max(0.0, timeout_s))
        return [p for p in alive if _running(p)]

    def kill(self, wait_s: float = KILL_WAIT_S) -> list[psutil.Process]:
        """SIGKILL the ones still running; those that did not exit within ``wait_s``."""
        victims = self.alive()
        for proc in victims:
            try:
                proc.kill()  # psutil checks that the pid is still this process, not a reused one
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(victims, timeout=wait_s)
        return [p for p in alive if _running(p)]


def _key(proc: psutil.Process) -> tuple[int, float]:
    try:
        return proc.pid, proc.create_time()
    except psutil.Error:
        return proc.pid, -1.0


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class Interrupts:
    """Counts SIGINTs while installed; each one raises ``KeyboardInterrupt`` as Python's own
    handler does, so the count tells the stop whether Ctrl-C came again."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1:
            log.warning(
                "stopping the sweep: workers, Ray actors and Ray (at most %g s; Ctrl-C again "
                "to kill them now)",
                STOP_DEADLINE_S,
            )
        raise KeyboardInterrupt

    @property
    def again(self) -> bool:
        return self.count >= 2


@contextmanager
def counting_interrupts() -> Iterator[Interrupts]:
    """Install an ``Interrupts`` for SIGINT where Python's default handler is installed (not
    where SIGINT is ignored, as for a command started with ``&`` in a script, nor off the main
    thread)."""
    interrupts = Interrupts()
    installed = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    if installed:
        signal.signal(signal.SIGINT, interrupts)
    try:
        yield interrupts
    finally:
        if installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def stop_session(ray: Any, own: OwnProcesses | None, interrupts: Interrupts) -> bool:
    """Shut down the session within ``SHUTDOWN_S``, then (``own``: the instance was started here)
    kill what is left of the instance within ``KILL_WAIT_S``. A second Ctrl-C, before or during
    the shutdown, skips to the kill. Whether ``ray.shutdown`` finished: when not, Ray is left
    half-connected in this process, and only ``exit_now`` ends it safely."""
    end = time.monotonic() + SHUTDOWN_S
    finished = False
    try:
        if own is not None:
            own.note()
        if not interrupts.again:
            finished = bounded(ray.shutdown, SHUTDOWN_S, "ray.shutdown")
        if finished and own is not None:  # Ray waits a second per process; its workers exit after
            own.wait(min(KILL_WAIT_S, end - time.monotonic()))
    except KeyboardInterrupt:
        pass  # Ctrl-C again: kill at once
    finally:
        if not finished:
            atexit.unregister(ray.shutdown)  # Ray's exit hook would wait on the same cluster again
    if own is not None:
        left = own.alive()
        if left:
            log.warning(
                "killing the %d process(es) left of the Ray instance this sweep started", len(left)
            )
            stuck = own.kill()
            if stuck:
                log.warning(
                    "Ray processes still running after SIGKILL: %s",
                    ", ".join(str(p.pid) for p in stuck),
                )
    return finished


def exit_now(code: int) -> NoReturn:
    """Flush the output and end the process without Python's exit: a Ray whose shutdown did not
    finish keeps C++ threads that crash the interpreter's teardown (SIGSEGV, seen every time)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
