"""The CI regression gate: samples/s and samples/$ of a run versus a baseline run.

Against a baseline *run* the gate is the noise-aware comparison (``advisor.analysis.comparison``);
against a saved report, which keeps facts but not windows, it is the fixed percentage alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.analysis.comparison_model import RunComparison
from advisor.diagnosis.report import Regression, RegressionMetric
from advisor.errors import UsageError

METRICS = (
    ("throughput.samples_per_s", "samples/s"),
    ("cost.samples_per_dollar", "samples/$"),
)


def compare(
    current: Mapping[str, Any],
    baseline: Mapping[str, Any],
    baseline_run: str,
    max_regression_pct: float,
) -> Regression:
    """Fail when a metric dropped by more than ``max_regression_pct`` percent.

    A metric missing on either side is listed with a note and not judged; if no metric can be
    compared at all, that is a usage error (there is nothing to gate on).
    """
    if max_regression_pct < 0:
        raise UsageError(f"--max-regression must be a percentage ≥ 0, not {max_regression_pct}")
    metrics = [
        _metric(
            name, unit, _number(baseline.get(name)), _number(current.get(name)), max_regression_pct
        )
        for name, unit in METRICS
    ]
    if all(m.change_pct is None for m in metrics):
        raise UsageError(
            f"cannot compare with baseline {baseline_run}: samples/s is not measured on both runs"
        )
    return Regression(
        baseline_run=baseline_run,
        max_regression_pct=max_regression_pct,
        metrics=metrics,
        failed=any(m.regressed for m in metrics),
    )


def _metric(
    name: str, unit: str, base: float | None, cur: float | None, max_regression_pct: float
) -> RegressionMetric:
    """One metric compared; one missing or not positive on the baseline is noted, not judged."""
    if base is None or cur is None or base <= 0:
        side = "baseline" if base is None or base <= 0 else "this run"
        note: str | None = f"not measured on the {side}: not compared"
        change_pct, regressed = None, False
    else:
        change = (cur - base) / base * 100.0
        note, change_pct, regressed = None, round(change, 2), -change > max_regression_pct
    return RegressionMetric(
        name=name,
        unit=unit,
        baseline=base,
        current=cur,
        change_pct=change_pct,
        regressed=regressed,
        note=note,
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def with_comparison(regression: Regression, comparison: RunComparison) -> Regression:
    """The gate decided by the noise-aware comparison of two runs: a metric regressed only when
    the comparison says its drop is outside the noise and beyond the limit."""
    judged = {figure.key: figure for figure in comparison.rates}
    for metric in regression.metrics:
        figure = judged.get(metric.name)
        metric.regressed = bool(figure and figure.regressed)
        if figure is not None and figure.verdict != "too few":
            metric.note = (
                f"{figure.verdict}: 95% interval {figure.low_pct:+.1f}% to {figure.high_pct:+.1f}%"
            )
    regression.comparison = comparison
    regression.failed = comparison.failed
    return regression
