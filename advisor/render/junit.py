"""JUnit XML: a test suite per checklist section, a test case per rule.

fail → ``<failure>`` (at or above ``fail_on``; below it the case passes with the message in
``<system-out>``), error → ``<error>``, unknown and n/a → ``<skipped>``, pass → an empty case.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any

from advisor.diagnosis.phrases import is_changes, say_changes
from advisor.diagnosis.report import SEVERITY_RANK

if TYPE_CHECKING:
    from advisor.diagnosis.report import Finding, Report


def _evidence_value(value: Any) -> Any:
    return say_changes(value) if is_changes(value) else value


def _case(suite: ET.Element, f: Finding, fail_level: int) -> str:
    case = ET.SubElement(
        suite,
        "testcase",
        {"classname": f"advisor.{f.section}", "name": f"{f.code} {f.name}", "time": "0"},
    )
    if f.status == "fail" and SEVERITY_RANK[f.severity] >= fail_level:
        node = ET.SubElement(case, "failure", {"type": f.severity, "message": f.message})
        evidence = "\n".join(
            f"  {e.fact} = {_evidence_value(e.value)} {e.unit}".rstrip() for e in f.evidence
        )
        node.text = (
            f"{f.message}\n\nFix: {f.fix or ''}\n\nEvidence:\n{evidence}\n\nDocs: {f.docs}\n"
        )
        return "failure"
    if f.status == "fail":
        ET.SubElement(case, "system-out").text = f"{f.severity}: {f.message}"
        return "pass"
    if f.status == "error":
        ET.SubElement(case, "error", {"type": "rule-error", "message": f.error or "error"})
        return "error"
    if f.status in ("unknown", "n/a"):
        reason = (
            "not applicable"
            if f.status == "n/a"
            else f"{f.message}; {f.measure or ''}".rstrip("; ")
        )
        ET.SubElement(case, "skipped", {"message": reason})
        return "skipped"
    return "pass"


def render_many(reports: list[Report], fail_on: str = "info", **_: Any) -> str:
    fail_level = SEVERITY_RANK[fail_on]
    root = ET.Element("testsuites", {"name": "advisor"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for report in reports:
        sections: dict[str, list[Finding]] = {}
        for f in sorted(report.findings, key=lambda f: f.code):
            sections.setdefault(f.section, []).append(f)
        for section, findings in sections.items():
            suite = ET.SubElement(
                root, "testsuite", {"name": f"advisor.{report.run.run_id}.{section}"}
            )
            counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
            for f in findings:
                outcome = _case(suite, f, fail_level)
                counts["tests"] += 1
                if outcome == "failure":
                    counts["failures"] += 1
                elif outcome in ("error", "skipped"):
                    counts[{"error": "errors", "skipped": "skipped"}[outcome]] += 1
            for key, value in counts.items():
                suite.set(key, str(value))
                totals[key] += value
            suite.set("time", "0")
        if report.regression is not None and (
            report.regression.comparison is not None or report.regression.history is not None
        ):
            _comparison_suite(root, report, totals)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _comparison_suite(root: ET.Element, report: Report, totals: dict[str, int]) -> None:
    """A test suite of the comparison with the baseline run: a test case per figure and per part
    of the fit; a part that regressed fails."""
    from advisor.render.comparison import junit_cases

    reg = report.regression
    assert reg is not None
    name = f"advisor.{report.run.run_id}.versus.{reg.baseline_run}"
    suite = ET.SubElement(root, "testsuite", {"name": name})
    failures = 0
    cases = junit_cases(reg.comparison) if reg.comparison is not None else []
    if reg.history is not None:
        failure = reg.history.summary if reg.history.failed else None
        cases.append((f"history of {reg.history.selection}", failure, reg.history.summary))
    for label, failure, details in cases:
        case = ET.SubElement(suite, "testcase", {"classname": name, "name": label, "time": "0"})
        if failure is not None:
            failures += 1
            ET.SubElement(
                case, "failure", {"type": "regression", "message": failure}
            ).text = details
        else:
            ET.SubElement(case, "system-out").text = details
    for key, value in (
        ("tests", len(cases)),
        ("failures", failures),
        ("errors", 0),
        ("skipped", 0),
    ):
        suite.set(key, str(value))
        totals[key] += value
    suite.set("time", "0")
