"""Following a running run: new records read incrementally, folded into live series.

``LiveRun(path).poll()`` reads only what the writers appended since the last poll (a
:class:`~advisor.store.tail.RecordTail`), adds it to the run's
:class:`~advisor.analysis.live.LiveSeries` and returns a snapshot; ``changed`` says whether
anything new arrived (records or status), so a view redraws only then. Once the run is no
longer ``running`` the snapshot is final.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.analysis.live import LiveSnapshot


class LiveRun:
    """One run followed as it grows."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from advisor.analysis.live import LiveSeries
        from advisor.store.tail import RecordTail

        self.tail = RecordTail(path)
        manifest = self.tail.manifest()
        self.series = LiveSeries(manifest.run_id, manifest.created)
        self._status: str | None = None

    @property
    def run_id(self) -> str:
        return self.series.run_id

    def poll(self) -> tuple[LiveSnapshot, bool]:
        """The run now, and whether it changed since the last poll. Errors are AdvisorErrors."""
        records = self.tail.poll()
        status = self.tail.status()
        if status != "running":
            records += self.tail.poll()  # what the writer flushed while it was finishing
        self.series.add(records)
        changed = bool(records) or status != self._status
        self._status = status
        return self.series.snapshot(status), changed
