"""The line protocol of the benchmarks' child processes: a child prints ``@fit {json}`` lines on
stdout (among whatever its framework prints), the parent reads the next one."""

from __future__ import annotations

import json
import subprocess

PREFIX = "@fit "


def answer(proc: subprocess.Popen[str]) -> dict | None:
    """The next ``@fit`` line's object, or None when the child's stdout ended without one."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(PREFIX):
            return json.loads(line[len(PREFIX) :])
    return None
