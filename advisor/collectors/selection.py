"""The ``collectors=`` option: which collectors run instead of the defaults (names or objects;
old names renamed). :mod:`advisor.collectors.registry` builds them."""

from __future__ import annotations

from typing import Any

from advisor.collectors.option_spec import Option, warn_once

# Old collector names, still accepted in collectors=[...] (a DeprecationWarning once each).
RENAMED = {"budget": "goodput"}


def collector_list(name: str, value: Any) -> tuple[Any, ...] | None:
    """None (the defaults) or the collectors named (or given as objects), old names renamed."""
    if value is None:
        return None
    out = []
    for item in value:
        if isinstance(item, str) and item in RENAMED:
            new = RENAMED[item]
            warn_once(f"collector:{item}", f"{name}=[{item!r}] is deprecated: use {new!r}")
            item = new
        out.append(item)
    return tuple(out)


def collector_names(value: tuple[Any, ...] | None) -> list[str] | None:
    """The collectors as ``run.json`` records them: objects by name."""
    if value is None:
        return None
    return [c if isinstance(c, str) else getattr(c, "name", type(c).__name__) for c in value]


OPTIONS = (
    Option(
        "collectors",
        "Sequence[str | Collector] | None",
        None,
        "names or instances to run instead of the defaults.",
        collector_list,
        stored="tuple[Any, ...] | None",
        record=collector_names,
    ),
)
