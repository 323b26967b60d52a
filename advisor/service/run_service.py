"""``RunService``: the service's one door — a run store's reads and derivations
(``runs.CachedRuns``), its scaling tables (``scaling``) and its profiles (``traces``).

``CachedRuns`` reads, derives and diagnoses; the scaling and profile helpers take a ``CachedRuns``,
and ``RunService`` adds them as methods, so that nothing imports back up into this module.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.service.run_rows import Analysis, RunRow, run_info
from advisor.service.runs import CachedRuns, is_store_url

if TYPE_CHECKING:
    from advisor.analysis.scaling import Failure, ScalingTable
    from advisor.analysis.scaling_points import Point
    from advisor.diagnosis.config import Config
    from advisor.diagnosis.report import Report
    from advisor.store.reader import Run
    from advisor.store.trace_summary import TraceSummary

__all__ = [
    "Analysis",
    "RunRow",
    "CachedRuns",
    "RunService",
    "analyse",
    "diagnose",
    "is_store_url",
    "run_info",
]


class RunService(CachedRuns):
    """A run store: runs read and derived once (``CachedRuns``), scaling tables and profiles.

    ``runs_dir`` may be ``s3://bucket/prefix``: the store is then listed in S3 and read through a
    local mirror that only downloads what changed (:mod:`advisor.cloud.s3store`).
    """

    def scaling_table(
        self,
        source: str | os.PathLike[str] | None = None,
        price_per_hour: float | None = None,
        gpus_per_instance: int | None = None,
    ) -> ScalingTable:
        """The scaling table of a sweep id / sweep directory / runs directory / the latest sweep."""
        from advisor.service.scaling import scaling_table

        return scaling_table(
            self, source, price_per_hour=price_per_hour, gpus_per_instance=gpus_per_instance
        )

    def points(
        self, root: Path | None = None, sweep_id: str | None = None
    ) -> tuple[list[Point], list[Failure]]:
        """Finished runs under ``root`` (of one sweep when ``sweep_id``) as points, and the
        failures."""
        from advisor.service.scaling import sweep_points

        return sweep_points(self, root or self.root, sweep_id)

    # -- profiles -------------------------------------------------------------------------------
    def summarize_traces(
        self,
        path: str | os.PathLike[str],
        *,
        into: str | None = None,
        force: bool = False,
        timeout_s: float | None = None,
        memory_mb: int | None = None,
    ) -> tuple[list[tuple[str, TraceSummary]], list[str]]:
        """Summaries of a profile (a file, session, log dir or run); ``into`` attaches it to a
        run."""
        from advisor.service.traces import summarize_traces

        return summarize_traces(
            self, path, into=into, force=force, timeout_s=timeout_s, memory_mb=memory_mb
        )


# ---------------------------------------------------------------------------------------------
# One-call conveniences (each builds a RunService for the call)


def analyse(
    run: Run | str | os.PathLike[str] | None = None, runs_dir: str | os.PathLike[str] | None = None
) -> Analysis:
    """The facts of one run (``latest`` by default), its sweep's siblings included."""
    return RunService(runs_dir).analyse(run)


def diagnose(
    run: Run | str | os.PathLike[str] | None = None,
    config: Config | str | os.PathLike[str] | Mapping[str, Any] | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    *,
    runs_dir: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Report:
    """The diagnosis of one run: ``advisor.diagnose("latest")``; options as
    :meth:`RunService.diagnose`."""
    return RunService(runs_dir).diagnose(run, config, select, ignore, **options)
