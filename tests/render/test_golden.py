"""Golden outputs of every renderer for one fixed report (tests/data/golden/facts.json).

Regenerate after an intended change with ``ADVISOR_UPDATE_GOLDEN=1 python -m pytest tests/render``
and review the diff. The fixture includes a fact of the wrong type, so one rule ends as an
error entry and its rendering is covered too.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from advisor.diagnosis import diagnose_facts, load_rules
from advisor.diagnosis.regression import compare
from advisor.diagnosis.report import Report, RunInfo, Settings, json_schema
from advisor.errors import UsageError
from advisor.render import FORMATS, render, render_many

DATA = Path(__file__).parents[1] / "data"
GOLDEN = DATA / "golden"
EXTENSION = {
    "text": "txt",
    "json": "json",
    "sarif": "sarif",
    "github": "github.txt",
    "junit": "xml",
}
UPDATE = os.environ.get("ADVISOR_UPDATE_GOLDEN") == "1"

from advisor.diagnosis import load_rules as _load_rules

N_RULES = len(_load_rules())


@pytest.fixture(scope="module")
def report() -> Report:
    facts = json.loads((GOLDEN / "facts.json").read_text())
    result = diagnose_facts(
        facts,
        load_rules(),
        run=RunInfo(
            run_id="20261129-120000-naive-abc123",
            path="runs/20261129-120000-naive-abc123",
            name="naive",
            status="finished",
            created=1795000000.0,
            backend="tensorflow",
            strategy="default",
            num_workers=1,
            instance_type="g5.xlarge",
        ),
        errors=["facts.trace: no profile in this run"],
        settings=Settings(select=["ALL"], fail_on="warning"),
        generated_at="2026-11-29T12:00:00+00:00",
    )
    baseline = {**facts, "throughput.samples_per_s": 130.0, "cost.samples_per_dollar": 465000.0}
    result.regression = compare(facts, baseline, "20261128-090000-naive-def456", 5.0)
    result.advisor_version = "0.0.0-golden"
    return result


@pytest.mark.parametrize("fmt", FORMATS)
def test_golden(report, fmt):
    text = render(report, fmt, color=False, width=100)
    path = GOLDEN / f"report.{EXTENSION[fmt]}"
    if UPDATE or not path.exists():
        path.write_text(text)
        if not UPDATE:
            pytest.fail(f"{path} did not exist; written now — review it and run again")
    assert text == path.read_text(), f"{path} changed; set ADVISOR_UPDATE_GOLDEN=1 to accept"


def test_report_ranking(report):
    failures = report.failures
    assert failures[0].severity == "error"
    assert failures[0].code in {"M108", "C401", "C402", "G505", "S303"}  # the input, first
    ranks = [(-["info", "warning", "error"].index(f.severity), -(f.impact or 0)) for f in failures]
    assert ranks == sorted(ranks)
    assert [f.code for f in report.findings if f.status == "error"] == ["M103"]
    assert report.exit_code("warning") == 2  # a rule that errors is an internal error


def test_json_round_trip_and_schema(report):
    text = render(report, "json")
    jsonschema.Draft202012Validator(json_schema()).validate(json.loads(text))
    again = Report.model_validate_json(text)
    assert again == report
    assert render(again, "text") == render(report, "text")


def test_sarif_is_valid(report):
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    document = json.loads(render(report, "sarif"))
    jsonschema.Draft4Validator(schema).validate(document)
    run = document["runs"][0]
    assert len(run["tool"]["driver"]["rules"]) == N_RULES
    assert {r["ruleId"] for r in run["results"]} == {f.code for f in report.failures}
    assert run["invocations"][0]["executionSuccessful"] is False  # M103 errored
    assert all(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("run.json")
        for r in run["results"]
    )


def test_junit_parses(report):
    root = ET.fromstring(render(report, "junit", fail_on="warning"))
    cases = list(root.iter("testcase"))
    assert len(cases) == int(root.get("tests")) == N_RULES
    failures = [c for c in cases if c.find("failure") is not None]
    assert len(failures) == int(root.get("failures")) == len(report.failing("warning"))
    assert int(root.get("errors")) == 1
    everything = ET.fromstring(render(report, "junit"))  # default: every failure fails
    assert int(everything.get("failures")) == len(report.failures)


def test_github_annotations(report):
    lines = render(report, "github").splitlines()
    assert all(
        line.startswith(("::error ", "::warning ", "::notice ", "advisor: ")) for line in lines
    )
    assert any("performance regression" in line for line in lines)
    assert all("\n" not in line for line in lines)


def test_text_colour_only_when_asked(report):
    assert "\x1b[" not in render(report, "text")
    assert "\x1b[" in render(report, "text", color=True)


def test_several_reports(report):
    assert (
        json.loads(render_many([report, report], "json"))[1]["run"]["run_id"] == report.run.run_id
    )
    assert len(json.loads(render_many([report, report], "sarif"))["runs"]) == 2


def test_unknown_format(report):
    with pytest.raises(UsageError, match="unknown format"):
        render(report, "html")
