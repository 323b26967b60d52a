"""The facts registry: every named fact the rules may use, with unit, meaning and source.

Facts are declared per area in ``advisor/analysis/facts/<area>.py`` (a ``FACTS`` tuple and a pure
``derive(run, facts, ctx) -> dict``). A fact that was not measured is *absent* from the derived
mapping, never zero or False. Rules may only name registered facts; the rule loader checks it.

Derivation is pure: it reads the :class:`~advisor.store.reader.Run` it is given and the
:class:`DeriveContext` its caller built (the run's sweep and its siblings as points, the store's
size). It never opens a file; :mod:`advisor.service` reads runs and builds the context.
"""

from __future__ import annotations

import importlib
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from advisor.analysis.scaling_points import Point
    from advisor.store.reader import Run
    from advisor.store.sweep import SweepRecord

Kind = Literal["number", "bool", "str", "list"]

# Area modules under advisor.analysis.facts, in derivation order (later areas may read earlier
# facts).
# The areas before SIBLING_AREA need nothing but the run: a sweep's points are made from them.
AREAS: tuple[str, ...] = (
    "run",
    "context",
    "throughput",
    "telemetry",
    "hardware",
    "baseline",
    "goodput",
    "compile",
    "pipeline",
    "stalls",
    "memory",
    "memory_batch",
    "trace",
    "whatif",
    "backends",
    "precision",
    "speed_of_light",
    "scaling",
    "store",
    "cloud",
    "derived",
)
SIBLING_AREA = "scaling"

# Renamed facts: old name → new name. Wherever a user names a fact (a rule file, ``advisor runs
# --facts``, ``runs_frame(facts=...)``, ``fact_value``) the old name still works and becomes the
# new one, with a DeprecationWarning once per old name and process; a report lists the new name
# only, and its JSON Schema says which old names are aliases (:func:`deprecated_facts_text`).
DEPRECATED_FACTS: dict[str, str] = {
    "whatif.budget_seconds": "whatif.allowance_seconds",
}
WARNED_FACTS: set[str] = set()  # the old names warned about in this process (tests reset it)


def resolve_fact(name: str, where: str = "") -> str:
    """The current name of the fact ``name``: its new name when it is a deprecated alias (with a
    DeprecationWarning, once per old name and process, at the first caller outside advisor;
    ``where`` says where it was named), else ``name`` itself."""
    new = DEPRECATED_FACTS.get(name) if isinstance(name, str) else None
    if new is None:
        return name
    if name not in WARNED_FACTS:
        WARNED_FACTS.add(name)
        frame, level = sys._getframe(1), 2
        while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(
            "advisor."
        ):
            frame, level = frame.f_back, level + 1
        warnings.warn(
            f"fact {name!r}{' in ' + where if where else ''} is deprecated: use {new!r}",
            DeprecationWarning,
            stacklevel=level,
        )
    return new


def deprecated_facts_text() -> str:
    """The aliases in words (the report's JSON Schema says them), or "" without any."""
    pairs = "; ".join(
        f"{old!r} is an alias of {new!r}" for old, new in sorted(DEPRECATED_FACTS.items())
    )
    return (
        "Each fact is listed under its current name only. Deprecated names, still accepted with "
        "a DeprecationWarning where a fact is named (rule files, `advisor runs --facts`, "
        f"`runs_frame(facts=...)`, `fact_value`): {pairs}."
        if pairs
        else ""
    )


@dataclass(frozen=True)
class Fact:
    name: str
    unit: str  # "samples/s", "%", "fraction", "s", "ms", "bytes", "W", "Wh", "J", "USD/h", "" ...
    description: str
    source: str  # the collector or input that measures it: "throughput", "nvml", "trace", ...
    kind: Kind = "number"


@dataclass(frozen=True)
class DeriveContext:
    """What a run's facts may need beyond the run itself, gathered by the caller.

    ``siblings``: the other runs of the run's sweep, each as a scaling point (finished or not);
    ``sweep``: the sweep file, when ``advisor scale`` wrote one; ``store_runs`` / ``store_bytes``:
    the size of the store around the run. Absent values leave their facts absent.
    """

    sweep: SweepRecord | None = None
    siblings: tuple[Point, ...] = ()
    store_runs: int | None = None
    store_bytes: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


NO_CONTEXT = DeriveContext()

Deriver = Callable[["Run", dict[str, Any], DeriveContext], dict[str, Any]]


class FactRegistry:
    """Names → Fact, plus the derivation functions of every area."""

    def __init__(self) -> None:
        self._facts: dict[str, Fact] = {}
        self._families: list[tuple[re.Pattern[str], Fact]] = []  # "callbacks.<name>.ms_per_step"
        self._derivers: list[tuple[str, Deriver]] = []

    def add(self, facts: Iterable[Fact], deriver: Deriver | None = None, area: str = "") -> None:
        for fact in facts:
            if fact.name in self._facts:
                raise ValueError(f"fact {fact.name!r} registered twice")
            self._facts[fact.name] = fact
            if "<" in fact.name:  # a family: one fact per name the run has (a callback's class…)
                head, _, rest = fact.name.partition("<")
                tail = rest.partition(">")[2]
                self._families.append(
                    (re.compile(re.escape(head) + r"[A-Za-z0-9_]+" + re.escape(tail) + r"\Z"), fact)
                )
        if deriver is not None:
            self._derivers.append((area, deriver))

    def __contains__(self, name: object) -> bool:
        return name in self._facts

    def __getitem__(self, name: str) -> Fact:
        fact = self.get(name)
        if fact is None:
            raise KeyError(name)
        return fact

    def get(self, name: str) -> Fact | None:
        """The fact of ``name``, or of the family it belongs to (a derived name; rules cannot name
        it)."""
        fact = self._facts.get(name)
        if fact is None and isinstance(name, str):
            fact = next((f for pattern, f in self._families if pattern.match(name)), None)
        return fact

    def names(self) -> list[str]:
        return sorted(self._facts)

    def facts(self) -> list[Fact]:
        return [self._facts[n] for n in self.names()]

    def derive(self, run: Run, ctx: DeriveContext = NO_CONTEXT) -> tuple[dict[str, Any], list[str]]:
        """All facts of one run. Returns (facts, errors); a failing area is an error, not a
        crash."""
        base, errors = self.derive_base(run)
        facts, more = self.derive_rest(run, base, ctx)
        return facts, errors + more

    def derive_base(self, run: Run) -> tuple[dict[str, Any], list[str]]:
        """The facts of the areas that need nothing but the run (what a sweep point is made of)."""
        return self._derive(run, {}, NO_CONTEXT, before=SIBLING_AREA)

    def derive_rest(
        self, run: Run, base: dict[str, Any], ctx: DeriveContext = NO_CONTEXT
    ) -> tuple[dict[str, Any], list[str]]:
        """The remaining areas, from the base facts of :meth:`derive_base` and the context."""
        return self._derive(run, dict(base), ctx, start=SIBLING_AREA)

    def _derive(
        self,
        run: Run,
        facts: dict[str, Any],
        ctx: DeriveContext,
        *,
        start: str | None = None,
        before: str | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        errors: list[str] = []
        areas = [area for area, _ in self._derivers]
        first = areas.index(start) if start in areas else 0
        last = areas.index(before) if before in areas else len(areas)
        for area, deriver in self._derivers[first:last]:
            try:
                derived = deriver(run, facts, ctx)
            except Exception as exc:  # one broken area must not hide the others
                errors.append(f"facts.{area}: {type(exc).__name__}: {exc}")
                continue
            for name, value in derived.items():
                fact = self.get(name)
                if fact is None:
                    errors.append(f"facts.{area}: derived unregistered fact {name!r}")
                elif value is not None:
                    wrong = kind_error(fact, value)
                    if wrong:
                        errors.append(f"facts.{area}: {name} {wrong}; left out")
                    else:
                        facts[name] = value
        return facts, errors


def kind_error(fact: Fact, value: Any) -> str | None:
    """Why ``value`` is not of ``fact``'s kind, or None. A fact is exactly its kind: a quoted
    number, ``"no"`` for a boolean or a non-finite number (a quoted ``"nan"`` read back) would
    turn into a confident verdict, so it is left out and said."""
    if fact.kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"is {_shown(value)}, not a number"
        if isinstance(value, float) and not math.isfinite(value):
            return f"is {value}, not a finite number"
    elif fact.kind == "bool" and not isinstance(value, bool):
        return f"is {_shown(value)}, not true or false"
    elif fact.kind == "str" and not isinstance(value, str):
        return f"is {_shown(value)}, not text"
    elif fact.kind == "list" and not isinstance(value, (list, tuple)):
        return f"is {_shown(value)}, not a list"
    return None


def written_values(written: Iterable[dict[str, Any]], facts: dict[str, Fact]) -> dict[str, Any]:
    """The last value written for each of ``facts`` (by name) across ``written`` (the values of
    records, in order). A value of the wrong kind in any record wins over the later ones: the
    registry then leaves the fact out and says why, where a later record would have hidden the
    damage."""
    out: dict[str, Any] = {}
    wrong: dict[str, Any] = {}
    for values in written:
        for name, value in values.items():
            fact = facts.get(name)
            if fact is not None and value is not None:
                out[name] = value
                if kind_error(fact, value):
                    wrong.setdefault(name, value)
    return {**out, **wrong}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_REGISTRY: FactRegistry | None = None


def registry() -> FactRegistry:
    """The process-wide registry, built on first use from the area modules."""
    global _REGISTRY
    if _REGISTRY is None:
        reg = FactRegistry()
        for area in AREAS:
            module = importlib.import_module(f"advisor.analysis.facts.{area}")
            reg.add(module.FACTS, getattr(module, "derive", None), area)
        for old, new in DEPRECATED_FACTS.items():  # an alias names a fact, and no longer is one
            if old in reg or new not in reg:
                raise ValueError(f"deprecated fact {old!r}: {new!r} must replace it")
        _REGISTRY = reg
    return _REGISTRY
