"""Rule files: one YAML file per checklist section, checked completely when loaded.

Every problem — YAML syntax, a missing or unknown field, a fact that is not registered, a
forbidden construct in a condition, a bad template field, a NaN or infinite parameter — is a
:class:`~advisor.errors.RuleError` that names ``file:line`` and the reason. Files are read with
YAML's safe loader, at most ``MAX_RULE_FILE_BYTES`` each, without anchors or aliases (which could
expand a small file into a huge document). The rules ship inside the wheel as ``advisor/_rules``;
in a source checkout they are the repository's top-level ``rules/``.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.diagnosis.bounded import MAX_RULE_FILE_BYTES, read_text
from advisor.diagnosis.expr import Expr, ExprError, compile_expr
from advisor.diagnosis.expr_runtime import finite_number, number_text
from advisor.diagnosis.measured import BASELINE_CEILINGS
from advisor.diagnosis.paths import default_rules_dir
from advisor.diagnosis.template import Template, TemplateError, compile_template
from advisor.errors import RuleError

SEVERITIES = ("info", "warning", "error")
SECTIONS = {
    "M1": "Measuring performance",
    "I2": "Instance choice",
    "S3": "Storage to CPU",
    "C4": "CPU bottlenecks",
    "G5": "Increasing accelerator utilization",
    "D6": "Multi-accelerator training",
    "P7": "Project",
}
CODE_RE = re.compile(r"^[A-Z]\d{3}$")
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
PARAM_RE = re.compile(r"^[a-z][a-z0-9_]*$")
DOC_SECTIONS = ("what", "why", "how", "impact", "references")
DOC_TITLES = {
    "what": "What it checks",
    "why": "Why it matters",
    "how": "How to fix",
    "impact": "How its impact is estimated",
    "references": "References",
}

_FIELDS = {
    "code", "name", "summary", "severity", "severity_when", "requires", "requires_any", "optional",
    "applies", "condition", "advice", "message", "pass_message", "fix", "impact", "gated", "measure",
    "params", "docs", "whatif", "ceiling", "symptom",
}  # fmt: skip
_REQUIRED = ("code", "name", "summary", "severity", "message", "fix", "docs")
MAX_YAML_NODES = 200_000
MAX_YAML_DEPTH = 64


@dataclass(frozen=True)
class Rule:
    """One checklist item as a declarative rule (see docs/rules.md for the file format)."""

    code: str
    name: str
    section: str
    summary: str
    severity: str
    requires: tuple[str, ...]
    requires_any: tuple[str, ...]
    optional: tuple[str, ...]
    condition: Expr | None
    applies: Expr | None
    severity_when: tuple[tuple[str, Expr], ...]
    impact: Expr | None
    message: Template
    pass_message: Template | None
    fix: Template
    advice: bool
    gated: bool
    measure: str | None
    params: dict[str, Any]
    docs: dict[str, Any]
    file: str = ""
    line: int = 0
    field_lines: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    whatif: tuple[str, ...] = ()  # what-if candidates that try this rule's fix (docs/whatif.md)
    ceiling: tuple[str, ...] = ()  # what measures the most the fix can gain, where it cannot be tried
    symptom: bool = False  # measures a cost other rules name the cause of: ranks after them on a tie

    @property
    def facts(self) -> tuple[str, ...]:
        """Every fact the rule reads, in declaration order."""
        seen: dict[str, None] = {}
        for name in (*self.requires, *self.requires_any, *self.optional):
            seen.setdefault(name, None)
        return tuple(seen)

    @property
    def threshold_names(self) -> tuple[str, ...]:
        used: set[str] = set()
        for expr in (self.condition, self.applies, *(e for _, e in self.severity_when)):
            if expr is not None:
                used |= expr.params
        return tuple(p for p in self.params if p in used)

    @property
    def references(self) -> list[str]:
        return [str(r) for r in self.docs.get("references", [])]


# -- locating ---------------------------------------------------------------------------------


def rule_files(rules_dir: Path) -> list[Path]:
    if not rules_dir.is_dir():
        raise RuleError(f"{rules_dir}: not a directory of rule files")
    files = sorted(p for p in rules_dir.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    if not files:
        raise RuleError(f"{rules_dir}: no *.yaml rule files")
    return files


# -- loading ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _load_cached(rules_dir: str) -> tuple[Rule, ...]:
    from advisor.analysis.registry import registry

    names = set(registry().names())
    rules: list[Rule] = []
    for path in rule_files(Path(rules_dir)):
        rules.extend(load_file(path, names))
    _check_unique(rules)
    return tuple(sorted(rules, key=lambda r: r.code))


def load_rules(rules_dir: str | os.PathLike[str] | None = None) -> tuple[Rule, ...]:
    """All rules, sorted by code. Cached per directory; raises RuleError on the first bad rule."""
    path = Path(rules_dir) if rules_dir is not None else default_rules_dir()
    return _load_cached(str(path.resolve()))


def _check_unique(rules: Sequence[Rule]) -> None:
    seen: dict[str, Rule] = {}
    seen_names: dict[str, Rule] = {}
    for rule in rules:
        if rule.code in seen:
            first = seen[rule.code]
            raise RuleError(
                f"{rule.file}:{rule.line}: duplicate rule code {rule.code} (first at {first.file}:{first.line})"
            )
        if rule.name in seen_names:
            first = seen_names[rule.name]
            raise RuleError(
                f"{rule.file}:{rule.line}: duplicate rule name {rule.name!r} (first at {first.file}:{first.line})"
            )
        seen[rule.code] = rule
        seen_names[rule.name] = rule


def _compose(path: Path) -> Any:
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    text = read_text(path, MAX_RULE_FILE_BYTES, RuleError)
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise RuleError(f"{path}:1: empty rule file")
        _check_tree(path, node)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise RuleError(f"{path}:{line}: YAML syntax error: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise RuleError(f"{path}: YAML error: {exc}") from None
    except RecursionError:
        raise RuleError(f"{path}: YAML nested too deeply") from None
    except (ValueError, OverflowError) as exc:  # e.g. an integer of more than 4300 digits
        raise RuleError(f"{path}: YAML value out of range ({str(exc).splitlines()[0][:80]})") from None
    finally:
        loader.dispose()
    return node, data


def _check_tree(path: Path, root: Any) -> None:
    """No anchors or aliases (a node reached twice), bounded size and nesting."""
    import yaml

    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        line = node.start_mark.line + 1
        if id(node) in seen:
            raise RuleError(f"{path}:{line}: YAML anchors and aliases are not allowed in rule files")
        seen.add(id(node))
        if len(seen) > MAX_YAML_NODES:
            raise RuleError(f"{path}: more than {MAX_YAML_NODES} YAML nodes; refused")
        if depth > MAX_YAML_DEPTH:
            raise RuleError(f"{path}:{line}: YAML nested deeper than {MAX_YAML_DEPTH} levels")
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in node.value)


def _lines(node: Any) -> dict[str, int]:
    """Line numbers (1-based) of a mapping node's keys."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}


def load_file(path: Path, fact_names: Iterable[str]) -> list[Rule]:
    """The rules of one file, fully checked against the registered ``fact_names``."""
    import yaml

    node, data = _compose(path)
    where = f"{path}"
    if not isinstance(data, dict):
        raise RuleError(f"{where}:1: a rule file is a mapping with 'section' and 'rules'")
    top = _lines(node)
    unknown = set(data) - {"section", "title", "rules"}
    if unknown:
        key = min(unknown, key=str)
        raise RuleError(
            f"{where}:{top.get(key, 1)}: unknown top-level field {key!r} (expected section, title, rules)"
        )
    section = data.get("section")
    if not isinstance(section, str) or section not in SECTIONS:
        raise RuleError(
            f"{where}:{top.get('section', 1)}: section must be one of {', '.join(SECTIONS)}"
        )
    items = data.get("rules")
    if not isinstance(items, list) or not items:
        raise RuleError(f"{where}:{top.get('rules', 1)}: 'rules' must be a non-empty list")
    rules_node = next(v for k, v in node.value if getattr(k, "value", None) == "rules")
    if not isinstance(rules_node, yaml.SequenceNode):
        raise RuleError(f"{where}:{top.get('rules', 1)}: 'rules' must be a list")
    known_facts = set(fact_names)
    out: list[Rule] = []
    for item, item_node in zip(items, rules_node.value):
        out.append(_build(path, section, item, item_node, known_facts))
    return out


def _build(path: Path, section: str, item: Any, node: Any, facts: set[str]) -> Rule:
    line0 = node.start_mark.line + 1
    lines = _lines(node)

    def fail(key: str | None, reason: str) -> RuleError:
        line = lines.get(key, line0) if key else line0
        code = item.get("code") if isinstance(item, dict) else None
        who = f"rule {code}: " if isinstance(code, str) else ""
        return RuleError(f"{path}:{line}: {who}{reason}")

    if not isinstance(item, dict):
        raise fail(None, "a rule must be a mapping of fields")
    for key in item:
        if key not in _FIELDS:
            raise fail(key, f"unknown field {key!r}")
    for key in _REQUIRED:
        if key not in item:
            raise fail(None, f"missing field {key!r}")
    if "condition" not in item and not item.get("advice"):
        raise fail(
            None,
            "missing field 'condition' (or 'advice: true' for a rule that needs a human decision)",
        )

    code = item["code"]
    if not isinstance(code, str) or not CODE_RE.match(code) or not code.startswith(section[0]):
        raise fail("code", f"code must look like {section[0]}123 and belong to section {section}")
    if code[:2] != section:
        raise fail("code", f"code {code} is not in section {section}")
    name = item["name"]
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise fail("name", "name must be kebab-case (e.g. input-bound)")
    severity = item["severity"]
    if severity not in SEVERITIES:
        raise fail("severity", f"severity must be one of {', '.join(SEVERITIES)}")
    summary = _text(item, "summary", fail)

    def fact_list(key: str) -> tuple[str, ...]:
        value = item.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fail(key, f"{key} must be a list of fact names")
        for fact in value:
            if fact not in facts:
                raise fail(key, f"unknown fact {fact!r} in {key} (not in the facts registry)")
        return tuple(value)

    requires = fact_list("requires")
    requires_any = fact_list("requires_any")
    optional = fact_list("optional")
    declared = set(requires) | set(requires_any) | set(optional)

    params = item.get("params", {}) or {}
    if not isinstance(params, dict):
        raise fail("params", "params must be a mapping of name: default")
    for pname, value in params.items():
        if not isinstance(pname, str) or not PARAM_RE.match(pname):
            raise fail("params", f"parameter name {pname!r} must be snake_case")
        if pname in facts:
            raise fail("params", f"parameter {pname!r} shadows a fact")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise fail("params", f"parameter {pname!r} must have a number or string default")
        if not isinstance(value, str) and not finite_number(value):
            raise fail(
                "params", f"parameter {pname!r} must be a finite number, not {number_text(value)}"
            )

    suggestions = sorted(declared | set(params))

    def expr(key: str, source: Any) -> Expr:
        try:
            compiled = compile_expr(
                str(source) if source is not None else "", facts, params, suggestions
            )
        except ExprError as exc:
            raise fail(key, f"{key}: {exc}") from None
        undeclared = sorted(compiled.facts - declared)
        if undeclared:
            raise fail(
                key,
                f"{key} reads {undeclared[0]!r}, which is not listed in requires, requires_any or optional",
            )
        return compiled

    advice = _flag(item, "advice", fail)
    condition = expr("condition", item["condition"]) if "condition" in item else None
    applies = expr("applies", item["applies"]) if "applies" in item else None
    impact = expr("impact", item["impact"]) if "impact" in item else None
    severity_when: list[tuple[str, Expr]] = []
    raw_when = item.get("severity_when", {}) or {}
    if not isinstance(raw_when, dict):
        raise fail("severity_when", "severity_when must map a severity to a condition")
    for level, source in raw_when.items():
        if level not in SEVERITIES:
            raise fail(
                "severity_when", f"severity_when: {level!r} is not one of {', '.join(SEVERITIES)}"
            )
        severity_when.append((level, expr("severity_when", source)))
    severity_when.sort(key=lambda pair: -SEVERITIES.index(pair[0]))  # error first

    known_fields = declared | set(params)

    def template(key: str) -> Template:
        try:
            return compile_template(_text(item, key, fail), known_fields)
        except TemplateError as exc:
            raise fail(
                key, f"{key}: {exc} (fields must be facts listed in requires/optional, or params)"
            ) from None

    message = template("message")
    fix = template("fix")
    pass_message = template("pass_message") if "pass_message" in item else None
    measure = _text(item, "measure", fail) if "measure" in item else None
    docs = _docs(item, fail)
    whatif = item.get("whatif", [])
    if not isinstance(whatif, list) or not all(isinstance(v, str) for v in whatif):
        raise fail("whatif", "whatif must be a list of what-if candidate names")
    for candidate in whatif:
        if f"whatif.{candidate}.speedup" not in facts:
            raise fail("whatif", f"unknown what-if candidate {candidate!r} (see docs/whatif.md)")
    ceiling = item.get("ceiling", [])
    if not isinstance(ceiling, list) or not all(isinstance(v, str) for v in ceiling):
        raise fail("ceiling", "ceiling must be a list of names: baseline ceilings or what-if candidates")
    for bound in ceiling:
        if bound not in BASELINE_CEILINGS and f"whatif.{bound}.speedup" not in facts:
            known = ", ".join(BASELINE_CEILINGS)
            raise fail("ceiling", f"unknown ceiling {bound!r}: {known} or a what-if candidate (see docs/whatif.md)")
    return Rule(
        code=code,
        name=name,
        section=section,
        summary=summary,
        severity=severity,
        requires=requires,
        requires_any=requires_any,
        optional=optional,
        condition=condition,
        applies=applies,
        severity_when=tuple(severity_when),
        impact=impact,
        message=message,
        pass_message=pass_message,
        fix=fix,
        advice=advice,
        gated=_flag(item, "gated", fail),
        symptom=_flag(item, "symptom", fail),
        measure=measure,
        params=dict(params),
        docs=docs,
        file=str(path),
        line=line0,
        field_lines=lines,
        whatif=tuple(whatif),
        ceiling=tuple(ceiling),
    )


def _text(item: dict[str, Any], key: str, fail: Any) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise fail(key, f"{key} must be a non-empty string")
    return value.strip()


def _flag(item: dict[str, Any], key: str, fail: Any) -> bool:
    value = item.get(key, False)
    if not isinstance(value, bool):
        raise fail(key, f"{key} must be true or false")
    return value


def _docs(item: dict[str, Any], fail: Any) -> dict[str, Any]:
    docs = item["docs"]
    if not isinstance(docs, dict):
        raise fail("docs", "docs must be a mapping with what, why, how, references")
    for key in docs:
        if key not in DOC_SECTIONS:
            raise fail(
                "docs", f"docs: unknown section {key!r} (expected {', '.join(DOC_SECTIONS)})"
            )
    for key in DOC_SECTIONS:
        value = docs.get(key)
        if key == "references":
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(v, str) and v.strip() for v in value)
            ):
                raise fail("docs", "docs: references must be a non-empty list of strings")
        elif not isinstance(value, str) or not value.strip():
            raise fail("docs", f"docs: missing section {key!r} ({DOC_TITLES[key]})")
    return {k: (v.strip() if isinstance(v, str) else list(v)) for k, v in docs.items()}
