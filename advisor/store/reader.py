"""RunReader: the analysis side of the run directory.

Tolerant where a killed job can leave damage (a truncated last line, record types from a newer
writer of the same schema version), strict everywhere else: a malformed line in the middle of a
file or a newer schema version is an error naming the file, never a silently wrong diagnosis.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from advisor.errors import RunFormatError, RunNotFoundError, SchemaVersionError, TraceError
from advisor.store.paths import resolve_runs_dir
from advisor.store.schema import (
    MANIFEST_NAME,
    RECORD_TYPES,
    SCHEMA_VERSION,
    WORKER_FILE_RE,
    Manifest,
    Record,
    Status,
    TraceRecord,
)
from advisor.store.trace_summary import TraceSummary, load_summary

R = TypeVar("R", bound=Record)

# A run whose writer is on another host and silent for this long is taken as killed.
STALE_AFTER_S = 30 * 60


@dataclass
class Run:
    """One run read back: manifest, records per worker, inferred status, read warnings."""

    path: Path
    manifest: Manifest
    records: dict[int, list[Record]]
    status: Status
    warnings: list[str] = field(default_factory=list)
    unknown_records: int = 0
    trace_summaries: dict[str, TraceSummary] = field(default_factory=dict)  # by the record's path

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @property
    def ranks(self) -> list[int]:
        return sorted(self.records)

    def of_type(self, cls: type[R], rank: int | None = None) -> list[R]:
        """Records of one type, from one worker or (``rank=None``) all workers in rank order."""
        ranks = [rank] if rank is not None else self.ranks
        return [r for k in ranks for r in self.records.get(k, []) if isinstance(r, cls)]

    def all_records(self) -> Iterator[tuple[int, Record]]:
        for rank in self.ranks:
            for record in self.records[rank]:
                yield rank, record


class RunReader:
    """Reads one run directory. ``RunReader(path).read()`` returns a :class:`Run`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def read_manifest(self) -> Manifest:
        manifest_path = self.path / MANIFEST_NAME
        if not self.path.is_dir():
            raise RunNotFoundError(f"{self.path}: no such run directory")
        if not manifest_path.is_file():
            raise RunFormatError(f"{manifest_path}: missing manifest (not a run directory?)")
        try:
            data = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RunFormatError(f"{manifest_path}: unreadable manifest ({_short(exc)})") from None
        if not isinstance(data, dict):
            raise RunFormatError(f"{manifest_path}: the manifest is not a JSON object")
        version = data.get("schema_version")
        if not isinstance(version, int):
            raise RunFormatError(f"{manifest_path}: schema_version missing or not an integer")
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{manifest_path}: written with schema version {version}, this advisor reads up to "
                f"{SCHEMA_VERSION}; upgrade advisor to read it"
            )
        try:
            return Manifest.model_validate(data)
        except ValidationError as exc:
            raise RunFormatError(f"{manifest_path}: invalid manifest ({_first_error(exc)})") from None

    def read(self) -> Run:
        manifest = self.read_manifest()
        records: dict[int, list[Record]] = {}
        warnings: list[str] = []
        unknown = 0
        for file in sorted(self.path.iterdir()):
            match = WORKER_FILE_RE.match(file.name)
            if not match:
                continue
            parsed, file_unknown, file_warnings = _read_worker_file(file)
            records[int(match.group(1))] = parsed
            unknown += file_unknown
            warnings.extend(file_warnings)
        status = infer_status(manifest, self.path, records)
        summaries = _read_trace_summaries(self.path, records, warnings)
        return Run(self.path, manifest, records, status, warnings, unknown, summaries)


def _read_trace_summaries(path: Path, records: dict[int, list[Record]], warnings: list[str]
                          ) -> dict[str, TraceSummary]:
    """The trace summaries named by the run's trace records (each read once, kept in the run)."""
    summaries: dict[str, TraceSummary] = {}
    for rank in sorted(records):
        for record in records[rank]:
            if not isinstance(record, TraceRecord) or not record.summary or record.summary in summaries:
                continue
            try:
                summaries[record.summary] = load_summary(inside(path, record.summary))
            except (TraceError, RunFormatError) as exc:
                warnings.append(str(exc))
    return summaries


def inside(run_path: Path, relative: str) -> Path:
    """``run_path / relative``, refused when it would leave the run directory (``..``, absolute)."""
    root = run_path.resolve()
    target = (root / relative).resolve()
    if target != root and root not in target.parents:
        raise RunFormatError(f"{run_path}: path {relative!r} in a record points outside the run directory")
    return target


def _read_worker_file(file: Path) -> tuple[list[Record], int, list[str]]:
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise RunFormatError(f"{file}: cannot read ({_short(exc)})") from None
    lines = raw.split(b"\n")
    # A file that ends in "\n" splits into [..., b""]; otherwise the last piece is truncated.
    truncated_tail = lines.pop() if lines else b""
    records: list[Record] = []
    unknown = 0
    warnings: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record = _parse_line(file, number, line)
        if record is None:
            unknown += 1
        else:
            records.append(record)
    if truncated_tail.strip():
        try:
            record = _parse_line(file, len(lines) + 1, truncated_tail)
        except RunFormatError:
            warnings.append(f"{file.name}:{len(lines) + 1}: truncated last line ignored")
        else:
            if record is not None:
                records.append(record)
    return records, unknown, warnings


def _parse_line(file: Path, number: int, line: bytes) -> Record | None:
    try:
        payload = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RunFormatError(f"{file}:{number}: not a JSON record") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        raise RunFormatError(f"{file}:{number}: a record must be a JSON object with a 'type'")
    cls = RECORD_TYPES.get(payload["type"])
    if cls is None:
        return None
    try:
        return cls.model_validate(payload)
    except ValidationError as exc:
        raise RunFormatError(
            f"{file}:{number}: invalid {payload['type']!r} record ({_first_error(exc)})"
        ) from None


def infer_status(manifest: Manifest, path: Path, records: dict[int, list[Record]]) -> Status:
    """finished / failed as written; a 'running' run whose writer is gone is 'killed'."""
    if manifest.status != "running":
        return manifest.status
    if manifest.hostname and manifest.hostname == socket.gethostname() and manifest.pid:
        return "running" if _pid_alive(manifest.pid) else "killed"
    last = max((f.stat().st_mtime for f in path.iterdir() if f.is_file()), default=manifest.created)
    return "killed" if time.time() - last > STALE_AFTER_S else "running"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped) still answers kill(0); it is not running.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "record"
    return f"{where}: {err.get('msg', 'invalid')}"


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


# ---------------------------------------------------------------------------------------------
# The store: many runs under one directory


def list_run_dirs(runs_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Run directories under the store, oldest first (by manifest ``created``, then name)."""
    root = resolve_runs_dir(runs_dir)
    if not root.is_dir():
        return []
    dirs = [p for p in root.iterdir() if p.is_dir() and (p / MANIFEST_NAME).is_file()]
    return sorted(dirs, key=lambda p: ((p / MANIFEST_NAME).stat().st_mtime, p.name))


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
        created = float(json.loads((path / MANIFEST_NAME).read_text()).get("created", 0.0))
    except (OSError, ValueError, TypeError, AttributeError):
        created = 0.0
    return created, path.name


def read_run(ref: str | None = None, runs_dir: str | os.PathLike[str] | None = None) -> Run:
    return RunReader(resolve_run(ref, runs_dir)).read()
