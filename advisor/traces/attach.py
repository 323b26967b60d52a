"""Summaries into runs: summarise a run's own captures, or attach an outside profile to a run.

Both end in a ``trace`` record appended to the chief's record file, naming the saved summary, so
that ``advisor check`` derives ``trace.*`` facts from it. Runs that are still being written are
left alone (their writer owns the file).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from advisor.errors import RunFormatError, TraceError
from advisor.store.append import append_record as append_line
from advisor.store.reader import Run, RunReader
from advisor.store.schema import TRACES_DIR, TraceRecord
from advisor.store.trace_summary import TraceSummary, save_summary
from advisor.traces.summarize import find_xplanes, summarize


def summarize_run(
    run_path: str | os.PathLike[str],
    *,
    force: bool = False,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
) -> list[tuple[TraceRecord, TraceSummary]]:
    """Summarise the run's captures that have no summary yet (all of them with ``force``)."""
    run = _finished_run(run_path)
    latest: dict[str, TraceRecord] = {}
    for record in run.of_type(TraceRecord):
        if record.error is None:
            latest[record.path] = record
    if not latest:
        raise TraceError(
            f"{run.path}: the run has no profile (train with profile_steps=(start, stop))"
        )
    done: list[tuple[TraceRecord, TraceSummary]] = []
    for record in latest.values():
        # Paths come from the records: they must stay inside the run (never write elsewhere).
        if record.summary and not force and run.resolve(record.summary).is_file():
            continue
        folder = run.resolve(record.path)
        summary = summarize(folder, timeout_s=timeout_s, memory_mb=memory_mb)
        target = save_summary(summary, folder)
        updated = record.model_copy(
            update={"t": time.time(), "summary": os.path.relpath(target, run.path)}
        )
        append_record(run, updated)
        done.append((updated, summary))
    return done


def attach(
    profile: str | os.PathLike[str],
    run_path: str | os.PathLike[str],
    *,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
) -> tuple[TraceRecord, TraceSummary]:
    """Copy an outside profile into ``<run>/traces/`` and record its summary there."""
    from advisor.traces.horovod_timeline import is_horovod_timeline

    if is_horovod_timeline(profile):
        return attach_timeline(profile, run_path)
    run = _finished_run(run_path)
    files = find_xplanes(profile)
    summary = summarize(profile, timeout_s=timeout_s, memory_mb=memory_mb)
    session = files[0].parent.name if len(files) > 1 or files[0].parent.name else "profile"
    folder = run.path / TRACES_DIR / "imported" / f"{time.strftime('%Y%m%d-%H%M%S')}-{session}"
    try:
        folder.mkdir(parents=True, exist_ok=False)
        for f in files:
            shutil.copy2(f, folder / f.name)
    except OSError as exc:
        raise TraceError(
            f"{folder}: cannot copy the profile into the run ({exc.strerror or exc})"
        ) from None
    return _record_summary(run, summary, folder)


def attach_timeline(
    timeline: str | os.PathLike[str], run_path: str | os.PathLike[str]
) -> tuple[TraceRecord, TraceSummary]:
    """A Horovod timeline into ``<run>/traces/horovod/``: its communication share over the run's
    own training windows (the chief's measured windows, warm-up and profiled ones excluded)."""
    from advisor.store.schema import WindowRecord
    from advisor.traces.horovod_timeline import summarize_timeline

    run = _finished_run(run_path)
    chief = run.ranks[0] if run.ranks else 0
    windows = [
        (w.t - w.seconds, w.t)
        for w in run.of_type(WindowRecord, rank=chief)
        if not w.warmup and not w.profiled and w.seconds > 0
    ]
    summary = summarize_timeline(timeline, windows)
    folder = run.path / TRACES_DIR / "horovod" / time.strftime("%Y%m%d-%H%M%S")
    try:
        folder.mkdir(parents=True, exist_ok=False)
        shutil.copy2(timeline, folder / "timeline.json")
    except OSError as exc:
        raise TraceError(
            f"{folder}: cannot copy the timeline into the run ({exc.strerror or exc})"
        ) from None
    return _record_summary(run, summary, folder)


def _record_summary(
    run: Run, summary: TraceSummary, folder: Path
) -> tuple[TraceRecord, TraceSummary]:
    """Save ``summary`` beside the copied files in ``folder`` and append its record to the run."""
    target = save_summary(summary, folder)
    record = TraceRecord(
        t=time.time(),
        path=os.path.relpath(folder, run.path),
        steps_marked=summary.steps > 0,
        summary=os.path.relpath(target, run.path),
    )
    append_record(run, record)
    return record, summary


def _finished_run(run_path: str | os.PathLike[str]) -> Run:
    run = RunReader(run_path).read()
    if run.status == "running":
        raise TraceError(
            f"{run.path}: the run is still being written; summarise its profile when it has ended"
        )
    return run


def append_record(run: Run, record: TraceRecord) -> None:
    """Append one record to the chief's file of an ended run (``advisor.store.append``)."""
    try:
        append_line(run.path, record, rank=run.ranks[0] if run.ranks else 0)
    except RunFormatError as exc:
        raise TraceError(str(exc)) from None
