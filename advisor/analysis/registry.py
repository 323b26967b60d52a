"""The facts registry: every named fact the rules may use, with unit, meaning and source.

Facts are declared per area in ``advisor/analysis/facts/<area>.py`` (a ``FACTS`` tuple and a pure
``derive(run) -> dict``). A fact that was not measured is *absent* from the derived mapping,
never zero or False. Rules may only name registered facts; the rule loader checks it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from advisor.store.reader import Run

Kind = Literal["number", "bool", "str", "list"]

# Area modules under advisor.analysis.facts, in derivation order (later areas may read earlier facts).
AREAS: tuple[str, ...] = (
    "run",
    "context",
    "throughput",
    "telemetry",
    "hardware",
    "baseline",
    "pipeline",
    "trace",
    "scaling",
    "cloud",
    "derived",
)


@dataclass(frozen=True)
class Fact:
    name: str
    unit: str  # "samples/s", "%", "fraction", "s", "ms", "bytes", "W", "Wh", "J", "USD/h", "" ...
    description: str
    source: str  # the collector or input that measures it: "throughput", "nvml", "trace", ...
    kind: Kind = "number"


Deriver = Callable[["Run", dict[str, Any]], dict[str, Any]]


class FactRegistry:
    """Names → Fact, plus the derivation functions of every area."""

    def __init__(self) -> None:
        self._facts: dict[str, Fact] = {}
        self._derivers: list[tuple[str, Deriver]] = []

    def add(self, facts: Iterable[Fact], deriver: Deriver | None = None, area: str = "") -> None:
        for fact in facts:
            if fact.name in self._facts:
                raise ValueError(f"fact {fact.name!r} registered twice")
            self._facts[fact.name] = fact
        if deriver is not None:
            self._derivers.append((area, deriver))

    def __contains__(self, name: object) -> bool:
        return name in self._facts

    def __getitem__(self, name: str) -> Fact:
        return self._facts[name]

    def get(self, name: str) -> Fact | None:
        return self._facts.get(name)

    def names(self) -> list[str]:
        return sorted(self._facts)

    def facts(self) -> list[Fact]:
        return [self._facts[n] for n in self.names()]

    def derive(self, run: Run, extra: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
        """All facts of one run. Returns (facts, errors); a failing area is an error, not a crash."""
        facts: dict[str, Any] = dict(extra or {})
        errors: list[str] = []
        for area, deriver in self._derivers:
            try:
                derived = deriver(run, facts)
            except Exception as exc:  # one broken area must not hide the others
                errors.append(f"facts.{area}: {type(exc).__name__}: {exc}")
                continue
            for name, value in derived.items():
                if name not in self._facts:
                    errors.append(f"facts.{area}: derived unregistered fact {name!r}")
                elif value is not None:
                    facts[name] = value
        return facts, errors


_REGISTRY: FactRegistry | None = None


def registry() -> FactRegistry:
    """The process-wide registry, built on first use from the area modules."""
    global _REGISTRY
    if _REGISTRY is None:
        reg = FactRegistry()
        for area in AREAS:
            module = importlib.import_module(f"advisor.analysis.facts.{area}")
            reg.add(module.FACTS, getattr(module, "derive", None), area)
        _REGISTRY = reg
    return _REGISTRY
