"""Comparisons across runs: a run against a baseline run (the CI gate), and a store's history.

Both read runs through the caller's :class:`~advisor.service.runs.CachedRuns`, so each run is
read and derived once.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from advisor.service.run_rows import run_info


class Runs(Protocol):
    """What a history reads runs through (a ``CachedRuns``)."""

    def run_dirs(self) -> list[Path]: ...

    def analyse(self, ref: Path) -> Analysis: ...


if TYPE_CHECKING:
    from advisor.analysis.history import History
    from advisor.diagnosis.report import Regression, Report
    from advisor.service.run_rows import Analysis


def noise_aware(
    report: Report, analysis: Analysis, base: Analysis, rules: list[Any], resolved: Any
) -> Regression:
    """``report``'s regression gate decided against the baseline run's noise, part by part, with
    the findings that appeared or disappeared (the baseline diagnosed with the same rules)."""
    from advisor.analysis.comparison import compare_runs
    from advisor.analysis.comparison_samples import samples_of
    from advisor.diagnosis import diagnose_facts
    from advisor.diagnosis.regression import with_comparison

    assert report.regression is not None
    base_report = diagnose_facts(
        base.facts,
        rules,
        run=run_info(base.run),
        thresholds=resolved.thresholds,
        min_measured_steps=resolved.min_measured_steps,
    )
    comparison = compare_runs(
        samples_of(base.run),
        samples_of(analysis.run),
        report.regression.max_regression_pct,
        base.facts,
        analysis.facts,
        baseline_codes=[f.code for f in base_report.failing("info")],
        current_codes=[f.code for f in report.failing("info")],
    )
    return with_comparison(report.regression, comparison)


def history(
    runs: Runs,
    name: str | None = None,
    tag: tuple[str, str] | None = None,
    group_by: str | None = None,
    last: int | None = None,
    until: str | None = None,
) -> History:
    """The history of the store's runs named ``name`` and/or tagged ``tag`` (key, value), the
    newest ``last``, up to the run ``until``, read through ``runs``; manifests are read first,
    so only the runs selected are derived."""
    from advisor.analysis.comparison_samples import samples_of
    from advisor.analysis.history import RunFigures, build_history
    from advisor.stats import median
    from advisor.store.reader import RunReader

    chosen = []
    for path in runs.run_dirs():
        try:
            manifest = RunReader(path).read_manifest()
        except Exception:  # noqa: BLE001 — an unreadable run is not part of any history
            continue
        if name is not None and manifest.name != name:
            continue
        if tag is not None and manifest.tags.get(tag[0]) != tag[1]:
            continue
        if group_by is not None and group_by not in manifest.tags:
            continue
        chosen.append((float(manifest.created), path))
    chosen.sort()
    if until is not None:  # the history up to and including this run
        ids = [path.name for _, path in chosen]
        if until in ids:
            chosen = chosen[: ids.index(until) + 1]
    if last:
        chosen = chosen[-last:]
    figures = []
    for created, path in chosen:
        try:
            analysis = runs.analyse(path)
        except Exception:  # noqa: BLE001 — as above
            continue
        facts = analysis.facts
        samples = samples_of(analysis.run)
        figures.append(
            RunFigures(
                run_id=analysis.run_id,
                created=datetime.fromtimestamp(created, timezone.utc).isoformat(timespec="seconds"),
                tags=dict(analysis.run.manifest.tags),
                samples_per_s=_number(facts.get("throughput.samples_per_s")),
                goodput=_number(facts.get("goodput")),
                parts={
                    key: v for key, ms in samples.parts.items() if (v := median(ms)) is not None
                },
                step_ms=median(samples.wall_ms_per_step),
            )
        )
    parts = [f"name={name}"] if name else []
    parts += [f"tag {tag[0]}={tag[1]}"] if tag else []
    return build_history(figures, " and ".join(parts) or "all runs", group_by)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
