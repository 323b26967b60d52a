"""Typed messages between workers, screens and the app (dataclasses, posted with ``post_message``).

Workers run in threads and post these; ``post_message`` is thread-safe. :class:`LiveUpdate`
carries a whole snapshot, so a newer one may replace an older one still queued: a writer at
10 records/s cannot flood the UI, and nothing is lost by merging.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from textual.message import Message

if TYPE_CHECKING:
    from advisor.analysis.comparison_model import RunComparison
    from advisor.analysis.live import LiveSnapshot
    from advisor.analysis.scaling import ScalingTable
    from advisor.diagnosis.report import Report
    from advisor.service.listing import RunDigest
    from advisor.service.run_service import RunRow

View = Literal["runs", "findings", "live", "scaling", "compare"]


@dataclass
class Navigate(Message):
    """Open a view: ``path`` for a run (findings, live), ``sweep`` for scaling (None: the whole
    store), ``paths`` for a comparison."""

    view: View
    path: str | None = None
    sweep: str | None = None
    paths: tuple[str, ...] = ()


@dataclass
class EntriesLoaded(Message):
    """The store's runs, from their manifests."""

    rows: list[RunRow]


@dataclass
class DigestsLoaded(Message):
    """Digests computed since the last message: (run path, digest); ``left`` still to compute."""

    digests: list[tuple[str, RunDigest]]
    left: int


@dataclass
class ReportLoaded(Message):
    path: str
    report: Report


@dataclass
class ReportsLoaded(Message):
    reports: list[Report]
    comparisons: list[RunComparison | None] = field(default_factory=list)  # runs[1:] vs runs[0]


@dataclass
class TableLoaded(Message):
    table: ScalingTable


@dataclass
class LoadFailed(Message):
    """A read failed; ``error`` is one line for the user."""

    error: str
    what: str = ""


@dataclass
class LiveUpdate(Message):
    """A live run as it is now (a whole snapshot: a newer one replaces an older one still
    queued)."""

    snapshot: LiveSnapshot
    note: str | None = field(default=None)

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LiveUpdate) and message.snapshot.run_id == self.snapshot.run_id
