"""Profiles through the store: summarise a trace, a run's captures, or attach one to a run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.service.runs import CachedRuns
    from advisor.store.trace_summary import TraceSummary


def summarize_traces(
    store: CachedRuns,
    path: str | os.PathLike[str],
    *,
    into: str | None = None,
    force: bool = False,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
) -> tuple[list[tuple[str, TraceSummary]], list[str]]:
    """Summaries of a profile (a file, session, log dir or run); ``into`` attaches it to a run.

    Returns ``[(where, summary)]`` and notes for people. A run's captures that already have a
    summary are read back unless ``force``.
    """
    from advisor.errors import TraceError
    from advisor.store.schema import MANIFEST_NAME, TraceRecord
    from advisor.traces.attach import attach, summarize_run
    from advisor.traces.summarize import summarize

    source = Path(path)
    results: list[tuple[str, TraceSummary]] = []
    notes: list[str] = []
    if into is not None:
        run_path = store.resolve(into)
        record, summary = attach(source, run_path, timeout_s=timeout_s, memory_mb=memory_mb)
        results.append((str(run_path / record.path), summary))
        notes.append(f"attached to run {run_path.name} as {record.path}")
        if store.push(run_path):
            notes.append(f"uploaded to {store.url or 'its S3 store'}")
    elif source.is_dir() and (source / MANIFEST_NAME).is_file():
        done = summarize_run(source, force=force, timeout_s=timeout_s, memory_mb=memory_mb)
        if not done:
            run = store.read(source)
            latest = {r.path: r for r in run.of_type(TraceRecord) if r.summary}
            for rec in latest.values():
                if rec.summary in run.trace_summaries:
                    results.append((str(source / rec.path), run.trace_summaries[rec.summary]))
            notes.append("already summarised (use --force to summarise again)")
        for record, summary in done:
            results.append((str(source / record.path), summary))
            notes.append(f"recorded in run {source.name}")
    else:
        results.append((str(source), summarize(source, timeout_s=timeout_s, memory_mb=memory_mb)))
    if not results:
        raise TraceError(f"{source}: nothing to summarise")
    return results, notes
