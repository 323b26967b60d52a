"""Table-driven: for every rule, facts that make it fail, pass, unknown (and n/a where it has
an ``applies`` condition). The table is tests/data/rule_cases.yaml; a key may name a variant
(``fail_cpu``, ``pass_no_files``), whose expected severity is ``severity_<variant>``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from advisor.analysis.registry import registry
from advisor.diagnosis import evaluate, load_rules

CASES = yaml.safe_load((Path(__file__).parents[1] / "data" / "rule_cases.yaml").read_text())
RULES = {r.code: r for r in load_rules()}
STATUS = {"fail": "fail", "pass": "pass", "unknown": "unknown", "na": "n/a"}


def _status_of(key: str) -> str | None:
    """The status a case key expects: ``fail``, ``fail_cpu`` → fail; ``severity…`` → None."""
    head = key.split("_", 1)[0]
    return STATUS.get(head) if head != "severity" else None


def _params():
    for code, case in sorted(CASES.items()):
        for key in case:
            if _status_of(key):
                yield pytest.param(code, key, id=f"{code}-{key}")


def test_every_rule_has_cases():
    assert sorted(CASES) == sorted(RULES)
    for code, rule in RULES.items():
        keys = {k for k in CASES[code] if _status_of(k)}
        statuses = {k.split("_", 1)[0] for k in keys}
        if rule.advice:  # a human decision: unknown, or n/a where its ``applies`` says so
            assert statuses == ({"unknown", "na"} if rule.applies is not None else {"unknown"}), (
                code
            )
        else:
            # Every rule can both pass and fail; a rule that reads no required fact (M109: "a
            # profile was captured") is always decided, so it has no unknown case.
            assert {"fail", "pass"} <= statuses, code
            if rule.requires or rule.requires_any:
                assert "unknown" in statuses, code
            if rule.applies is not None:
                assert "na" in statuses, f"{code} has an applies condition but no n/a case"


def test_case_facts_are_registered():
    names = set(registry().names())
    named = [
        (code, key, fact)
        for code, case in CASES.items()
        for key in case
        if _status_of(key)
        for fact in case[key] or {}
    ]
    assert len(named) > len(RULES)  # every rule's cases give facts (an empty table proves nothing)
    unknown = [f"{code}/{key}: {fact}" for code, key, fact in named if fact not in names]
    assert unknown == [], "not registered facts: " + ", ".join(unknown)


@pytest.mark.parametrize("code,key", list(_params()))
def test_rule_case(code, key):
    case = CASES[code]
    rule = RULES[code]
    facts = case[key] or {}
    status = _status_of(key)
    finding = evaluate(rule, facts, case.get("params"))
    assert finding.status == status, (
        f"{code} {key}: {finding.status}: {finding.message} {finding.error or ''}"
    )
    assert finding.code == code and finding.docs == f"docs/rules/{code}.md"
    if status == "fail":
        assert finding.fix and finding.message
        assert not re.search(r"\{[a-z_.0-9]+(:[^}]*)?\}", finding.message + finding.fix), (
            "unrendered field"
        )
        assert "[[" not in finding.message and "]]" not in finding.message
        assert 0.0 <= (finding.impact or 0.0) <= 1.0
        expected = case.get("severity" + key[len("fail") :])
        if expected:
            assert finding.severity == expected
        assert {e.fact for e in finding.evidence} <= set(facts)
    if status == "unknown":
        if rule.advice:
            assert finding.measure and finding.missing == []
        else:
            assert finding.missing, "an unknown finding names what was not measured"
            assert finding.measure, "an unknown finding says how to measure it"
            assert not set(finding.missing) & set(facts)
    if status == "pass":
        assert finding.fix is None and finding.impact is None


def test_c401_counts_the_prefetch_tf_data_injects():
    """TF's autotuner adds a prefetch after the last stage: no explicit prefetch is then needed."""
    rule = RULES["C401"]
    facts = {
        "pipeline.prefetch": False,
        "pipeline.sequential_maps": 0,
        "pipeline.prefetch_injected": True,
    }
    assert evaluate(rule, facts).status == "pass"
    assert evaluate(rule, {**facts, "pipeline.prefetch_injected": False}).status == "fail"
    assert evaluate(rule, {**facts, "pipeline.sequential_maps": 2}).status == "fail"


@pytest.mark.parametrize("code", ["M105", "M153"])
def test_raise_the_batch_comes_with_the_memory_what_ifs_number(code):
    """M105 and M153 advise a larger batch; with the memory what-if's largest batch that fits
    (M182's fact), their fix gives that number, and without it they do not invent one."""
    facts = dict(CASES[code]["fail"])
    without = evaluate(RULES[code], facts)
    assert without.status == "fail" and "memory what-if" not in without.fix
    measured = evaluate(RULES[code], {**facts, "memory.batch.largest": 5790})
    assert measured.status == "fail"
    assert "The memory what-if measured that batches of up to 5,790 samples fit." in measured.fix
