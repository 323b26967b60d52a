"""What the screens show, as plain data and pure functions: run filters and sorting, comparison
of runs, finding filters, counts and measured gains. No textual here, so it is tested headless."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.numbers import count_text, percent, readable, strategy_label, workers_label

if TYPE_CHECKING:
    from advisor.diagnosis.report import Finding, Report
    from advisor.service.listing import RunDigest
    from advisor.service.run_service import RunRow

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
STATUS_STYLE = {
    "fail": "bold",
    "pass": "green",
    "unknown": "dim",
    "n/a": "dim",
    "error": "bold magenta",
    "running": "bold green",
    "finished": "",
    "failed": "red",
    "terminated": "yellow",
    "killed": "red",
    "unreadable": "bold magenta",
}


@dataclass
class RunView:
    """One line of the Runs screen: the manifest's row, and its digest once computed."""

    row: RunRow
    digest: RunDigest | None = None
    marked: bool = False

    @property
    def key(self) -> str:
        return self.row.path

    @property
    def status(self) -> str:
        if self.row.status == "unreadable" or self.digest is None:
            return self.row.status
        return self.digest.status  # read later than the manifest: a run may have finished since

    @property
    def error(self) -> str | None:
        return self.row.error or (self.digest.error if self.digest else None)

    @property
    def samples_per_s(self) -> float | None:
        return self.digest.samples_per_s if self.digest else None

    @property
    def samples_per_dollar(self) -> float | None:
        return self.digest.samples_per_dollar if self.digest else None

    @property
    def top_finding(self) -> str:
        """The top finding as ``CODE name``; a dash for none, an ellipsis while it loads."""
        if self.error:
            return "unreadable"
        if self.digest is None:
            return "…"
        top = self.digest.top
        return f"{top.code} {top.name}" if top else "—"

    @property
    def date(self) -> str:
        return (
            time.strftime("%m-%d %H:%M", time.localtime(self.row.created))
            if self.row.created
            else "—"
        )


def _text_of(view: RunView) -> str:
    r = view.row
    parts = [
        r.run_id,
        r.name or "",
        r.strategy or "",
        r.sweep_id or "",
        view.status,
        view.top_finding,
    ]
    parts += [f"{k}={v}" for k, v in r.tags.items()]
    return " ".join(parts).lower()


@dataclass(frozen=True)
class RunFilter:
    """``/`` on the Runs screen: words match anywhere; ``tag:k=v``, ``strategy:``, ``status:``,
    ``sweep:`` and ``workers:`` match one field. Every term must match."""

    words: tuple[str, ...] = ()
    tags: tuple[tuple[str, str | None], ...] = ()
    fields: tuple[tuple[str, str], ...] = ()

    FIELDS = ("strategy", "status", "sweep", "workers")

    @classmethod
    def parse(cls, query: str) -> RunFilter:
        try:
            terms = shlex.split(query)
        except ValueError:  # an unclosed quote: take the words as they are
            terms = query.split()
        words: list[str] = []
        tags: list[tuple[str, str | None]] = []
        fields: list[tuple[str, str]] = []
        for term in terms:
            name, sep, value = term.partition(":")
            if sep and name.lower() == "tag" and value:
                key, eq, tag_value = value.partition("=")
                tags.append((key, tag_value if eq else None))
            elif sep and name.lower() in cls.FIELDS and value:
                fields.append((name.lower(), value.lower()))
            else:
                words.append(term.lower())
        return cls(tuple(words), tuple(tags), tuple(fields))

    def __bool__(self) -> bool:
        return bool(self.words or self.tags or self.fields)

    def matches(self, view: RunView) -> bool:
        r = view.row
        for key, value in self.tags:
            if key not in r.tags or (value is not None and r.tags[key] != value):
                return False
        for name, value in self.fields:
            actual = {
                "strategy": r.strategy,
                "status": view.status,
                "sweep": r.sweep_id,
                "workers": None if r.workers is None else str(r.workers),
            }[name]
            if actual is None or (
                value not in actual.lower() if name != "workers" else value != actual
            ):
                return False
        text = _text_of(view)
        return all(w in text for w in self.words)


# Sort keys of the Runs screen's columns; None (not measured, not loaded) sorts last either way.
SORT_KEYS: dict[str, Callable[[RunView], Any]] = {
    "run": lambda v: v.row.run_id,
    "date": lambda v: v.row.created,
    "status": lambda v: v.status,
    "strategy": lambda v: v.row.strategy,
    "workers": lambda v: v.row.workers,
    "samples/s": lambda v: v.samples_per_s,
    "samples/$": lambda v: v.samples_per_dollar,
    "sweep": lambda v: v.row.sweep_id,
    "top finding": lambda v: v.digest.top.code if v.digest and v.digest.top else None,
}


def sort_views(views: Iterable[RunView], column: str, reverse: bool = False) -> list[RunView]:
    key = SORT_KEYS[column]
    present = [v for v in views if key(v) is not None]
    missing = [v for v in views if key(v) is None]
    return sorted(present, key=key, reverse=reverse) + missing


# ---------------------------------------------------------------------------------------------
# Comparison


@dataclass(frozen=True)
class Comparison:
    """Runs side by side: one value per run for each metric, and the findings whose status
    differs."""

    run_ids: list[str]
    metrics: list[tuple[str, list[str]]]
    differing: list[tuple[str, str, list[str]]]  # code, name, one status per run ("fail: error")


def _relative(value: Any, base: Any) -> str:
    if not isinstance(value, (int, float)) or not isinstance(base, (int, float)) or not base:
        return ""
    return f" ({percent(value / base - 1.0, 0, fraction=True, signed=True)})"


def compare(reports: list[Report]) -> Comparison:
    first = reports[0]
    metrics: list[tuple[str, list[str]]] = []
    for label, get in (
        ("status", lambda r: r.run.status or "—"),
        ("strategy", lambda r: strategy_label(r.run.strategy, r.run.tags)),
        ("workers", lambda r: readable(workers_label(r.run.num_workers, r.run.tags))),
        ("instance", lambda r: r.run.instance_type or "—"),
    ):
        metrics.append((label, [get(r) for r in reports]))
    for label, name, show in (
        ("samples/s", "throughput.samples_per_s", lambda v: readable(v, 1)),
        ("samples/$", "cost.samples_per_dollar", count_text),
        ("step time (ms)", "steps.time_ms.mean", lambda v: readable(v, 2)),
        ("epoch time (s, first out)", "time.epoch_s.mean", lambda v: readable(v, 2)),
        ("measured steps", "throughput.measured_steps", lambda v: readable(v, 0)),
    ):
        base = first.fact(name)
        values = [
            show(r.fact(name)) + (_relative(r.fact(name), base) if i else "")
            for i, r in enumerate(reports)
        ]
        if any(v != "—" for v in values):
            metrics.append((label, values))
    metrics.append(("findings", [str(len(r.failures)) for r in reports]))
    tops = [
        next(iter(r.failing("warning")), None) for r in reports
    ]  # the costliest warning or error
    metrics.append(("top finding", [f"{t.code} {t.name}" if t else "—" for t in tops]))
    by_code: dict[str, dict[int, Finding]] = {}
    for i, r in enumerate(reports):
        for f in r.findings:
            by_code.setdefault(f.code, {})[i] = f
    differing = []
    for code, found in sorted(by_code.items()):
        statuses = [_status_label(found.get(i)) for i in range(len(reports))]
        if len(set(statuses)) > 1:
            name = next(iter(found.values())).name
            differing.append((code, name, statuses))
    differing.sort(key=lambda d: (not any(s.startswith("fail") for s in d[2]), d[0]))
    return Comparison([r.run.run_id for r in reports], metrics, differing)


def _status_label(finding: Finding | None) -> str:
    if finding is None:
        return "—"
    return f"fail: {finding.severity}" if finding.status == "fail" else finding.status


# ---------------------------------------------------------------------------------------------
# Findings


@dataclass(frozen=True)
class FindingFilter:
    """Section (M/I/S/C/G/D/P), severity, status and words; None / empty means any."""

    section: str | None = None
    severity: str | None = None
    status: str | None = None
    text: str = ""

    def matches(self, f: Finding) -> bool:
        if self.section and f.section != self.section:
            return False
        if self.severity and f.severity != self.severity:
            return False
        if self.status and f.status != self.status:
            return False
        words = self.text.lower().split()
        haystack = f"{f.code} {f.name} {f.summary} {f.message}".lower()
        return all(w in haystack for w in words)


@dataclass(frozen=True)
class Counts:
    decided: int
    total: int
    fail: int
    passed: int
    not_applicable: int
    unknown: int
    error: int

    def line(self) -> str:
        share = f" ({percent(self.decided / self.total, 0, fraction=True)})" if self.total else ""
        parts = [
            f"decided {self.decided}/{self.total}{share}",
            f"fail {self.fail}",
            f"pass {self.passed}",
            f"n/a {self.not_applicable}",
            f"unknown {self.unknown}",
        ]
        if self.error:
            parts.append(f"error {self.error}")
        return " · ".join(parts)


def counts(report: Report) -> Counts:
    s = report.summary
    return Counts(
        report.coverage.decided,
        report.coverage.total,
        s.fail,
        s.passed,
        s.not_applicable,
        s.unknown,
        s.error,
    )


@dataclass(frozen=True)
class Gain:
    label: str
    text: str


def measured_gains(finding: Finding) -> list[Gain]:
    """Gains that were measured (not estimated) and bear on this finding, for the detail pane: the
    what-if's gain of its fix, the ceilings the diagnosis put on it, and its measured gain facts."""
    values = {e.fact: e.value for e in finding.evidence}
    gains: list[Gain] = []
    m = finding.measured
    if m is not None:
        # The what-if's gain of this fix (or its measured ceiling), worded as `show` prints it:
        # the text names itself ("measured ceiling: 2.7× …").
        label, _, text = m.text.partition(": ")
        gains.append(Gain(label, text + f" — {m.candidate}" + (f": {m.label}" if m.label else "")))
    for ceiling in finding.ceilings:
        rate = f"{readable(ceiling.samples_per_s, 1)} samples/s, " if ceiling.samples_per_s else ""
        gains.append(Gain(str(ceiling.label), rate + ceiling.text))
    data_only = values.get("baseline.data_only_samples_per_s")
    if isinstance(data_only, (int, float)):
        gains.append(
            Gain("input pipeline alone (data-only)", f"{readable(data_only, 1)} samples/s")
        )
    for name, value in values.items():
        if name.endswith("_gain") and isinstance(value, (int, float)):
            gains.append(Gain(name, f"{percent(value, 0, fraction=True, signed=True)} measured"))
    return gains


@dataclass(frozen=True)
class Best:
    """The measured best row of a scaling table for one goal (not a recommendation)."""

    goal: str
    strategy: str
    workers: int
    value: str


GOALS = {"samples_per_s": "fastest", "samples_per_dollar": "cheapest", "energy": "least energy"}


def measured_best(table: Any) -> list[Best]:
    """The scaling table's measured best configuration per goal (its recommendations, not the
    projection): the one derivation `advisor report` prints too."""
    best: list[Best] = []
    for rec in getattr(table, "recommendations", []):
        if rec.projected or rec.goal not in GOALS or rec.value is None:
            continue
        value = readable(rec.value, 1 if abs(rec.value) < 1000 else 0)
        best.append(Best(GOALS[rec.goal], rec.strategy, rec.workers, f"{value} {rec.unit}".strip()))
    return best


@dataclass
class ExportResult:
    """Where an export went, and what was skipped (said to the user in one notification)."""

    written: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def message(self) -> str:
        if not self.written:
            return (
                "nothing written: " + "; ".join(self.skipped)
                if self.skipped
                else "nothing to write"
            )
        where = (
            self.written[0]
            if len(self.written) == 1
            else f"{len(self.written)} files in {_common_dir(self.written)}"
        )
        return f"wrote {where}" + (f" (skipped: {'; '.join(self.skipped)})" if self.skipped else "")


def _common_dir(paths: list[str]) -> str:
    import os

    return (
        os.path.dirname(os.path.commonpath(paths)) if len(paths) == 1 else os.path.commonpath(paths)
    )
