"""The range corpus's copies per family reach the run's output under the suite's two xdist
workers, as in CI: a worker's own output is never shown (``capsys.disabled()`` printed nothing
there), so the counts travel in the test's report and the controller prints them in the summary,
before the summary's last line (tests/conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from range_mutations import FAMILIES

pytestmark = [pytest.mark.slow, pytest.mark.long]  # starts pytest with two worker processes

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = (
    "tests/faults/test_ranges.py::"
    "test_a_sample_of_range_mutations_of_real_runs_is_never_judged_as_clean"
)


def test_the_counts_per_family_are_printed_under_two_workers():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", SAMPLE],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-2000:]
    assert "range corpus sample, seed 52:" in out, out[-3000:]
    for family in FAMILIES:
        assert re.search(rf"^{family} +2 copies, judged as clean +0$", out, re.M), family
    assert re.search(r"^all +18 copies, judged as clean +0; .*: 0$", out, re.M)
    assert out.strip().splitlines()[-1].startswith("1 passed")  # the summary stays last
