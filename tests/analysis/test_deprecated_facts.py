"""Renamed facts: the old name still works wherever a fact is named, with one DeprecationWarning;
reports and the report's JSON Schema use the new name (the schema says which old one it
replaces)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from whatif_fixtures import input_bound_run

from advisor.analysis import registry as registry_module
from advisor.analysis.registry import DEPRECATED_FACTS, registry
from advisor.cli.main import cli
from advisor.store.reader import RunReader

OLD, NEW = "whatif.budget_seconds", "whatif.allowance_seconds"

RULE = """\
section: M1
rules:
  - code: M150
    name: whatif-allowance
    summary: The what-if had an allowance.
    severity: info
    requires: [whatif.budget_seconds]
    condition: whatif.budget_seconds > 10
    message: "the what-if had {whatif.budget_seconds:.0f} s"
    fix: give it less
    docs:
      what: w
      why: y
      how: h
      impact: i
      references: [r]
"""


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Each test sees the aliases as not yet warned about in this process."""
    monkeypatch.setattr(registry_module, "WARNED_FACTS", set())


def _deprecations(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


def _facts(tmp_path: Path) -> dict:
    facts, errors = registry().derive(RunReader(input_bound_run(tmp_path)).read())
    assert errors == []
    return facts


def test_the_alias_table_names_registered_facts_only_by_their_new_name():
    assert DEPRECATED_FACTS[OLD] == NEW
    assert NEW in registry() and OLD not in registry()


def test_the_new_fact_holds_what_the_old_one_did(tmp_path):
    """The what-if record's ``budget_seconds`` (on disk, unchanged) is the new fact's value."""
    facts = _facts(tmp_path / "runs")
    assert facts[NEW] == 20.0 and OLD not in facts


def test_a_rule_naming_the_old_fact_reads_the_new_one_with_one_warning(tmp_path):
    from advisor.diagnosis.rules import load_rules

    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "M1.yaml").write_text(RULE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (rule,) = load_rules(folder)
    messages = _deprecations(caught)
    assert len(messages) == 1 and OLD in messages[0] and NEW in messages[0], messages
    assert "M150" in messages[0]
    assert rule.requires == (NEW,)
    assert rule.condition is not None and rule.condition.facts == {NEW}
    facts = {NEW: 20.0}
    assert rule.condition.evaluate(facts, {}) is True
    assert rule.message.render(facts, {}) == "the what-if had 20 s"

    again = tmp_path / "again"
    again.mkdir()
    (again / "M1.yaml").write_text(RULE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_rules(again)
    assert _deprecations(caught) == []  # once per name and process


def test_fact_value_reads_the_new_fact_under_the_old_name_with_one_warning():
    from advisor.diagnosis.report import as_facts, fact_value

    facts = as_facts({NEW: 20.0})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fact_value(facts, OLD) == 20.0
        assert fact_value(facts, OLD) == 20.0
        assert fact_value(facts, NEW) == 20.0
    messages = _deprecations(caught)
    assert len(messages) == 1 and NEW in messages[0], messages
    assert caught[0].filename == __file__  # the warning points at the caller's line


def test_runs_frame_takes_the_old_name_and_gives_the_new_column(tmp_path):
    pytest.importorskip("pandas", reason="the pandas extra is not installed")
    import advisor

    runs = tmp_path / "runs"
    input_bound_run(runs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = advisor.runs_frame(runs, facts=[OLD, "run.status"])
    messages = _deprecations(caught)
    assert len(messages) == 1 and OLD in messages[0], messages
    assert NEW in df.columns and OLD not in df.columns
    assert df[NEW].tolist() == [20.0]


def test_advisor_runs_facts_takes_the_old_name(tmp_path):
    runs = tmp_path / "runs"
    input_bound_run(runs)
    result = CliRunner().invoke(
        cli, ["--runs-dir", str(runs), "runs", "--format", "json", "--facts", OLD]
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)
    assert row["facts"] == {NEW: 20.0}


def test_the_report_schema_names_the_alias():
    from advisor.diagnosis.report import json_schema

    text = json_schema()["properties"]["facts"]["description"]
    assert f"{OLD!r} is an alias of {NEW!r}" in text
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0 and OLD in result.output and NEW in result.output
