"""The speed-of-light and precision scenarios, end to end with default options, each with
``ADVISOR_SCENARIO_SECONDS=15`` (examples/scenarios; docs/speed-of-light.md):

- ``mixed_float16_cpu`` (TensorFlow) and ``mixed_float16_cpu_torch``: the precision what-if runs
  by itself (the policy is not float32) and the first finding of warning level or above is G553
  with the measured slowdown;
- ``mixed_float16_cpu_jax``: XLA's CPU compiler computes float16 almost as fast as float32, so
  the slowdown sits near G553's threshold; the test asserts what was measured, not the verdict;
- ``healthy``, ``healthy_jax``, ``healthy_torch``: a float32 fit stays quiet, G552 passes and the
  fraction of speed of light lies between 0 and 1;
- ``far_below_speed_of_light``: G552 fails with the input wait first among its measured reasons,
  and C401 (the input's cause) ranks first.

Each starts the fit and, for the mixed ones, three fresh processes: ``long``."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.long]
pytest.importorskip("tensorflow")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "scenarios"))

import suite  # noqa: E402


def _run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ADVISOR_SCENARIO_SECONDS", "15")
    (expected,) = suite.scenarios([name])
    if expected.backend:
        pytest.importorskip(expected.backend)
    suite.run(expected, tmp_path / "runs", timeout_s=600)
    report = suite.diagnose(tmp_path / "runs")
    return expected, report, suite.score(expected, report)


@pytest.mark.parametrize("name", ["mixed_float16_cpu", "mixed_float16_cpu_torch"])
def test_mixed_float16_on_a_cpu_leads_with_the_measured_precision_finding(
    name, tmp_path, monkeypatch
):
    _, report, score = _run(name, tmp_path, monkeypatch)
    assert score.flagged and score.flagged[0] == "G553", (score.flagged, score.why_missed)
    assert not score.unexpected, score.unexpected
    g553 = next(f for f in report.findings if f.code == "G553")
    slowdown = re.search(r"float32 trains ([0-9.]+)×", g553.message)
    assert slowdown is not None and float(slowdown.group(1)) > 1.5, g553.message
    assert report.fact("speed_of_light.fraction") is not None


def test_mixed_float16_on_jax_measures_every_policy_in_fresh_processes(tmp_path, monkeypatch):
    _, report, score = _run("mixed_float16_cpu_jax", tmp_path, monkeypatch)
    assert not score.unexpected, score.unexpected
    table = {row["policy"]: row for row in report.fact("precision.table")}
    assert set(table) == {"float32", "mixed_bfloat16", "mixed_float16"}
    assert all(row["status"] == "measured" for row in table.values()), table
    assert report.fact("precision.own") == "mixed_float16"
    assert report.fact("precision.own_slowdown") > 0
    g553 = next(f for f in report.findings if f.code == "G553")
    assert g553.status in ("pass", "fail"), g553.message  # decided, whichever way


@pytest.mark.parametrize("name", ["healthy", "healthy_jax", "healthy_torch"])
def test_a_healthy_float32_fit_stays_quiet_and_carries_its_fraction(name, tmp_path, monkeypatch):
    _, report, score = _run(name, tmp_path, monkeypatch)
    assert score.flagged == [], (score.flagged, score.why_missed)
    assert not score.fired_forbidden, score.fired_forbidden
    codes = {f.code: f.status for f in report.findings}
    assert codes["G552"] == "pass" and codes["G553"] == "n/a"  # float32: no mixed policy
    assert 0 < report.fact("speed_of_light.fraction") < 1


def test_far_below_speed_of_light_names_the_input_wait_first(tmp_path, monkeypatch):
    _, report, score = _run("far_below_speed_of_light", tmp_path, monkeypatch)
    assert score.ok, (score.failed, score.missed, score.unexpected, score.why_missed)
    assert score.top == "C401", score.failed
    g552 = next(f for f in report.findings if f.code == "G552")
    assert g552.status == "fail", g552.message
    assert report.fact("speed_of_light.fraction") < 0.0002  # 5× under G552's threshold at least
    assert report.fact("speed_of_light.top_reason") == "input wait"
    reasons = report.fact("speed_of_light.reasons")
    assert reasons[0]["seconds"] > 5 * sum(r["seconds"] for r in reasons[1:])
    assert "largest first: input wait" in g552.message, g552.message
