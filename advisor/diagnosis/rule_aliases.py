"""Deprecated fact names in a rule file: each becomes its new name before the rule is checked.

A rule may still name a renamed fact by its old name (``advisor.analysis.registry``'s
``DEPRECATED_FACTS``) in ``requires``, ``requires_any``, ``optional``, its conditions and its
templates' fields; the loader reads it as the new name, with a DeprecationWarning once per old
name and process.
"""

from __future__ import annotations

import re
from typing import Any

from advisor.analysis.registry import DEPRECATED_FACTS, resolve_fact
from advisor.diagnosis.rule_model import RuleEntry

_NAME_LISTS = ("requires", "requires_any", "optional")
_EXPRESSIONS = ("condition", "applies", "impact")
_TEMPLATES = ("message", "pass_message", "na_message", "fix")


def _in_expression(old: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.])" + re.escape(old) + r"(?![\w])")


def _in_template(old: str) -> re.Pattern[str]:
    return re.compile(r"(?<=\{)" + re.escape(old) + r"(?=[:}])")


def current_names(entry: RuleEntry, where: str) -> RuleEntry:
    """``entry`` with every deprecated fact name it uses replaced by the new one (the same entry
    when it uses none); ``where`` (the file) goes into the warning."""
    values: dict[str, Any] = {
        key: getattr(entry, key)
        for key in (*_NAME_LISTS, *_EXPRESSIONS, *_TEMPLATES, "severity_when", "fix_for")
    }
    used: list[str] = []
    for old, new in DEPRECATED_FACTS.items():
        expr, field = _in_expression(old), _in_template(old)

        def swap(text: Any, pattern: re.Pattern[str], old: str = old, new: str = new) -> Any:
            if not isinstance(text, str) or not pattern.search(text):
                return text
            used.append(old)
            return pattern.sub(new, text)

        for key in _NAME_LISTS:
            if old in values[key]:
                used.append(old)
                values[key] = [new if n == old else n for n in values[key]]
        for key in _EXPRESSIONS:
            values[key] = swap(values[key], expr)
        values["severity_when"] = {k: swap(v, expr) for k, v in values["severity_when"].items()}
        for key in _TEMPLATES:
            values[key] = swap(values[key], field)
        values["fix_for"] = {k: swap(v, field) for k, v in values["fix_for"].items()}
    for old in dict.fromkeys(used):
        resolve_fact(old, f"{where}, rule {entry.code}")
    return entry.model_copy(update=values) if used else entry
