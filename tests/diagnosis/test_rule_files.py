"""Rule files: the shipped ones are complete; broken ones fail with file:line and a reason."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli.main import cli
from advisor.diagnosis.rules import SECTIONS, load_rules
from advisor.errors import RuleError

# The code table users read (docs/checklist.md): one row per rule code, in its section's table.
CHECKLIST = Path(__file__).resolve().parents[2] / "docs" / "checklist.md"
ROW = re.compile(r"^\| \[([A-Z]\d{3})\]\(rules/\1\.md\) \|[^|]+\| ([^|]+) \|[^|]+\|$")
ARTICLE_ITEMS = 42  # the article's questions: codes 01-49 of each section; 50 and above are ours

GOOD = """\
section: M1
rules:
  - code: M101
    name: throughput-logging
    summary: Throughput is logged.
    severity: info
    requires: [throughput.logging]
    condition: not throughput.logging
    message: not logged
    fix: log it
    docs:
      what: w
      why: y
      how: h
      impact: i
      references: [r]
"""


def checklist_rows() -> dict[str, tuple[str, str]]:
    """Code -> (the section heading it is listed under, its source cell) in docs/checklist.md."""
    rows: dict[str, tuple[str, str]] = {}
    section = ""
    for line in CHECKLIST.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].split(" ", 1)[0]
        elif line.startswith("| ["):
            match = ROW.match(line)
            assert match, f"docs/checklist.md: a table row not of the page's form: {line}"
            code, source = match.groups()
            assert code not in rows, f"docs/checklist.md lists {code} twice"
            rows[code] = (section, source.strip())
    return rows


def test_shipped_rules_cover_the_checklist():
    """Every rule code is on docs/checklist.md, in its section, and every code there is a rule;
    codes 01-49 are the article's items and say so, 50 and above are marked additions."""
    rules = load_rules()
    codes = [r.code for r in rules]
    assert len(codes) == len(set(codes))
    rows = checklist_rows()
    assert set(codes) == set(rows), (
        f"rules without a row in docs/checklist.md: {sorted(set(codes) - set(rows))}; "
        f"rows without a rule: {sorted(set(rows) - set(codes))}"
    )
    for code, (section, source) in rows.items():
        assert section == code[:2], f"{code} is listed under {section}"
        addition = int(code[2:]) % 100 >= 50
        assert (source == "*addition*") == addition, (code, source)
        assert addition or source.startswith("article"), (code, source)
    assert sum(not source.startswith("*") for _, source in rows.values()) == ARTICLE_ITEMS
    for rule in rules:
        assert rule.section in SECTIONS and rule.code.startswith(rule.section)
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", rule.name)
        assert all(rule.docs[k] for k in ("what", "why", "how", "references"))
        assert rule.advice or rule.condition is not None


def write_rules(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "rules"
    folder.mkdir(exist_ok=True)
    (folder / "M1.yaml").write_text(text)
    return folder


def load_error(tmp_path: Path, text: str) -> str:
    with pytest.raises(RuleError) as info:
        load_rules(write_rules(tmp_path, text))
    return str(info.value)


def test_good_file_loads(tmp_path):
    (rule,) = load_rules(write_rules(tmp_path, GOOD))
    assert rule.code == "M101" and rule.line == 3


@pytest.mark.parametrize(
    "old,new,line,reason",
    [
        (
            "condition: not throughput.logging",
            "condition: not throughput.logging)",
            8,
            "syntax error",
        ),
        (
            "condition: not throughput.logging",
            "condition: __import__('os')",
            8,
            "forbidden call of '__import__'",
        ),
        (
            "condition: not throughput.logging",
            "condition: throughput.logging.__class__",
            8,
            "dunder",
        ),
        ("condition: not throughput.logging", "condition: 10 ** 100000 > 1", 8, "exponent"),
        (
            "condition: not throughput.logging",
            "condition: '[x for x in (1, 2)]'",
            8,
            "rule M101: condition: forbidden construct: comprehension",
        ),
        (
            "condition: not throughput.logging",
            "condition: not gpu.util.p95",
            8,
            "not listed in requires",
        ),
        (
            "condition: not throughput.logging",
            "condition: not throughput.loging",
            8,
            "unknown name 'throughput.loging'",
        ),
        (
            "requires: [throughput.logging]",
            "requires: [throughput.logging, gpu.util.p99]",
            7,
            "unknown fact 'gpu.util.p99'",
        ),
        ("    fix: log it\n", "", 3, "missing field 'fix'"),
        ("severity: info", "severity: fatal", 6, "severity must be one of"),
        ("name: throughput-logging", "name: ThroughputLogging", 4, "kebab-case"),
        ("code: M101", "code: G101", 3, "code must look like"),
        (
            "summary: Throughput is logged.",
            "summary: ok\n    colour: red",
            6,
            "unknown field 'colour'",
        ),
        ("message: not logged", "message: 'at {nothing}'", 9, "unknown fact or parameter"),
        ("      how: h\n", "", 11, "missing section 'how'"),
        ("      impact: i\n", "", 11, "missing section 'impact'"),
        ("    fix: log it", "    fix: [a, b]", 10, "fix must be a non-empty string"),
        ("condition: not throughput.logging", "condition:", 8, "condition is empty"),
        (
            "    fix: log it",
            "    fix: log it\n    pass_message:",
            11,
            "pass_message must be a non-empty string",
        ),
        (
            "    fix: log it",
            "    fix: log it\n    measure:",
            11,
            "measure must be a non-empty string",
        ),
        (
            "condition: not throughput.logging",
            "condition: '  '",
            8,
            "condition must be a non-empty expression",
        ),
        (
            "condition: not throughput.logging",
            "condition: not throughput.logging\n    applies:",
            9,
            "applies is empty",
        ),
        (
            "condition: not throughput.logging",
            "condition: not throughput.logging\n    pass_message:",
            9,
            "pass_message must be a non-empty string",
        ),
        (
            "condition: not throughput.logging",
            "condition: not throughput.logging\n    measure: ''",
            9,
            "measure must be a non-empty string",
        ),
        (
            "condition: not throughput.logging",
            "condition: not throughput.logging\n    measure:",
            9,
            "measure must be a non-empty string",
        ),
        (
            "severity: info",
            "severity: info\n    params: {limit: .nan}",
            7,
            "must be a finite number, not nan",
        ),
        (
            "severity: info",
            "severity: info\n    severity_when: {fatal: 'true'}",
            7,
            "severity_when: 'fatal' is not one of info, warning, error",
        ),
        (
            "severity: info",
            "severity: info\n    severity_when: {error: ''}",
            7,
            "severity_when must map a severity to a non-empty condition",
        ),
        (
            "      impact: i\n",
            "      impact: i\n      colour: red\n",
            11,
            "docs: unknown section 'colour'",
        ),
    ],
)
def test_broken_rule_is_named_with_file_and_line(tmp_path, old, new, line, reason):
    assert old in GOOD
    message = load_error(tmp_path, GOOD.replace(old, new))
    assert f"M1.yaml:{line}:" in message, message
    assert reason in message


def test_yaml_syntax_error_has_a_line(tmp_path):
    message = load_error(tmp_path, GOOD.replace("    severity: info", "    severity: [info"))
    assert re.search(r"M1\.yaml:\d+: YAML syntax error", message), message


def test_duplicate_codes(tmp_path):
    folder = write_rules(tmp_path, GOOD)
    (folder / "M1b.yaml").write_text(GOOD.replace("throughput-logging", "other-name"))
    with pytest.raises(RuleError, match="duplicate rule code M101"):
        load_rules(folder)


def test_empty_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(RuleError, match="no \\*.yaml rule files"):
        load_rules(tmp_path / "empty")


@pytest.mark.parametrize("command", [["check"], ["rules"], ["rule", "M101"]])
def test_cli_exits_2_on_a_broken_rule_file(tmp_path, command):
    folder = write_rules(
        tmp_path, GOOD.replace("condition: not throughput.logging", "condition: __import__('os')")
    )
    result = CliRunner().invoke(
        cli, ["--runs-dir", str(tmp_path / "none"), *command, "--rules-dir", str(folder)]
    )
    assert result.exit_code == 2, result.output
    assert "M1.yaml:8:" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_the_rule_file_schema_accepts_the_shipped_rules_and_refuses_a_broken_one(tmp_path):
    """`advisor schema --rules` is the model the loader validates with, as JSON Schema."""
    import json

    import jsonschema
    import yaml

    from advisor.diagnosis.paths import default_rules_dir

    result = CliRunner().invoke(cli, ["schema", "--rules"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    validator = jsonschema.Draft202012Validator(schema)
    files = sorted(default_rules_dir().glob("*.yaml"))
    assert len(files) == len(SECTIONS)
    for path in files:
        assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == [], path
    broken = yaml.safe_load(GOOD.replace("severity: info", "severity: fatal"))
    assert [e.validator for e in validator.iter_errors(broken)] == ["enum"]


@pytest.fixture(scope="module")
def rule_file_schema():
    import json

    import jsonschema

    result = CliRunner().invoke(cli, ["schema", "--rules"])
    assert result.exit_code == 0, result.output
    return jsonschema.Draft202012Validator(json.loads(result.output))


@pytest.mark.parametrize(
    "old,new,line",
    [
        ("condition: not throughput.logging", "condition:", 8),
        ("condition: not throughput.logging", "condition: not throughput.logging\n    impact:", 9),
        (
            "condition: not throughput.logging",
            "condition: not throughput.logging\n    pass_message:",
            9,
        ),
        ("severity: info", "severity: info\n    params: {Limit: 1}", 7),
        ("severity: info", "severity: info\n    severity_when: {error: ''}", 7),
        ("summary: Throughput is logged.", "summary: ok\n    colour: red", 6),
        ("    fix: log it\n", "", 3),
    ],
)
def test_the_schema_refuses_what_the_loader_refuses(tmp_path, rule_file_schema, old, new, line):
    """An editor checking a rule file against `advisor schema --rules` flags the same slips the
    loader names at file:line (facts, conditions and templates aside)."""
    import yaml

    text = GOOD.replace(old, new)
    assert text != GOOD
    assert list(rule_file_schema.iter_errors(yaml.safe_load(text))), new
    assert f"M1.yaml:{line}:" in load_error(tmp_path, text)


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("fifo", "not a regular file (a FIFO)"),
        ("directory", "not a regular file (a directory)"),
        ("dangling link", "cannot be read as a rule file (no such file or directory)"),
    ],
)
def test_a_rule_file_that_is_no_file_is_named_not_skipped(tmp_path, kind, said):
    folder = write_rules(tmp_path, GOOD)
    odd = folder / "odd.yaml"
    if kind == "fifo":
        os.mkfifo(odd)
    elif kind == "directory":
        odd.mkdir()
    else:
        odd.symlink_to(tmp_path / "nowhere.yaml")
    with pytest.raises(RuleError) as caught:
        load_rules(folder)
    assert str(caught.value) == f"{odd}: {said}" + (
        "; a rule file must be one" if "regular" in said else ""
    )
