"""docs/rules is generated from rules/ and must be in sync; every page has the fixed sections."""

from __future__ import annotations

from pathlib import Path

from advisor.diagnosis.docgen import main, rule_markdown, stale_files
from advisor.diagnosis.rules import default_rules_dir, load_rules

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"


def test_docs_rules_are_up_to_date():
    if default_rules_dir().name == "_rules":  # an installed wheel has no docs folder to compare
        return
    stale = stale_files(DOCS, load_rules())
    assert not stale, f"stale rule docs {stale}: run `python -m advisor.diagnosis.docgen`"


def test_every_page_has_the_sections():
    rules = load_rules()
    assert len(rules) >= 54  # the checklist's rules at least (tests/diagnosis/test_rule_files.py)
    for rule in rules:
        page = rule_markdown(rule)
        for heading in ("## What it checks", "## Why it matters", "## How to fix", "## References"):
            assert heading in page, (rule.code, heading)


def test_check_mode_reports_stale_pages(tmp_path, capsys):
    out = tmp_path / "rules"
    assert main(["--out", str(out), "--check"]) == 1
    assert main(["--out", str(out)]) == 0
    assert main(["--out", str(out), "--check"]) == 0
    (out / "M101.md").write_text("edited by hand\n")
    (out / "Z999.md").write_text("left over\n")
    assert main(["--out", str(out), "--check"]) == 1
    assert "M101.md" in capsys.readouterr().err
