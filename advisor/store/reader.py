"""RunReader: the analysis side of the run directory.

Tolerant and bounded: every file is read within the limits of :mod:`advisor.store.limits`
(regular files only, sizes, line lengths, nesting, number ranges). A file or a line that cannot
be read is skipped and reported with its reason (``Run.problems``) while the rest of the run is
read; a truncated last line — what a killed writer leaves — is skipped and counted
(``Run.warnings``). What parses but cannot be true — a negative count, a clock that jumps
back, a repeated line, worker files the manifest does not know, a record that must be there and
is not (:mod:`advisor.store.validate`) — is skipped or said the same way. A run with problems is
incomplete, never silently misread: ``advisor check`` exits 3 on it. Only the manifest is essential: without a readable one there is no run.
The status comes from the records (see :mod:`advisor.store.status`).
"""

from __future__ import annotations

import contextlib
import gc
import math
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
    iter_lines,
    parse_json,
    plain,
    read_limited,
)
from advisor.store.paths import resolve_runs_dir
from advisor.store.scan import list_run_dirs, scan_store  # noqa: F401 — read from here too
from advisor.store.schema import (
    MANIFEST_NAME,
    RECORD_TYPES,
    SCHEMA_VERSION,
    WORKER_FILE_RE,
    Manifest,
    Record,
    Status,
    TraceRecord,
    worker_file_name,
)
from advisor.store.status import WorkerState, derive_status, incomplete_reasons
from advisor.store.trace_summary import TraceSummary, load_summary
from advisor.store.validate import (
    WorkerOrder,
    absent_workers,
    checked_manifest,
    missing_at_the_edges,
    missing_ends,
    missing_records,
    record_doubt,
)

R = TypeVar("R", bound=Record)

# Bad lines reported one by one per file; beyond this only their number.
MAX_REPORTED_LINES = 3


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
        """Records of one type from the chief (the lowest rank present): what the job reports once."""
        ranks = self.ranks
        return self.of_type(cls, rank=ranks[0] if ranks else None)

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

    def read_manifest(self) -> Manifest:
        manifest_path = self.path / MANIFEST_NAME
        if not self.path.is_dir():
            raise RunNotFoundError(f"{self.path}: no such run directory")
        if not os.path.lexists(manifest_path):
            raise RunFormatError(f"{manifest_path}: missing manifest (not a run directory?)")
        try:
            data = parse_json(read_limited(manifest_path, MAX_MANIFEST_BYTES))
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
                f"{manifest_path}: invalid manifest ({_first_error(exc)})"
            ) from None

    def read(self, now: float | None = None) -> Run:
        manifest = self.read_manifest()
        records: dict[int, list[Record]] = {}
        warnings: list[str] = []
        problems: list[str] = []
        unknown = torn = 0
        manifest, doubts, notes = checked_manifest(manifest)
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
            part = _read_worker_file(file)
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
    cannot be read, or that points outside the run, is a warning."""
    summaries: dict[str, TraceSummary] = {}
    for rank in run.ranks:
        for record in run.records[rank]:
            if (
                not isinstance(record, TraceRecord)
                or not record.summary
                or record.summary in summaries
            ):
                continue
            try:
                summaries[record.summary] = load_summary(run.resolve(record.summary))
            except (TraceError, RunFormatError) as exc:
                run.warnings.append(str(exc))
    return summaries


@dataclass
class _FilePart:
    records: list[Record] = field(default_factory=list)
    unknown: int = 0
    torn: int = 0
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while records are built: a week-long run creates
    hundreds of thousands of objects without cycles, and each collection would walk them all."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _read_worker_file(file: Path) -> _FilePart:
    """The records of one worker file; bad lines are skipped and reported, never fatal."""
    with _gc_paused():
        return _read_lines(file)


def _read_lines(file: Path) -> _FilePart:
    part = _FilePart()
    order = WorkerOrder()
    bad = 0
    try:
        for number, line, complete in iter_lines(file):
            if line is None:
                reason = "longer than the line limit"
            elif not line.strip():
                continue
            else:
                try:
                    record = parse_line(line)
                except BadInput as exc:
                    reason = str(exc)
                else:
                    if record is None:
                        part.unknown += 1
                        continue
                    doubt = record_doubt(record) or order.doubt(record, line, number)
                    if doubt is None:
                        part.records.append(record)
                        continue
                    reason = f"{record.type} record: {doubt}"
            if not complete:
                part.torn += 1
                part.warnings.append(f"{file.name}:{number}: truncated last line ignored")
                continue
            bad += 1
            if bad <= MAX_REPORTED_LINES:
                part.problems.append(f"{file.name}:{number}: {reason}; line skipped")
    except OSError as exc:
        part.problems.append(
            f"{file.name}: cannot read ({describe_os_error(exc)}); records missing"
        )
    except BadInput as exc:
        part.problems.append(f"{file.name}: {exc}; records missing")
    if bad > MAX_REPORTED_LINES:
        part.problems.append(f"{file.name}: {bad - MAX_REPORTED_LINES} more bad lines skipped")
    if not part.problems:  # a skipped line already explains a gap it leaves
        part.problems.extend(f"{file.name}: {missing}" for missing in missing_records(part.records))
    return part


_FAST: list[Any] = []


def _fast_parser() -> Any:
    """One validator for every known record type, straight from JSON bytes (pydantic-core)."""
    if not _FAST:
        from typing import Annotated, Union

        from pydantic import Field, TypeAdapter

        union: Any = Union[tuple(RECORD_TYPES.values())]  # noqa: UP007 — built from the table
        _FAST.append(TypeAdapter(Annotated[union, Field(discriminator="type")]))
    return _FAST[0]


def parse_line(line: bytes) -> Record | None:
    """One record, None for an unknown type; :class:`BadInput` with the reason otherwise.

    A line that cannot break a limit is validated straight from its bytes (3x faster, which
    matters on week-long runs); anything else, or anything that fails there, takes the careful
    path that says why."""
    if plain(line):
        try:
            record: Record = _fast_parser().validate_json(line, strict=True)
        except ValidationError:
            pass  # an unknown type or an invalid record: the careful path tells which
        else:
            return record
    try:
        payload = parse_json(line)
    except BadInput as exc:
        raise BadInput(f"not a JSON record ({exc})") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        raise BadInput("a record must be a JSON object with a 'type'")
    cls = RECORD_TYPES.get(payload["type"])
    if cls is None:
        return None
    try:
        return cls.model_validate(payload, strict=True)
    except ValidationError as exc:
        raise BadInput(f"invalid {payload['type']!r} record ({_first_error(exc)})") from None


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "record"
    return f"{where}: {err.get('msg', 'invalid')}"


# ---------------------------------------------------------------------------------------------
# The store: many runs under one directory


def resolve_run(ref: str | None, runs_dir: str | os.PathLike[str] | None = None) -> Path:
    """A run from a path, a run id, a unique id prefix, or ``latest`` (also when ``ref`` is None)."""
    if ref and Path(ref).is_dir() and (Path(ref) / MANIFEST_NAME).exists():
        return Path(ref)
    root = resolve_runs_dir(runs_dir)
    runs = list_run_dirs(root)
    if ref in (None, "", "latest", "last"):
        if not runs:
            raise RunNotFoundError(f"{root}: no runs in this store")
        return max(runs, key=_created)
    assert ref is not None
    if Path(ref).is_dir():
        raise RunFormatError(f"{ref}: missing manifest {MANIFEST_NAME} (not a run directory?)")
    return pick_by_name(runs, ref, "run", root, "see `advisor runs`")


def pick_by_name(paths: list[Path], ref: str, kind: str, where: Path, hint: str) -> Path:
    """The one path whose name is ``ref``, else the only one that starts with or contains it."""
    exact = [p for p in paths if p.name == ref]
    if exact:
        return exact[0]
    matches = [p for p in paths if p.name.startswith(ref) or ref in p.name]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise RunNotFoundError(f"no {kind} {ref!r} in {where} ({hint})")
    names = ", ".join(p.name for p in matches[:5])
    raise RunNotFoundError(f"{ref!r} matches {len(matches)} {kind}s in {where}: {names}")


def _created(path: Path) -> tuple[float, str]:
    try:
        created = float(
            parse_json(read_limited(path / MANIFEST_NAME, MAX_MANIFEST_BYTES)).get("created", 0.0)
        )
    except (OSError, ValueError, TypeError, AttributeError, OverflowError):
        created = 0.0
    return (created if math.isfinite(created) else 0.0), path.name


def read_run(ref: str | None = None, runs_dir: str | os.PathLike[str] | None = None) -> Run:
    return RunReader(resolve_run(ref, runs_dir)).read()
