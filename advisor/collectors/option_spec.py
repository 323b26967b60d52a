"""One option of the collectors, declared once, next to the collector that uses it.

An :class:`Option` row says everything about one setting of ``AdvisorCallback`` (and of
``advisor.track`` where it takes it): its name, its type as the signatures write it, its default,
its documentation, and the one function that validates and normalises a given value. The rows are
collected in order by :mod:`advisor.collectors.option_registry`; ``AdvisorOptions``, the callback's
docstring, the options table of docs/collectors.md and the tests are built from or checked against
them.

The normalisers here are the building blocks: each takes ``(name, value)`` and returns the value
to keep, or raises :class:`~advisor.errors.UsageError` naming the option.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.errors import UsageError

Normaliser = Callable[[str, Any], Any]


def keep(name: str, value: Any) -> Any:
    """Any value, as given."""
    return value


@dataclass(frozen=True)
class Option:
    """One option: one row of the table (see the module docs)."""

    name: str
    type: str  # the annotation as AdvisorCallback.__init__ writes it
    default: Any
    doc: str  # what it means, as the callback's docstring and docs/collectors.md say it
    normalise: Normaliser = keep  # the one place a given value is validated and interpreted
    stored: str | None = None  # AdvisorOptions' annotation, when normalising changes the type
    old_names: tuple[str, ...] = ()  # deprecated spellings: still accepted, with a warning
    recorded_as: str | None = None  # the key in run.json's config when not ``name``
    record: Callable[[Any], Any] | None = None  # the normalised value as JSON (default: as is)
    env: str | None = None  # the environment variable read when the argument is None

    def value(self, given: Any) -> Any:
        """``given`` validated and normalised (the option's typed value)."""
        return self.normalise(self.name, given)

    def recorded(self, value: Any) -> Any:
        """The normalised ``value`` as ``run.json`` records it."""
        return value if self.record is None else self.record(value)

    @property
    def key(self) -> str:
        """The key of ``run.json``'s ``config`` (the old name of a renamed option)."""
        return self.recorded_as or self.name


def positive(allow_zero: bool = False, optional: bool = False) -> Normaliser:
    """A finite number above zero (or zero, with ``allow_zero``; or None, with ``optional``)."""

    def check(name: str, value: Any) -> Any:
        if optional and value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value < 0
            or (value == 0 and not allow_zero)
        ):
            what = "non-negative" if allow_zero else "positive"
            raise UsageError(f"{name} must be a {what} number, got {value!r}")
        return value

    return check


def count(minimum: int) -> Normaliser:
    """An integer of at least ``minimum``."""

    def check(name: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise UsageError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
        return value

    return check


def at_least(minimum: float, unit: str = "s") -> Normaliser:
    """A finite number of at least ``minimum``."""
    number = positive()

    def check(name: str, value: Any) -> Any:
        number(name, value)
        if value < minimum:
            raise UsageError(f"{name} must be at least {minimum} {unit} (got {value})")
        return value

    return check


def one_of(*choices: str) -> Normaliser:
    """One of the fixed ``choices``."""

    def check(name: str, value: Any) -> Any:
        if value not in choices:
            listed = " or ".join(repr(c) for c in choices)
            raise UsageError(f"{name} must be {listed} (got {value!r})")
        return value

    return check


def from_env(
    variable: str, then: Normaliser = keep, parse: Callable[[str], Any] = str
) -> Normaliser:
    """None takes ``$variable`` (parsed) when it is set and not empty; then ``then`` checks."""

    def check(name: str, value: Any) -> Any:
        if value is None and os.environ.get(variable):
            value = parse(os.environ[variable])
        return then(name, value)

    return check


WARNED: set[str] = set()  # the keys warned about in this process


def warn_once(key: str, message: str) -> None:
    """A DeprecationWarning, once per ``key`` and process, pointing at the user's line."""
    if key in WARNED:
        return
    WARNED.add(key)
    warnings.warn(message, DeprecationWarning, stacklevel=_user_level())


def _user_level() -> int:
    """The ``stacklevel`` of the first caller outside this package (the user's line)."""
    frame, depth = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("advisor."):
        frame, depth = frame.f_back, depth + 1
    return depth
