"""RunReader: the analysis side of the run directory.

Tolerant and bounded: every file is read within the limits of :mod:`advisor.store.limits`
(regular files only, sizes, line lengths, nesting, number ranges). A file or a line that cannot
be read is skipped and reported with its reason (``Run.problems``) while the rest of the run is
read; a truncated last line — what a killed writer leaves — is skipped and counted
(``Run.warnings``). What parses but cannot be true — a negative count, a clock that jumps
back, a repeated line, worker files the manifest does not know, a record that must be there and
is not (:mod:`advisor.store.validate`) — is skipped or said the same way. A run with problems is
incomplete, never silently misread: ``advisor check`` exits 3 on it. Only the manifest is
essential: without a readable one there is no run. The status comes from the records (see
:mod:`advisor.store.status`); each worker file is read by :mod:`advisor.store.worker_file`, and
:mod:`advisor.store.run_refs` finds a run in the store.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from advisor.errors import RunFormatError, RunNotFoundError, SchemaVersionError, TraceError
from advisor.store.limits import (
    MAX_MANIFEST_BYTES,
    MAX_WORKER_FILES,
    BadInput,
    describe_os_error,
    inside,
    parse_json,
    read_limited,
)
from advisor.store.ranges import RunBounds
from advisor.store.run_refs import resolve_run
from advisor.store.scan import list_run_dirs, scan_store  # noqa: F401 — read from here too
from advisor.store.schema import (
    MANIFEST_NAME,
    SCHEMA_VERSION,
    WORKER_FILE_RE,
    Manifest,
    Record,
    Status,
    TraceRecord,
    worker_file_name,
)
from advisor.store.status import WorkerState, derive_status, incomplete_reasons
from advisor.store.trace_summary import SummaryDoubt, TraceSummary, load_summary
from advisor.store.validate import (
    absent_workers,
    checked_manifest,
    missing_at_the_edges,
    missing_ends,
)
from advisor.store.worker_file import first_error, read_worker_file

R = TypeVar("R", bound=Record)


@dataclass
class Run:
    """One run read back: manifest, records per worker, derived status, what could not be read."""

    path: Path
    manifest: Manifest
    records: dict[int, list[Record]]
    status: Status
    warnings: list[str] = field(default_factory=list)
    unknown_records: int = 0
    problems: list[str] = field(default_factory=list)  # unreadable files and lines (data lost)
    workers: dict[int, WorkerState] = field(default_factory=dict)
    torn_lines: int = 0  # truncated last lines skipped
    trace_summaries: dict[str, TraceSummary] = field(default_factory=dict)  # by the record's path
    _index: dict[tuple[type, int | None], list[Any]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @property
    def ranks(self) -> list[int]:
        return sorted(self.records)

    @property
    def incomplete(self) -> list[str]:
        """Why this run cannot be judged (killed, running, failed, empty, a collector failed,
        unreadable data); empty when it is complete."""
        records = (r for _, r in self.all_records())
        imported = bool(self.manifest.config.get("imported_from"))  # e.g. a SageMaker job
        return incomplete_reasons(
            self.status, self.workers, records, self.problems, expects_throughput=not imported
        )

    def of_type(self, cls: type[R], rank: int | None = None) -> list[R]:
        """Records of one type, from one worker or (``rank=None``) all workers in rank order."""
        key = (cls, rank)
        found = self._index.get(key)
        if found is None:
            ranks = [rank] if rank is not None else self.ranks
            found = [r for k in ranks for r in self.records.get(k, []) if isinstance(r, cls)]
            self._index[key] = found
        return list(found)

    def chief_of_type(self, cls: type[R]) -> list[R]:
        """Records of one type from the chief (the lowest rank present): what the job reports
        once."""
        ranks = self.ranks
        return self.of_type(cls, rank=ranks[0] if ranks else None)

    def chief_last(self, cls: type[R]) -> R | None:
        """The chief's last record of one type (what the job reports once); None without one."""
        found = self.chief_of_type(cls)
        return found[-1] if found else None

    def all_records(self) -> Iterator[tuple[int, Record]]:
        for rank in self.ranks:
            for record in self.records[rank]:
                yield rank, record

    def resolve(self, relative: str) -> Path:
        """A path read from a record, resolved; an error if it leads outside the run directory."""
        try:
            return inside(self.path, relative)
        except BadInput as exc:
            raise RunFormatError(f"{self.path}: {exc}") from None


class RunReader:
    """Reads one run directory. ``RunReader(path).read()`` returns a :class:`Run`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._nonfinite: list[str] = []  # manifest fields whose NaN or Infinity read as missing

    def read_manifest(self) -> Manifest:
        manifest_path = self.path / MANIFEST_NAME
        if not self.path.is_dir():
            raise RunNotFoundError(f"{self.path}: no such run directory")
        if not os.path.lexists(manifest_path):
            raise RunFormatError(f"{manifest_path}: missing manifest (not a run directory?)")
        try:
            self._nonfinite = []
            data = parse_json(read_limited(manifest_path, MAX_MANIFEST_BYTES), self._nonfinite)
        except OSError as exc:
            raise RunFormatError(
                f"{manifest_path}: unreadable manifest ({describe_os_error(exc)})"
            ) from None
        except BadInput as exc:
            raise RunFormatError(f"{manifest_path}: unreadable manifest ({exc})") from None
        if not isinstance(data, dict):
            raise RunFormatError(f"{manifest_path}: the manifest is not a JSON object")
        version = data.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise RunFormatError(f"{manifest_path}: schema_version missing or not an integer")
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{manifest_path}: written with schema version {version}, this advisor reads up to "
                f"{SCHEMA_VERSION}; upgrade advisor to read it"
            )
        try:
            return Manifest.model_validate(data, strict=True)
        except ValidationError as exc:
            raise RunFormatError(
                f"{manifest_path}: invalid manifest ({first_error(exc)})"
            ) from None

    def read(self, now: float | None = None) -> Run:
        manifest = self.read_manifest()
        records: dict[int, list[Record]] = {}
        warnings: list[str] = []
        problems: list[str] = []
        unknown = torn = 0
        manifest, doubts, notes = checked_manifest(manifest, tuple(self._nonfinite))
        bounds = RunBounds.of(manifest, now)
        problems.extend(f"{MANIFEST_NAME}: {doubt}; read as unknown" for doubt in doubts)
        warnings.extend(f"{MANIFEST_NAME}: {note}" for note in notes)
        extra: list[str] = []
        found: set[int] = set()
        for file in self._worker_files(problems):
            rank = int(WORKER_FILE_RE.match(file.name).group(1))  # type: ignore[union-attr]
            found.add(rank)
            if rank >= manifest.num_workers:
                extra.append(file.name)
                continue
            part = read_worker_file(file, bounds)
            if part.records or not part.problems:  # an unreadable file is a problem, not a worker
                records[rank] = part.records
            unknown += part.unknown
            torn += part.torn
            warnings.extend(part.warnings)
            problems.extend(part.problems)
        if extra:
            problems.append(
                f"{len(extra)} worker files beyond the manifest's num_workers "
                f"({manifest.num_workers}), not read: {', '.join(extra[:3])}"
                f"{', …' if len(extra) > 3 else ''}"
            )
        problems.extend(absent_workers(manifest, found))
        status, workers = derive_status(manifest, records, now)
        problems.extend(missing_ends(manifest, records, workers))
        if not problems:  # what was skipped already explains what is missing
            chief = min(records, default=None)
            problems.extend(
                f"{worker_file_name(rank)}: {missing}"
                for rank, recs in records.items()
                for missing in missing_at_the_edges(manifest.config, recs, rank == chief)
            )
        run = Run(self.path, manifest, records, status, warnings, unknown, problems, workers, torn)
        run.trace_summaries = _read_trace_summaries(run)
        return run

    def _worker_files(self, problems: list[str]) -> list[Path]:
        try:
            names = sorted(e.name for e in os.scandir(self.path) if WORKER_FILE_RE.match(e.name))
        except OSError as exc:
            raise RunFormatError(
                f"{self.path}: cannot list the run ({describe_os_error(exc)})"
            ) from None
        if len(names) > MAX_WORKER_FILES:
            problems.append(
                f"{len(names)} worker files: only the first {MAX_WORKER_FILES} are read"
            )
            names = names[:MAX_WORKER_FILES]
        return [self.path / name for name in names]


def _read_trace_summaries(run: Run) -> dict[str, TraceSummary]:
    """The trace summaries the run's trace records name (read once, kept in the run); one that
    cannot be read, or that points outside the run, is a warning; one that holds a value that
    cannot be true is a problem (the run is not judgeable)."""
    summaries: dict[str, TraceSummary] = {}
    wall = RunBounds.of(run.manifest).wall_seconds
    for rank in run.ranks:
        for record in run.records[rank]:
            if (
                not isinstance(record, TraceRecord)
                or not record.summary
                or record.summary in summaries
            ):
                continue
            try:
                summaries[record.summary] = load_summary(run.resolve(record.summary), wall)
            except SummaryDoubt as exc:  # read, but cannot be true: the run is not judgeable
                run.problems.append(str(exc))
            except (TraceError, RunFormatError) as exc:
                run.warnings.append(str(exc))
    return summaries


def read_run(ref: str | None = None, runs_dir: str | os.PathLike[str] | None = None) -> Run:
    return RunReader(resolve_run(ref, runs_dir)).read()
