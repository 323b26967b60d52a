"""Message templates: ``str.format``-style fields that name facts and parameters.

``"input costs {input.bound_fraction:.0%} of step time"`` — a field is a fact name (dots and all)
or a rule parameter, with an optional format spec. Text inside ``[[ ... ]]`` is kept only when
every field in it has a value, so one template serves runs with and without a measurement:
``"GPU idle[[ ({trace.device_idle_percent:.0f}% of the step)]]"``; a field that is False or an
empty list drops its group too. A list of changes (``pipeline.advice``) is said with the rules'
phrasebook (:mod:`advisor.diagnosis.phrases`). Fields are checked when the
rules load (names must be known, no conversions, no nested or attribute/index lookups); values
are formatted defensively at render time (a missing value reads "n/a").
"""

from __future__ import annotations

import re
import string
from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import Any

from advisor.diagnosis.phrases import is_changes, say_changes
from advisor.numbers import readable

_FORMATTER = string.Formatter()
_SPEC_RE = re.compile(r"^[<>=^]?[+\- ]?#?0?(\d{1,2})?[,_]?(\.\d{1,2})?[bcdeEfFgGnosxX%]?$")
_GROUP_RE = re.compile(r"\[\[(.*?)\]\]", re.DOTALL)
MISSING = "n/a"


class TemplateError(ValueError):
    """A template that cannot be accepted at load time."""


@dataclass(frozen=True)
class _Field:
    name: str
    spec: str


_Piece = tuple[str, "_Field | None"]


@dataclass(frozen=True)
class Template:
    source: str
    # Top level: (literal, field) pieces and optional groups, in order.
    parts: tuple[tuple[str, tuple[_Piece, ...]], ...]  # ("text"|"group", pieces)
    names: frozenset[str]

    def render(self, facts: Mapping[str, Any], params: Mapping[str, Any]) -> str:
        out: list[str] = []
        for kind, pieces in self.parts:
            values = [(lit, f, _lookup(f, facts, params)) for lit, f in pieces]
            if kind == "group" and any(
                f is not None and (v is None or v is False or v == []) for _, f, v in values
            ):
                continue
            for lit, f, v in values:
                out.append(lit)
                if f is not None:
                    out.append(format_value(v, f.spec))
        return "".join(out).strip()


def _lookup(f: _Field | None, facts: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    if f is None:
        return None
    if f.name in params:
        return params[f.name]
    return facts.get(f.name)


def _parse_pieces(text: str, known: Container[str]) -> tuple[list[_Piece], set[str]]:
    pieces: list[_Piece] = []
    names: set[str] = set()
    try:
        parsed = list(_FORMATTER.parse(text))
    except ValueError as exc:
        raise TemplateError(f"bad template: {exc}") from None
    for literal, name, spec, conversion in parsed:
        if name is None:
            pieces.append((literal, None))
            continue
        if conversion:
            raise TemplateError(f"field {{{name}!{conversion}}}: conversions are not allowed")
        if not name:
            raise TemplateError("empty field {} (name a fact or a parameter)")
        if "[" in name or "{" in (spec or "") or any(p.startswith("_") for p in name.split(".")):
            raise TemplateError(f"field {{{name}}}: only fact and parameter names are allowed")
        if name not in known:
            raise TemplateError(f"field {{{name}}}: unknown fact or parameter")
        if spec and not _SPEC_RE.match(spec):
            raise TemplateError(f"field {{{name}:{spec}}}: unsupported format spec")
        names.add(name)
        pieces.append((literal, _Field(name, spec or "")))
    return pieces, names


def compile_template(source: str, known: Container[str]) -> Template:
    """Check ``source`` against the known field names; raise :class:`TemplateError` if bad."""
    if not isinstance(source, str):
        raise TemplateError("a template must be a string")
    parts: list[tuple[str, tuple[_Piece, ...]]] = []
    names: set[str] = set()
    pos = 0
    for match in _GROUP_RE.finditer(source):
        if match.start() > pos:
            pieces, found = _parse_pieces(source[pos : match.start()], known)
            parts.append(("text", tuple(pieces)))
            names |= found
        pieces, found = _parse_pieces(match.group(1), known)
        parts.append(("group", tuple(pieces)))
        names |= found
        pos = match.end()
    if pos < len(source):
        pieces, found = _parse_pieces(source[pos:], known)
        parts.append(("text", tuple(pieces)))
        names |= found
    rest = _GROUP_RE.sub("", source)
    if "[[" in rest or "]]" in rest:
        raise TemplateError("unbalanced [[ ... ]] group")
    return Template(source, tuple(parts), frozenset(names))


def format_value(value: Any, spec: str = "") -> str:
    """A fact value as text: numbers readable, booleans yes/no, lists joined, None as n/a."""
    if is_changes(value):
        return say_changes(value)
    if isinstance(value, (list, tuple)):
        items = [_item_name(v) for v in value[:10]]
        more = f", … (+{len(value) - 10})" if len(value) > 10 else ""
        return ", ".join(items) + more if items else "none"
    return readable(value, spec=spec, missing=MISSING)


def _item_name(item: Any) -> str:
    if isinstance(item, dict):
        name = item.get("name") or item.get("op") or item.get("type")
        share = item.get("share") or item.get("self_time_share") or item.get("percent")
        if name is not None and isinstance(share, (int, float)):
            return f"{name} ({share:.0%})" if share <= 1 else f"{name} ({share:.0f}%)"
        return str(name if name is not None else item)
    return str(item)
