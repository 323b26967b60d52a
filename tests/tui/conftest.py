"""TUI test setup: dates in UTC and a fixture store in the working directory."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tui_fixtures import write_store


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    """Dates on screen in UTC, whatever the machine's zone."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    """The fixture store at ./runs (relative, so titles and snapshots do not show tmp paths)."""
    monkeypatch.chdir(tmp_path)
    write_store(Path("runs"), corrupt=True)
    return Path("runs")
