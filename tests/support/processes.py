"""Processes a test module starts side by side and must not leave behind."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable


def kill_leftovers(procs: Iterable[subprocess.Popen[bytes]]) -> None:
    """Kill and reap every process still running (normally all ended already; a failed test may
    leave one)."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
