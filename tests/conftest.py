"""Shared test setup: quiet TensorFlow, one thread per op pool (2-core machines), tiny models."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "2")

import pytest  # noqa: E402


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    """A fresh store for the test; ADVISOR_RUNS_DIR points at it."""
    path = tmp_path / "runs"
    monkeypatch.setenv("ADVISOR_RUNS_DIR", str(path))
    return path
