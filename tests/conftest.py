"""Shared test setup: quiet TensorFlow, one thread per op pool (2-core machines), tiny models."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "2")
# torch (and OpenMP BLAS) with one thread, here and in the processes tests start (DESIGN.md): on a
# shared 2-core machine torch's 2-thread OpenMP pool turned a 2.5 ms step into 10–140 ms.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    """A fresh store for the test; ADVISOR_RUNS_DIR points at it."""
    path = tmp_path / "runs"
    monkeypatch.setenv("ADVISOR_RUNS_DIR", str(path))
    return path
