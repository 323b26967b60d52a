"""Store listings for interactive views: every run from its manifest at once, the rest per run.

``advisor runs`` derives every run before it prints; a terminal UI over a 1,000-run store cannot
wait for that. :func:`entries` lists the runs from their manifests alone (milliseconds), and
:func:`digest` adds one run's throughput, cost and top finding when the view asks for it, then
lets the store forget that run's records so a long listing stays small in memory.
:func:`resolve_target` says what a command-line argument names: a store, a run or a sweep.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from advisor.errors import AdvisorError, RunNotFoundError
from advisor.service.run_service import RunRow

if TYPE_CHECKING:
    from advisor.diagnosis.config import Config
    from advisor.diagnosis.report import Report
    from advisor.service.run_service import RunService


@dataclass(frozen=True)
class TopFinding:
    code: str
    name: str
    severity: str
    message: str


@dataclass(frozen=True)
class RunDigest:
    """What a listing shows of a run beyond its manifest (None where it was not measured)."""

    status: str
    samples_per_s: float | None = None
    samples_per_dollar: float | None = None
    top: TopFinding | None = None
    failures: int = 0
    error: str | None = None  # the run could not be read or diagnosed: why, in one line


def entries(store: RunService) -> list[RunRow]:
    """Every run of the store from its manifest, oldest first; unreadable ones with their reason."""
    from advisor.store.reader import RunReader
    from advisor.store.status import manifest_state

    now = time.time()
    rows = []
    for path in store.run_dirs():
        manifest = store.manifest(path)
        if manifest is None:
            try:
                RunReader(path).read_manifest()
                reason = f"{path}: unreadable manifest"
            except AdvisorError as exc:
                reason = str(exc)
            rows.append(RunRow.unreadable(path, reason))
            continue
        rows.append(RunRow.of(path, manifest, manifest_state(manifest, now)))
    return rows


def digest(
    store: RunService, path: str | os.PathLike[str], config: Config | None = None
) -> RunDigest:
    """A run's throughput, cost and top finding (read, derived and diagnosed once, then
    forgotten)."""
    try:
        report = store.diagnose(path, config)
    except AdvisorError as exc:
        return RunDigest(status="unreadable", error=str(exc))
    finally:
        store.forget(path)
    return digest_of(report)


def digest_of(report: Report) -> RunDigest:
    failures = report.failures
    # The top finding is the costliest warning or error: an info (no price given, no profile
    # captured) is worth a count, not the column every run would show.
    serious = report.failing("warning")
    top = serious[0] if serious else None
    return RunDigest(
        status=report.run.status or "unknown",
        samples_per_s=report.fact("throughput.samples_per_s"),
        samples_per_dollar=report.fact("cost.samples_per_dollar"),
        top=TopFinding(top.code, top.name, top.severity, top.message) if top else None,
        failures=len(failures),
    )


def run_status(path: str | os.PathLike[str]) -> str:
    """A run's status now (read afresh, from its records: end records, heartbeats): running,
    finished, failed, killed — or unreadable."""
    from advisor.store.reader import RunReader

    try:
        return RunReader(path).read().status
    except AdvisorError:
        return "unreadable"


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What an argument names: the store, one run (``ref`` = its directory) or a sweep (its id)."""

    kind: Literal["store", "run", "sweep"]
    runs_dir: Path
    ref: str | None = None


def resolve_target(arg: str | None, runs_dir: str | os.PathLike[str] | None = None) -> Target:
    """A runs directory, a run (directory, id, unique prefix, ``latest``) or a sweep (directory,
    id, unique prefix). Exact ids win over prefixes; a sweep id over a run id."""
    from advisor.store.paths import resolve_runs_dir
    from advisor.store.run_refs import pick_by_name, resolve_run
    from advisor.store.scan import list_run_dirs
    from advisor.store.schema import MANIFEST_NAME
    from advisor.store.sweep import SWEEP_FILE, SWEEPS_DIR, list_sweeps, read_sweep

    root = resolve_runs_dir(runs_dir)
    if arg is None or arg == "":
        return Target("store", root)
    path = Path(arg).expanduser()
    if path.is_dir():
        if (path / MANIFEST_NAME).is_file():
            return Target("run", path.parent, str(path))
        if (path / SWEEP_FILE).is_file():
            store = path.parent.parent if path.parent.name == SWEEPS_DIR else path.parent
            return Target("sweep", store, read_sweep(path).sweep_id)
        return Target("store", path)
    sweeps = {p.name: p for p in list_sweeps(root)}
    labelled = {m for m in _manifest_sweep_ids(root)}
    if arg in sweeps or arg in labelled:
        return Target("sweep", root, arg)
    runs = list_run_dirs(root)
    if arg in {p.name for p in runs} or arg in ("latest", "last"):
        return Target("run", root, str(resolve_run(arg, root)))
    matches = [p for p in runs if p.name.startswith(arg) or arg in p.name]
    if len(matches) > 1:  # ambiguous: say which runs it matches
        pick_by_name(runs, arg, "run", root, "")
    if matches:
        return Target("run", root, str(matches[0]))
    try:
        found = pick_by_name(list(sweeps.values()), arg, "sweep", root, "")
    except RunNotFoundError as exc:
        if list(sweeps.values()) and "matches" in str(exc):
            raise
        raise RunNotFoundError(
            f"{arg!r} is neither a runs directory nor a run or sweep in {root} (see `advisor runs`)"
        ) from None
    return Target("sweep", root, found.name)


def _manifest_sweep_ids(root: Path) -> set[str]:
    """Sweep ids that runs carry without a sweep file (a sweep made by hand)."""
    from advisor.service.run_service import RunService

    store = RunService(root)
    return {
        m.sweep_id for p in store.run_dirs() if (m := store.manifest(p)) is not None and m.sweep_id
    }
