"""The rules' phrasebook: how the changes the analysis finds are said to people.

Analysis returns changes as data (``{"change": "parallel_calls", "stage": "map #2 ('decode')"}``);
``rules/phrases/pipeline.yaml`` holds the words. A template field whose fact is such a list (e.g.
``{pipeline.advice}``) renders through :func:`say_changes`. An unknown change code is said by its
code, never dropped.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from advisor.errors import RuleError

PHRASEBOOK = "phrases/pipeline.yaml"
_FORMATTER = string.Formatter()


@lru_cache(maxsize=1)
def phrasebook() -> tuple[str, dict[str, str]]:
    """(what to say when nothing needs changing, change code → phrase), from the built-in rules."""
    import yaml

    from advisor.diagnosis.paths import default_rules_dir

    path = default_rules_dir() / PHRASEBOOK
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise RuleError(f"{path}: cannot read the phrasebook ({exc})") from None
    changes = data.get("changes") if isinstance(data, dict) else None
    if not isinstance(changes, dict) or not all(isinstance(v, str) for v in changes.values()):
        raise RuleError(f"{path}: 'changes' must map change codes to phrases")
    for code, phrase in changes.items():
        for _, field, spec, conversion in _FORMATTER.parse(phrase):
            if field is not None and (not field.isidentifier() or spec or conversion):
                raise RuleError(f"{path}: phrase {code!r}: fields are plain names like {{stage}}")
    return str(data.get("none") or "no change needed"), dict(changes)


def is_changes(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(
        isinstance(v, Mapping) and "change" in v for v in value
    )


def say_change(item: Mapping[str, Any]) -> str:
    _, phrases = phrasebook()
    phrase = phrases.get(str(item.get("change")))
    if phrase is None:
        return str(item.get("change"))
    values = {k: str(v) for k, v in item.items()}
    return "".join(
        lit + (values.get(field, "?") if field is not None else "")
        for lit, field, _, _ in _FORMATTER.parse(phrase)
    )


def say_changes(items: Sequence[Mapping[str, Any]]) -> str:
    """The changes in words, most valuable first, joined with "; "."""
    if not items:
        return phrasebook()[0]
    return "; ".join(dict.fromkeys(say_change(item) for item in items))
