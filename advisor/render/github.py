"""GitHub Actions workflow commands: one annotation per failure (``::error``, ``::warning``,
``::notice``), then a plain summary line per run. Values are escaped as the runner expects."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.numbers import percent

if TYPE_CHECKING:
    from advisor.analysis.comparison_model import RunComparison
    from advisor.diagnosis.report import Report

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_many(reports: list[Report], **_: Any) -> str:
    lines: list[str] = []
    for report in reports:
        run_id = report.run.run_id
        if report.incomplete:
            title = escape_property(f"run not judgeable ({run_id})")
            lines.append(f"::error title={title}::{escape_data('; '.join(report.incomplete))}")
        for f in report.failures:
            title = escape_property(f"{f.code} {f.name} ({run_id})")
            body = f.message + (f"\nFix: {f.fix}" if f.fix else "") + f"\nDocs: {f.docs}"
            lines.append(f"::{COMMAND[f.severity]} title={title}::{escape_data(body)}")
        for f in report.findings:
            if f.status == "error":
                title = escape_property(f"{f.code} could not be evaluated")
                lines.append(f"::error title={title}::{escape_data(f.error or '')}")
        counts = report.summary.by_severity
        tally = (
            ", ".join(f"{counts[k]} {k}" for k in ("error", "warning", "info") if counts.get(k))
            or "no failures"
        )
        cov = report.coverage
        lines.append(
            f"advisor: run {run_id}: {tally}; checklist coverage {cov.decided}/{cov.total} decided "
            f"({percent(cov.fraction, 0, fraction=True)}), {cov.not_applicable} n/a, {cov.unknown} "
            "unknown"
        )
        if report.regression is not None:
            reg = report.regression
            if reg.history is not None and reg.history.verdict != "no regression":
                level = "error" if reg.history.failed else "notice"
                title = escape_property(f"history gate ({run_id}, {reg.history.selection})")
                lines.append(f"::{level} title={title}::{escape_data(reg.history.summary)}")
            if reg.comparison is not None:
                lines += _comparison(reg.comparison, run_id)
                continue
            for m in reg.metrics:
                if m.regressed:
                    msg = (
                        f"{m.unit} dropped {-(m.change_pct or 0):.1f}% versus {reg.baseline_run} "
                        f"(limit {reg.max_regression_pct:g}%)"
                    )
                    title = escape_property(f"performance regression ({run_id})")
                    lines.append(f"::error title={title}::{escape_data(msg)}")
    return "\n".join(lines) + "\n"


def _comparison(comparison: RunComparison, run_id: str) -> list[str]:
    """One annotation per part that regressed (or the rate, when no part is to blame), else a
    warning for contention or a pair that cannot tell."""
    from advisor.render.comparison import annotation, describe

    title = escape_property(f"performance regression ({run_id} vs {comparison.baseline_run})")
    culprits = comparison.regressed_parts()
    if culprits:
        return [f"::error title={title}::{escape_data(describe(p, comparison))}" for p in culprits]
    found = annotation(comparison)
    if found is None:
        return []
    level, message = found
    if level == "warning":
        title = escape_property(f"performance comparison ({run_id})")
    return [f"::{level} title={title}::{escape_data(message)}"]
