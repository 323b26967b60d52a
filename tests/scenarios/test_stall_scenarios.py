"""Periodic stalls attributed to their cause, end to end with default options: full garbage
collections set off by a callback's rolling history of Python records (gc_stalls) are named by
M172 with what they coincide with, and M150 no longer prices them; the healthy control, run on
the JAX and torch backends, stays quiet with compile events and collection timing on (the
TensorFlow control is tests/scenarios/test_scenarios.py's). Fits of 20 s on a busy 2-core host
last about a minute each: ``long``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.long]

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "scenarios"))

import suite  # noqa: E402


def _diagnosed(name, tmp_path, monkeypatch, backend=None):
    pytest.importorskip("tensorflow")
    if backend:
        pytest.importorskip(backend)
        monkeypatch.setenv("KERAS_BACKEND", backend)
    monkeypatch.setenv("ADVISOR_SCENARIO_SECONDS", "20")
    (expected,) = suite.scenarios([name])
    suite.run(expected, tmp_path / "runs", timeout_s=600)
    report = suite.diagnose(tmp_path / "runs")
    return expected, report, suite.score(expected, report)


def test_full_garbage_collections_are_named_and_not_priced_twice(tmp_path, monkeypatch):
    expected, report, score = _diagnosed("gc_stalls", tmp_path, monkeypatch)
    assert not score.missed, f"{score.missed} did not fail ({score.failed})"
    assert not score.fired_forbidden, f"{score.fired_forbidden} must not fire"
    assert not score.unexpected, f"{score.unexpected} flagged"
    found = {f.code: f for f in report.findings}
    assert "full (gen-2) garbage collection" in found["M172"].message
    assert "gc.freeze()" in found["M172"].fix
    # M150 passes, and says what its outliers coincide with.
    assert found["M150"].status == "pass"
    assert "garbage collection" in found["M150"].message


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_healthy_control_stays_quiet_on_each_backend(backend, tmp_path, monkeypatch):
    expected, _report, score = _diagnosed("healthy", tmp_path, monkeypatch, backend)
    assert not score.fired_forbidden, f"{backend}: {score.fired_forbidden} must not fire"
    assert not score.flagged, f"{backend}: {score.flagged} flagged"
