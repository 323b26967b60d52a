"""Property tests: any rule file — valid structure with hostile values, alias bombs, random
text — loads to rules or to a RuleError naming the file, within a time limit; and `advisor check
--rules-dir` on it exits with a documented code, never an internal error.

The deep fuzzer (`test_many_*`, slow) draws a fifth of its 1500 examples in the suite's run,
the same ones every run (the `replay` profile); `ADVISOR_HYPOTHESIS=explore` draws all
1500 anew, `ADVISOR_FUZZ_EXAMPLES=N` draws N (tests/faults/fault_helpers.py)."""

from __future__ import annotations

import pytest
from fault_helpers import (
    assert_clean,
    assert_one_clear_line,
    cli,
    examples,
    fuzz_examples,
    lines,
    time_limit,
    valid_manifest,
    valid_records,
    write_run_dir,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.analysis.registry import registry
from advisor.diagnosis.rules import load_file
from advisor.errors import RuleError

pytestmark = pytest.mark.timeout(600, method="thread")

FIELDS = {
    "code": "M199",
    "name": "fuzzed-rule",
    "summary": "A rule under test.",
    "severity": "warning",
    "requires": "[throughput.samples_per_s]",
    "params": "{limit: 10}",
    "condition": "throughput.samples_per_s < limit",
    "message": "samples/s is {throughput.samples_per_s:,.0f}",
    "fix": "train faster",
    "docs": "{what: a, why: b, how: c, impact: e, references: [d]}",
}
YAML_VALUES = [
    ".nan", ".inf", "-.inf", "1e999", "9" * 5000, "0x" + "f" * 2000, "~", "true", "[]", "{}",
    "'" + "x" * 5000 + "'", "[" * 200 + "]" * 200, "!!python/object/apply:os.system ['true']",
    "!!binary aGk=", "&a [*a]", "*undefined", "'{throughput.samples_per_s:,.999999f}'",
    "'{__class__}'", "'round(throughput.samples_per_s, -100000000)'", "'0 ** -1'",
    "'throughput.samples_per_s.__class__'", "{limit: .nan}", "{limit: 1.0e+999}",
    "{limit: " + "9" * 400 + "}",
    "[throughput.samples_per_s, nope]", "[[throughput.samples_per_s]]", "'\\ud800'", '"\\ud800"',
]  # fmt: skip

# Nine levels of nine references: 387 million items once expanded (by str(), by a walk).
ALIAS_BOMB = (
    "{a: &a [x, x, x, x, x, x, x, x, x], "
    + ", ".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]"
        for i in range(8)
    )
    + "}"
)


def bomb_rule_file() -> str:
    """The bomb defined inside the rule (in ``docs``, checked last) and used as its condition."""
    fields = {k: v for k, v in FIELDS.items() if k != "condition"}
    fields["docs"] = (
        "{what: a, why: b, how: c, impact: e, references: [d], bomb: " + ALIAS_BOMB + "}"
    )
    fields["condition"] = "*i"
    return rule_file(fields)


def rule_file(fields: dict[str, str], section: str = "M1") -> str:
    body = "".join(f"    {k}: {v}\n" for k, v in fields.items())
    return f"section: {section}\ntitle: fuzz\nrules:\n  - " + body.lstrip()


@st.composite
def rule_files(draw: st.DrawFn) -> str:
    fields = dict(FIELDS)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["set", "set", "drop", "add"]))
        key = draw(
            st.sampled_from(
                sorted(FIELDS) + ["severity_when", "applies", "impact", "gated", "bogus"]
            )
        )
        if op == "drop":
            fields.pop(key, None)
        else:
            fields[key] = draw(st.sampled_from(YAML_VALUES) | st.text(max_size=30).map(repr))
    section = draw(st.sampled_from(["M1", "M1", "Z9", "[M1]", "{}", ".nan"]))
    text = rule_file(fields, section)
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(text)))
        text = text[:cut]
    return text


FACT_NAMES = set(registry().names())


def _load(path) -> None:
    with time_limit(10):
        try:
            rules = load_file(path, FACT_NAMES)
        except RuleError as exc:
            assert_one_clear_line(exc, names=path)
            return
    assert rules and all(rule.file == str(path) for rule in rules)


@settings(max_examples=examples(150))
@given(text=rule_files() | st.text(max_size=300))
def test_any_rule_file_loads_or_is_refused(text, tmp_path_factory):
    path = tmp_path_factory.mktemp("rules") / "M1-fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _load(path)


@pytest.mark.slow
@settings(max_examples=fuzz_examples(1500))
@given(text=rule_files())
def test_many_rule_files(text, tmp_path_factory):
    path = tmp_path_factory.mktemp("rules") / "M1-fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _load(path)


@settings(max_examples=examples(25))
@given(text=rule_files())
def test_check_with_any_rules_dir_exits_cleanly(text, tmp_path_factory):
    root = tmp_path_factory.mktemp("case")
    (root / "rules").mkdir()
    (root / "rules" / "M1-fuzz.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    run = write_run_dir(
        root / "runs" / "r", __import__("json").dumps(valid_manifest()), lines(valid_records())
    )
    with time_limit(20):
        assert_clean(cli("check", str(run), "--rules-dir", str(root / "rules")))


def test_an_alias_bomb_is_refused_at_once(tmp_path):
    path = tmp_path / "M1-bomb.yaml"
    path.write_text(bomb_rule_file())
    with time_limit(2), pytest.raises(RuleError, match="aliases are not allowed"):
        load_file(path, FACT_NAMES)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "1.0e+999", "9" * 400])
def test_a_non_finite_parameter_names_the_rule_and_key(tmp_path, value):
    path = tmp_path / "M1-nan.yaml"
    path.write_text(rule_file({**FIELDS, "params": f"{{limit: {value}}}"}))
    with pytest.raises(RuleError, match=r"rule M199: parameter 'limit' must be a finite number"):
        load_file(path, FACT_NAMES)
