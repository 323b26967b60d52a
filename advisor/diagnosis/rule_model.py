"""The shape of a rule file, as a pydantic model: it validates every entry and gives the JSON
Schema of rule files (``advisor schema --rules``).

What a model cannot know — which facts are registered, whether a condition compiles, which
template fields exist, which what-if candidates there are — is checked after it, when the rules
are built (``rules.py``). A pydantic error becomes the one-line reason of a ``RuleError``:
:func:`reason` turns the first error into the same words the loader has always used.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from advisor.diagnosis.expr_runtime import finite_number, number_text

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
CODE_PATTERN = r"^[A-Z]\d{3}$"
NAME_PATTERN = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"
PARAM_PATTERN = r"^[a-z][a-z0-9_]*$"
DOC_SECTIONS = ("what", "why", "how", "impact", "references")
DOC_TITLES = {
    "what": "What it checks",
    "why": "Why it matters",
    "how": "How to fix",
    "impact": "How its impact is estimated",
    "references": "References",
}

Severity = Literal["info", "warning", "error"]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Expression = Annotated[
    Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | int | float,
    Field(description="an expression in the rule language (docs/rules.md); a number is a constant"),
]
ParamName = Annotated[str, StringConstraints(pattern=PARAM_PATTERN)]
FixContext = Literal[
    "fit:tensorflow",
    "fit:jax",
    "fit:torch",
    "track",
    "track:tensorflow",
    "track:jax",
    "track:torch",
    "input:tf.data",
    "input:numpy",
    "input:generator",
    "input:pydataset",
    "input:torch",
]
Omitted = SkipJsonSchema[
    None
]  # a field left out; written empty it is refused, and the schema says so


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class RuleDocs(_Strict):
    """The documentation sections of a rule (docs/rules/<code>.md is generated from them)."""

    what: Text
    why: Text
    how: Text
    impact: Text
    references: Annotated[list[Text], Field(min_length=1)]


class RuleEntry(_Strict):
    """One checklist item."""

    code: Annotated[str, StringConstraints(pattern=CODE_PATTERN)] = Field(
        description="e.g. M101; its section's prefix"
    )
    name: Annotated[str, StringConstraints(pattern=NAME_PATTERN)] = Field(description="kebab-case")
    summary: Text
    severity: Severity
    severity_when: dict[Severity, Expression] = Field(default_factory=dict)
    requires: list[str] = Field(default_factory=list, description="facts that must be known")
    requires_any: list[str] = Field(
        default_factory=list, description="facts of which one must be known"
    )
    optional: list[str] = Field(default_factory=list, description="facts read when known")
    applies: Expression | Omitted = None
    condition: Expression | Omitted = None
    advice: bool = False
    message: Text
    pass_message: Text | Omitted = None
    na_message: Text | Omitted = None  # why it is n/a, when ``applies`` is false
    fix: Text
    fix_for: dict[FixContext, Text] = Field(
        default_factory=dict,
        description="the fix in the words of another input, loop or backend: input:tf.data, "
        "input:numpy, input:generator, input:pydataset, input:torch (what fit reads), fit:jax, "
        "fit:torch, fit:tensorflow, track, track:torch, track:jax, track:tensorflow (the most "
        "specific one that matches wins: the input, then the backend)",
    )
    fit_only: Text | Omitted = None
    impact: Expression | Omitted = None
    gated: bool = False
    symptom: bool = False
    measure: Text | Omitted = None
    params: dict[ParamName, int | float | str] = Field(
        default_factory=dict, json_schema_extra={"additionalProperties": False}
    )
    docs: RuleDocs
    whatif: list[str] = Field(
        default_factory=list, description="what-if candidates that try the fix"
    )
    ceiling: list[str] = Field(
        default_factory=list, description="baseline ceilings or what-if candidates"
    )

    @field_validator("params")
    @classmethod
    def _finite(cls, params: dict[str, Any]) -> dict[str, Any]:
        for name, value in params.items():
            if not isinstance(value, str) and not finite_number(value):
                raise ValueError(
                    f"parameter {name!r} must be a finite number, not {number_text(value)}"
                )
        return params

    @model_validator(mode="after")
    def _decides(self) -> RuleEntry:
        for key in _EXPRESSIONS:
            if key in self.model_fields_set and getattr(self, key) is None:
                raise ValueError(f"{key} is empty: write the expression, or leave the field out")
        for key in _TEXTS:
            if key in self.model_fields_set and getattr(self, key) is None:
                raise ValueError(f"{key} must be a non-empty string")
        if self.condition is None and not self.advice:
            raise ValueError(
                "missing field 'condition' (or 'advice: true' for a rule that needs a human "
                "decision)"
            )
        return self


class RuleFile(_Strict):
    """A rule file: one checklist section."""

    section: Literal["M1", "I2", "S3", "C4", "G5", "D6", "P7"]
    title: str | None = None
    rules: Annotated[list[RuleEntry], Field(min_length=1)]


_LISTS = {
    "requires": "fact names",
    "requires_any": "fact names",
    "optional": "fact names",
    "whatif": "what-if candidate names",
    "ceiling": "names: baseline ceilings or what-if candidates",
}
_FLAGS = ("advice", "gated", "symptom")
_EXPRESSIONS = ("condition", "applies", "impact")
_TEXTS = (
    "pass_message",
    "na_message",
    "measure",
    "fit_only",
)  # optional texts: left out, or written non-empty


def reason(error: dict[str, Any], section: str) -> tuple[str | None, str]:
    """(the field whose line to name, the reason in words) for a pydantic error of an entry,
    its location relative to the entry."""
    loc = tuple(error.get("loc", ()))
    kind = error.get("type", "")
    key = str(loc[0]) if loc else None
    if kind == "value_error":
        text = str(error.get("ctx", {}).get("error", error.get("msg")))
        named = next((k for k in (*_EXPRESSIONS, *_TEXTS) if text.startswith(f"{k} ")), None)
        return (key or named, text)
    if key is None:
        return None, "a rule must be a mapping of fields"
    if kind == "extra_forbidden" and len(loc) == 1:
        return key, f"unknown field {key!r}"
    if kind == "missing" and len(loc) == 1:
        return None, f"missing field {key!r}"
    if key == "docs":
        return key, _docs_reason(loc[1:], kind)
    if key == "code":
        return key, f"code must look like {section[0]}123 and belong to section {section}"
    if key == "name":
        return key, "name must be kebab-case (e.g. input-bound)"
    if key == "severity":
        return key, f"severity must be one of {', '.join(SEVERITIES)}"
    if key == "severity_when":
        if len(loc) == 3 and loc[-1] == "[key]":  # pydantic's location of a refused mapping key
            return key, f"severity_when: {loc[1]!r} is not one of {', '.join(SEVERITIES)}"
        return key, "severity_when must map a severity to a non-empty condition"
    if key in _LISTS:
        return key, f"{key} must be a list of {_LISTS[key]}"
    if key in _FLAGS:
        return key, f"{key} must be true or false"
    if key in _EXPRESSIONS:
        return key, f"{key} must be a non-empty expression (a string or a number)"
    if key == "params":
        if len(loc) >= 3 and loc[-1] == "[key]":
            return key, f"parameter name {loc[1]!r} must be snake_case"
        if len(loc) >= 2:
            return key, f"parameter {loc[1]!r} must have a number or string default"
        return key, "params must be a mapping of name: default"
    return key, f"{key} must be a non-empty string"


def _docs_reason(loc: tuple[Any, ...], kind: str) -> str:
    if not loc:
        return "docs must be a mapping with what, why, how, impact, references"
    part = str(loc[0])
    if kind == "extra_forbidden":
        return f"docs: unknown section {part!r} (expected {', '.join(DOC_SECTIONS)})"
    if part == "references":
        return "docs: references must be a non-empty list of strings"
    return f"docs: missing section {part!r} ({DOC_TITLES.get(part, part)})"


def file_reason(error: dict[str, Any]) -> tuple[str | None, str]:
    """(the top-level field, the reason) for an error outside the rules' entries."""
    loc = tuple(error.get("loc", ()))
    key = str(loc[0]) if loc else None
    if error.get("type") == "extra_forbidden" and key is not None:
        return key, f"unknown top-level field {key!r} (expected section, title, rules)"
    if key == "section":
        return key, f"section must be one of {', '.join(SECTIONS)}"
    if key == "rules":
        return key, "'rules' must be a non-empty list"
    if key == "title":
        return key, "title must be a string"
    return None, "a rule file is a mapping with 'section' and 'rules'"


@functools.lru_cache(maxsize=1)
def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a rule file."""
    schema = RuleFile.model_json_schema()
    entry = schema["$defs"]["RuleEntry"]["properties"]
    for key in (*_EXPRESSIONS, *_TEXTS):  # no null to offer: an empty field is refused
        entry[key].pop("default", None)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "advisor rule file"
    schema["description"] = (
        "One checklist section of advisor's rules (docs/rules.md). Facts, condition "
        "syntax and template fields are checked when the rules load."
    )
    return schema
