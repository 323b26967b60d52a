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
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.bounded_reads import describe_os_error, file_kind
from advisor.diagnosis.expr import Expr, ExprError, compile_expr
from advisor.diagnosis.measured_gains import BASELINE_CEILINGS
from advisor.diagnosis.paths import default_rules_dir
from advisor.diagnosis.rule_aliases import current_names
from advisor.diagnosis.rule_model import (  # noqa: F401 — the rule vocabulary, read from here too
    CODE_PATTERN,
    DOC_SECTIONS,
    DOC_TITLES,
    SECTIONS,
    SEVERITIES,
    RuleEntry,
    RuleFile,
    file_reason,
    reason,
)
from advisor.diagnosis.rule_yaml import compose, key_lines
from advisor.diagnosis.template import Template, TemplateError, compile_template
from advisor.errors import RuleError

CODE_RE = re.compile(CODE_PATTERN)


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
    # what-if candidates that try this rule's fix (docs/whatif.md)
    whatif: tuple[str, ...] = ()
    # what measures the most the fix can gain, where it cannot be tried
    ceiling: tuple[str, ...] = ()
    # measures a cost other rules name the cause of: ranks after them on a tie
    symptom: bool = False
    # ("track:torch", the fix in that loop's words), …
    fix_for: tuple[tuple[str, Template], ...] = ()
    # why the rule cannot apply to a custom loop: n/a there, with this reason
    fit_only: str | None = None
    # why ``applies`` is false, in the run's words: the n/a finding's message
    na_message: Template | None = None

    def fix_in(self, facts: Mapping[str, Any]) -> Template:
        """The fix in the words of the run's loop and backend (``fix_for``), else the general
        one."""
        if self.fix_for:
            variants = dict(self.fix_for)
            for key in fix_contexts(facts):
                if key in variants:
                    return variants[key]
        return self.fix

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


def custom_loop(facts: Mapping[str, Any]) -> bool:
    """The run is a custom training loop recorded by ``advisor.track``, not a Keras ``fit``."""
    return facts.get("context.framework") == "custom" or facts.get("context.input_kind") == "custom"


INPUT_KINDS = ("tf.data", "numpy", "generator", "pydataset", "torch")


def fix_contexts(facts: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``fix_for`` keys that match the run, most specific first: what a Keras fit reads
    (``input:numpy`` …), then the loop and backend."""
    backend = facts.get("context.backend")
    loop = "track" if custom_loop(facts) else "fit"
    keys = [f"{loop}:{backend}"] if backend in ("tensorflow", "jax", "torch") else []
    if loop == "track":
        return (*keys, "track")
    kind = facts.get("context.input_kind") or facts.get("pipeline.input_kind")
    return (f"input:{kind}", *keys) if kind in INPUT_KINDS else tuple(keys)


# -- locating ---------------------------------------------------------------------------------


def rule_files(rules_dir: Path) -> list[Path]:
    if not rules_dir.is_dir():
        raise RuleError(f"{rules_dir}: not a directory of rule files")
    files = sorted(p for p in rules_dir.iterdir() if p.suffix in (".yaml", ".yml"))
    for path in files:  # a *.yaml that is no file is a mistake to name, not a file to pass over
        try:
            mode = path.stat().st_mode
        except OSError as exc:
            raise RuleError(
                f"{path}: cannot be read as a rule file ({describe_os_error(exc)})"
            ) from None
        if not stat.S_ISREG(mode):
            raise RuleError(
                f"{path}: not a regular file ({file_kind(mode)}); a rule file must be one"
            )
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
                f"{rule.file}:{rule.line}: duplicate rule code {rule.code} "
                f"(first at {first.file}:{first.line})"
            )
        if rule.name in seen_names:
            first = seen_names[rule.name]
            raise RuleError(
                f"{rule.file}:{rule.line}: duplicate rule name {rule.name!r} "
                f"(first at {first.file}:{first.line})"
            )
        seen[rule.code] = rule
        seen_names[rule.name] = rule


def load_file(path: Path, fact_names: Iterable[str]) -> list[Rule]:
    """The rules of one file: its shape checked by the model (``rule_model.RuleFile``), then each
    rule against the registered ``fact_names``. Every problem is a ``RuleError`` at
    ``file:line``."""
    import yaml
    from pydantic import ValidationError

    node, data = compose(path)
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise RuleError(f"{path}:1: a rule file is a mapping with 'section' and 'rules'")
    top = key_lines(node)
    rules_node = next((v for k, v in node.value if getattr(k, "value", None) == "rules"), None)
    entries = rules_node.value if isinstance(rules_node, yaml.SequenceNode) else []
    try:
        parsed = RuleFile.model_validate(data)
    except ValidationError as exc:
        error: dict[str, Any] = dict(exc.errors()[0])
        loc = tuple(error.get("loc", ()))
        if (
            len(loc) >= 2
            and loc[0] == "rules"
            and isinstance(loc[1], int)
            and loc[1] < len(entries)
        ):
            item, entry = data["rules"][loc[1]], entries[loc[1]]
            section = str(data.get("section")) if isinstance(data.get("section"), str) else "?"
            key, why = reason({**error, "loc": loc[2:]}, section)
            raise _at(path, entry, item, key, why) from None
        key, why = file_reason(error)
        raise RuleError(f"{path}:{top.get(key, 1) if key else 1}: {why}") from None
    known_facts = set(fact_names)
    return [
        _build(path, parsed.section, rule, item, entry, known_facts)
        for rule, item, entry in zip(parsed.rules, data["rules"], entries)
    ]


def _at(path: Path, node: Any, item: Any, key: str | None, why: str) -> RuleError:
    """A rule's error at the line of ``key`` (the rule's first line without one)."""
    line = key_lines(node).get(key, node.start_mark.line + 1) if key else node.start_mark.line + 1
    code = item.get("code") if isinstance(item, dict) else None
    return RuleError(
        f"{path}:{line}: {'rule ' + code + ': ' if isinstance(code, str) else ''}{why}"
    )


def _build(
    path: Path, section: str, entry: RuleEntry, item: dict[str, Any], node: Any, facts: set[str]
) -> Rule:
    """The rule of a validated entry, once what the model cannot know is checked: its section,
    its facts, its expressions and templates, its what-if candidates and ceilings."""

    def fail(key: str | None, why: str) -> RuleError:
        return _at(path, node, item, key, why)

    _check_code(entry.code, section, fail)
    entry = current_names(entry, str(path))  # a deprecated fact name reads as its new one
    _check_names(entry, facts, fail)
    parts = _Parts(entry, facts, fail)
    condition, applies, impact = (
        parts.expr("condition", entry.condition),
        parts.expr("applies", entry.applies),
        parts.expr("impact", entry.impact),
    )
    severity_when = sorted(
        (
            (level, parts.expr("severity_when", source))
            for level, source in entry.severity_when.items()
        ),
        key=lambda pair: -SEVERITIES.index(pair[0]),
    )  # error first
    message, fix = parts.template("message", entry.message), parts.template("fix", entry.fix)
    _check_trials(entry, facts, fail)
    fix_for = tuple((key, parts.template("fix_for", text)) for key, text in entry.fix_for.items())
    assert message is not None and fix is not None
    return Rule(
        code=entry.code,
        name=entry.name,
        section=section,
        summary=entry.summary,
        severity=entry.severity,
        requires=tuple(entry.requires),
        requires_any=tuple(entry.requires_any),
        optional=tuple(entry.optional),
        condition=condition,
        applies=applies,
        severity_when=tuple((lvl, e) for lvl, e in severity_when if e),
        impact=impact,
        message=message,
        pass_message=parts.template("pass_message", entry.pass_message),
        na_message=parts.template("na_message", entry.na_message),
        fix=fix,
        advice=entry.advice,
        gated=entry.gated,
        symptom=entry.symptom,
        measure=entry.measure,
        params=parts.params,
        docs=entry.docs.model_dump(),
        file=str(path),
        line=node.start_mark.line + 1,
        field_lines=key_lines(node),
        whatif=tuple(entry.whatif),
        ceiling=tuple(entry.ceiling),
        fix_for=tuple((key, t) for key, t in fix_for if t is not None),
        fit_only=entry.fit_only,
    )


Fail = Callable[[str | None, str], RuleError]


def _check_code(code: str, section: str, fail: Fail) -> None:
    """The code belongs to the file's section (``C401`` in section ``C4``)."""
    if code[:2] != section:
        if not code.startswith(section[0]):
            raise fail(
                "code", f"code must look like {section[0]}123 and belong to section {section}"
            )
        raise fail("code", f"code {code} is not in section {section}")


def _check_names(entry: RuleEntry, facts: set[str], fail: Fail) -> None:
    """Every fact the rule lists is registered, and no parameter is named like a fact."""
    for key in ("requires", "requires_any", "optional"):
        unknown = next((f for f in getattr(entry, key) if f not in facts), None)
        if unknown is not None:
            raise fail(key, f"unknown fact {unknown!r} in {key} (not in the facts registry)")
    shadowing = next((p for p in entry.params if p in facts), None)
    if shadowing is not None:
        raise fail("params", f"parameter {shadowing!r} shadows a fact")


def _check_trials(entry: RuleEntry, facts: set[str], fail: Fail) -> None:
    """Its what-if candidates and ceilings are known (a ``whatif.<name>.speedup`` fact)."""
    for candidate in entry.whatif:
        if f"whatif.{candidate}.speedup" not in facts:
            raise fail("whatif", f"unknown what-if candidate {candidate!r} (see docs/whatif.md)")
    for bound in entry.ceiling:
        if bound not in BASELINE_CEILINGS and f"whatif.{bound}.speedup" not in facts:
            known = ", ".join(BASELINE_CEILINGS)
            raise fail(
                "ceiling",
                f"unknown ceiling {bound!r}: {known} or a what-if candidate (see docs/whatif.md)",
            )


class _Parts:
    """Compiles a rule's expressions and templates against what it declares."""

    def __init__(self, entry: RuleEntry, facts: set[str], fail: Fail) -> None:
        self.facts, self.fail = facts, fail
        self.declared = {*entry.requires, *entry.requires_any, *entry.optional}
        self.params = dict(entry.params)
        self.suggestions = sorted(self.declared | set(self.params))

    def expr(self, key: str, source: str | float | None) -> Expr | None:
        if source is None:
            return None
        try:
            compiled = compile_expr(str(source), self.facts, self.params, self.suggestions)
        except ExprError as exc:
            raise self.fail(key, f"{key}: {exc}") from None
        undeclared = sorted(compiled.facts - self.declared)
        if undeclared:
            raise self.fail(
                key,
                f"{key} reads {undeclared[0]!r}, which is not listed in requires, "
                "requires_any or optional",
            )
        return compiled

    def template(self, key: str, text: str | None) -> Template | None:
        if text is None:
            return None
        try:
            return compile_template(text, self.declared | set(self.params))
        except TemplateError as exc:
            raise self.fail(
                key, f"{key}: {exc} (fields must be facts listed in requires/optional, or params)"
            ) from None
