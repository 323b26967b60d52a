"""mixed_float16 on a CPU, end to end with default options (examples/scenarios/mixed_float16_cpu):
the precision what-if runs by itself (the policy is not float32), and the first finding of warning
level or above is G553 with the measured slowdown. Several minutes with a core busy: ``long``."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.long]
pytest.importorskip("tensorflow")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "scenarios"))

import suite  # noqa: E402


def test_mixed_float16_on_a_cpu_leads_with_the_measured_precision_finding(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_SCENARIO_SECONDS", "15")
    (expected,) = suite.scenarios(["mixed_float16_cpu"])
    suite.run(expected, tmp_path / "runs", timeout_s=600)
    report = suite.diagnose(tmp_path / "runs")
    score = suite.score(expected, report)
    assert score.flagged and score.flagged[0] == "G553", (score.flagged, score.why_missed)
    assert not score.unexpected, score.unexpected
    g508 = next(f for f in report.findings if f.code == "G553")
    slowdown = re.search(r"float32 trains ([0-9.]+)×", g508.message)
    assert slowdown is not None and float(slowdown.group(1)) > 1.5, g508.message
    assert report.fact("speed_of_light.fraction") is not None


def test_a_healthy_float32_fit_stays_quiet_and_carries_its_fraction(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_SCENARIO_SECONDS", "15")
    (expected,) = suite.scenarios(["healthy"])
    suite.run(expected, tmp_path / "runs", timeout_s=600)
    report = suite.diagnose(tmp_path / "runs")
    assert suite.score(expected, report).flagged == []
    codes = {f.code: f.status for f in report.findings}
    assert codes["G552"] == "pass" and codes["G553"] == "n/a"  # float32: no mixed policy
    assert 0 < report.fact("speed_of_light.fraction") < 1
