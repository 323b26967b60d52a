"""SARIF 2.1.0: failures as results, every evaluated rule as a reporting descriptor.

Code-scanning tools want a location per result; a finding is about a run, so its location is
the run's manifest (``run.json``). Rules that could not be evaluated are tool execution
notifications. Validated against the OASIS schema in tests/data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.diagnosis.report import Finding, Report

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _uri(report: Report) -> str:
    """The run's manifest: relative to the working directory when inside it, else a file URI."""
    if not report.run.path:
        return f"{report.run.run_id}/run.json"
    manifest = Path(report.run.path) / "run.json"
    if not manifest.is_absolute():
        return manifest.as_posix()
    try:
        return manifest.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return manifest.as_uri()


def _descriptor(f: Finding) -> dict[str, Any]:
    return {
        "id": f.code,
        "name": f.name,
        "shortDescription": {"text": f.summary},
        "fullDescription": {"text": f"{f.summary} (checklist section {f.section})"},
        "help": {
            "text": f"{f.summary} See {f.docs} or run `advisor rule {f.code}`.",
            "markdown": f"**{f.code} {f.name}**: {f.summary}\n\nSee [{f.docs}]({f.docs}) or run "
            f"`advisor rule {f.code}`.",
        },
        "defaultConfiguration": {"level": LEVEL[f.severity]},
        "properties": {"section": f.section, "tags": ["performance", f.section]},
    }


def _result(f: Finding, index: int, report: Report) -> dict[str, Any]:
    text = f.message + (f"\nFix: {f.fix}" if f.fix else "")
    return {
        "ruleId": f.code,
        "ruleIndex": index,
        "kind": "fail",
        "level": LEVEL[f.severity],
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(report)},
                    "region": {"startLine": 1},
                },
                "message": {"text": f"run {report.run.run_id}"},
            }
        ],
        "partialFingerprints": {"advisorFinding/v1": f"{report.run.run_id}:{f.code}"},
        "properties": {
            "impact": f.impact,
            "evidence": [e.model_dump(mode="json") for e in f.evidence],
            "thresholds": f.thresholds,
            "docs": f.docs,
        },
    }


def _run(report: Report) -> dict[str, Any]:
    findings = report.findings
    order = sorted(findings, key=lambda f: f.code)
    index = {f.code: i for i, f in enumerate(order)}
    descriptors = [_descriptor(f) for f in order]
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{f.code} {f.name}: {f.error}"},
            "descriptor": {"id": f.code},
        }
        for f in findings
        if f.status == "error"
    ] + [{"level": "warning", "message": {"text": problem}} for problem in report.errors]
    return {
        "tool": {
            "driver": {
                "name": "advisor",
                "fullName": "advisor: a performance advisor for Keras training",
                "version": report.advisor_version,
                "semanticVersion": report.advisor_version,
                "rules": descriptors,
            }
        },
        "automationDetails": {"id": f"advisor/{report.run.run_id}"},
        "invocations": [
            {
                "executionSuccessful": not any(f.status == "error" for f in findings),
                "toolExecutionNotifications": notifications,
            }
        ],
        "results": [_result(f, index[f.code], report) for f in report.failures]
        + _regression_results(report, descriptors),
        "properties": {
            "run": report.run.model_dump(mode="json"),
            "coverage": report.coverage.model_dump(mode="json"),
            "reportSchemaVersion": report.schema_version,
        },
    }


REGRESSION_RULE = "regression"


def _regression_results(report: Report, descriptors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A result per part of the fit that regressed versus the baseline (the rate when no part is
    to blame), under a descriptor of their own; a pair that cannot tell is a note."""
    reg = report.regression
    if reg is None:
        return []
    from advisor.render.comparison import describe

    c = reg.comparison
    if c is None and reg.history is not None and reg.history.verdict != "no regression":
        key = reg.history.latest.metric if reg.history.latest else "history"
        texts, keys = [reg.history.summary], [key]
        level = "error" if reg.history.failed else "note"
    elif c is None:
        return []
    elif c.failed:
        blamed = c.regressed_parts()
        texts = [describe(p, c) for p in blamed] or [c.summary]
        keys = [p.key for p in blamed] or [c.rates[0].key]
        level = "error"
    elif c.verdict in ("contention", "not judgeable"):
        texts, keys, level = [f"{c.verdict}: {c.summary}"], [c.verdict], "note"
    else:
        return []
    descriptors.append(
        {
            "id": REGRESSION_RULE,
            "name": "performance-regression",
            "shortDescription": {"text": "slower than the baseline run beyond its noise"},
            "help": {"text": "See docs/ci.md: verdicts, intervals and the history gate."},
            "defaultConfiguration": {"level": "error"},
        }
    )
    index = len(descriptors) - 1
    location = {"physicalLocation": {"artifactLocation": {"uri": _uri(report)}}}
    return [
        {
            "ruleId": REGRESSION_RULE,
            "ruleIndex": index,
            "kind": "fail",
            "level": level,
            "message": {"text": text},
            "locations": [location],
            "partialFingerprints": {"advisorRegression/v1": f"{report.run.run_id}:{key}"},
            "properties": {"part": key, "baseline": reg.baseline_run},
        }
        for text, key in zip(texts, keys, strict=True)
    ]


def render_many(reports: list[Report], **_: Any) -> str:
    document = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [_run(r) for r in reports]}
    return json.dumps(document, indent=2) + "\n"
