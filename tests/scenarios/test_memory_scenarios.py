"""The memory scenarios end to end with default options: a callback that keeps every epoch's
weights is a leak with its rate and deadline (M180, the first warning); a cache that fills and
stops is not, on TensorFlow and on Keras's JAX and torch backends (the same script, its backend
set from outside); a custom torch loop that keeps its tensors is a leak named after the loop.
Each fit takes 20 s: `long` (docs/testing.md)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from advisor.service import diagnose

pytestmark = [pytest.mark.slow, pytest.mark.long]
pytest.importorskip("tensorflow")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "scenarios"))

import suite  # noqa: E402

SECONDS = "20"


def run_scenario(name, tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_SCENARIO_SECONDS", SECONDS)
    (expected,) = suite.scenarios([name])
    suite.run(expected, tmp_path / "runs", timeout_s=300)
    return expected, tmp_path / "runs"


@pytest.mark.parametrize("name", ["memory_leak_callback", "cache_fills", "memory_leak_torch_loop"])
def test_memory_scenario_meets_its_expectations(name, tmp_path, monkeypatch):
    expected, runs = run_scenario(name, tmp_path, monkeypatch)
    score = suite.score(expected, suite.diagnose(runs))
    assert not score.missed, f"{name}: {score.missed} did not fail; why: {score.why_missed}"
    assert not score.fired_forbidden, f"{name}: {score.fired_forbidden} must not fire"
    assert score.top_ok is not False, f"{name}: {score.top} ranks first, not {expected.top}"
    report = diagnose(runs_dir=runs)
    if name == "cache_fills":
        assert report.fact("memory.growing") is False
        assert "cache() filling" in report.fact("memory.left_out")
        return
    (m180,) = [f for f in report.findings if f.code == "M180"]
    assert report.fact("memory.growth_mb_per_epoch") > 30  # 48-58 MB kept an epoch
    assert report.fact("memory.exhaustion_epoch") is not None
    if name == "memory_leak_callback":
        first = next(f for f in report.findings if f.status == "fail" and f.severity != "info")
        assert first.code == "M180"
        # the memory grew across InMemorySnapshots' hooks, not TimeBudget's: it is named alone
        suspect = report.fact("memory.suspect")
        assert suspect.startswith("the callback InMemorySnapshots ") and "TimeBudget" not in suspect
    else:
        assert "loop's own code" in report.fact("memory.suspect")


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_filling_cache_is_no_leak_on_jax_and_torch(backend, tmp_path, monkeypatch):
    """The cache_fills script on another Keras backend (tf.data feeds Keras's JAX and torch
    trainers too): the verdict is measured — enough steady epochs after the fill — and flat."""
    pytest.importorskip(backend)
    monkeypatch.setenv("ADVISOR_SCENARIO_SECONDS", SECONDS)
    (expected,) = suite.scenarios(["cache_fills"])
    expected = dataclasses.replace(expected, backend=backend)
    suite.run(expected, tmp_path / "runs", timeout_s=300)
    report = diagnose(runs_dir=tmp_path / "runs")
    assert report.run.backend == backend
    score = suite.score(expected, report)
    assert not score.fired_forbidden, f"{backend}: {score.fired_forbidden} must not fire"
    # Measured, not unknown: 8 epochs or more give the last half of the differences the three a
    # leak would be called from (advisor.growth), whatever part of them the fill took.
    assert len(report.fact("memory.host.epoch_peaks_mb")) >= 8
    assert report.fact("memory.growing") is False
    assert "cache() filling" in report.fact("memory.left_out")
