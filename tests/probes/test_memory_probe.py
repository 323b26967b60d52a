"""The host memory readings the memory collector takes at each epoch, on this real process: the
resident set, Linux's high-water mark and its reset, the children's resident memory (an input's
worker processes: here a real child process holding 64 MB), and what the process can still
take."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from advisor.probes.memory import HostMemory

HELD_MB = 64
# A child that writes HELD_MB of memory (resident), says so, and waits to be stopped.
CHILD = (
    "import sys, time\n"
    f"held = bytearray({HELD_MB} << 20)\n"
    "for i in range(0, len(held), 4096): held[i] = 1\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


# Run in a fresh process: a test worker may have children of its own left by earlier tests (a
# lingering helper process held 132 MB in one run), which the reading rightly counts.
CHECK = f"""
import json, subprocess, sys
from advisor.probes.memory import HostMemory
host = HostMemory()
before = host.children_rss()
child = subprocess.Popen([sys.executable, "-c", {CHILD!r}], stdout=subprocess.PIPE, text=True)
try:
    ready = child.stdout.readline().strip()
    held = host.children_rss()
finally:
    child.kill()
    child.wait()
print(json.dumps({{"before": before, "ready": ready, "held": held, "after": host.children_rss()}}))
"""


@pytest.mark.slow  # starts processes
def test_the_childrens_resident_memory_is_read():
    done = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["before"] is None  # no child yet: nothing to add
    assert found["ready"] == "ready"
    assert found["held"] is not None and found["held"] >= HELD_MB << 20
    assert found["after"] is None


def test_the_peak_is_reset_and_then_follows_new_allocations():
    host = HostMemory()
    if not host.peak_resets:
        pytest.skip("this platform keeps no resettable peak (Linux's clear_refs)")
    host.release_free()
    host.reset_peak()
    start = host.peak()
    assert start is not None and start >= host.rss() * 0.9
    block = bytearray(96 << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1  # written: resident
    grown = host.peak()
    del block
    assert grown is not None and grown - start >= 80 << 20
    assert host.available() is not None and host.available() > 0
