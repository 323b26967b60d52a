"""The compile and stall scenarios end to end, with default options: a TensorFlow loop retracing at
every step, a JAX loop recompiling on a static argument, torch.compile recompiling for each batch
size, a Keras fit on JAX whose batch shapes change every few steps, and an epoch-start stall from a
refilled shuffle buffer. Each must rank its cause first, and the finding must name the function
(or what fills) with its count and seconds. Compiling on a busy 2-core machine makes these fits
last a minute or more each: ``long`` (CI's own step)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.long]

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "scenarios"))

import suite  # noqa: E402

# What the first finding's message must name, per scenario.
NAMES = {
    "retrace_custom_tf": ("train_step", "Python value"),
    "static_argument_jax": ("jit(train_step)", "static argument"),
    "recompile_torch": ("forward_loss", "input shapes"),
    "shape_changes_jax": ("train_step", "input shapes"),
    "epoch_start_shuffle": ("first steps waited", "shuffle buffer of 8,192 elements"),
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_the_cause_ranks_first_and_is_named(name, tmp_path, monkeypatch):
    pytest.importorskip("tensorflow")
    if name.endswith("_jax"):
        pytest.importorskip("jax")
    if name.endswith("_torch"):
        pytest.importorskip("torch")
    # long enough for a few measured epoch starts (the first epoch is warm-up) on a busy host
    monkeypatch.setenv("ADVISOR_SCENARIO_SECONDS", "25" if name == "epoch_start_shuffle" else "15")
    (expected,) = suite.scenarios([name])
    suite.run(expected, tmp_path / "runs", timeout_s=600)
    report = suite.diagnose(tmp_path / "runs")
    score = suite.score(expected, report)
    assert not score.missed, f"{name}: {score.missed} did not fail ({score.failed})"
    assert not score.fired_forbidden, f"{name}: {score.fired_forbidden} must not fire"
    assert score.top_ok is not False, f"{name}: {score.top} ranks first, not {expected.top}"
    first = next(f for f in report.findings if f.status == "fail")
    for words in NAMES[name]:
        assert words in first.message, first.message
