"""A training process killed with SIGKILL mid-epoch keeps every flushed record."""

from __future__ import annotations

import pytest

from advisor.store.reader import RunReader, list_run_dirs
from advisor.store.schema import WindowRecord

pytestmark = pytest.mark.slow  # trains a model or starts a process


def test_sigkill_mid_epoch_keeps_flushed_records(killed_mid_window):
    # A slow fit SIGKILLed mid-epoch once five windows were flushed (tests/conftest.py; the same
    # process serves tests/faults/test_killed_runs.py).
    runs_dir, windows_seen = killed_mid_window
    (run_dir,) = list_run_dirs(runs_dir)
    run = RunReader(run_dir).read()
    assert run.status == "killed"
    windows = run.of_type(WindowRecord)
    assert len(windows) >= windows_seen
    # Windows are contiguous: no record in the middle was lost.
    for before, after in zip(windows, windows[1:]):
        assert after.step_begin == before.step_end
