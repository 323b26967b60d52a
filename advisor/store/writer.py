"""RunWriter: the training side of the run directory.

Each record is one line handed to the OS as soon as it is produced (no buffer to lose), so a job
killed with SIGKILL keeps everything up to its last record; ``sync()`` (close) also fsyncs.
Writes are serialised with a lock because samplers write from their own threads.

The writer loses nothing it could keep and never stops training: a write that fails (a full
disk, a store made read-only) drops that record, warns once per kind of fault, and later
records — the end record above all — are still tried. A writer that has been quiet for
``HEARTBEAT_S`` writes a heartbeat record, which is how readers anywhere tell a live run from a
killed one. A run id that another job already uses for this rank (``ADVISOR_RUN_ID`` set twice)
is never merged into: this job becomes a new attempt, ``<run_id>.2``.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import socket
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from advisor.errors import UsageError
from advisor.store.atomic_writes import RecordFile, dumps_line, write_json_atomic
from advisor.store.paths import resolve_runs_dir
from advisor.store.redact import redact_payload, redact_value
from advisor.store.schema import (
    MANIFEST_NAME,
    RUN_ID_RE,
    TRACES_DIR,
    EndRecord,
    HeartbeatRecord,
    Manifest,
    Record,
    StartRecord,
    worker_file_name,
)
from advisor.store.status import HEARTBEAT_S, local_scope

__all__ = ["RunWriter", "new_run_id", "write_json_atomic"]

log = logging.getLogger("advisor")

MAX_ATTEMPTS = 100

# The status an end record says, by the status the run is closed with (else "finished").
_END_STATUS: dict[str, Literal["finished", "failed", "terminated"]] = {
    "failed": "failed",
    "terminated": "terminated",
}


def new_run_id(name: str | None = None, now: float | None = None) -> str:
    """A unique id that is safe as a directory name: ``20261129-223324-<name>-<hex>``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now if now is not None else time.time()))
    parts = [stamp]
    if name:
        slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in name.strip())[:40].strip("-")
        if slug:
            parts.append(slug)
    parts.append(secrets.token_hex(3))
    return "-".join(parts)


def attempt_id(run_id: str, attempt: int) -> str:
    """The id of the ``attempt``-th job that asked for ``run_id`` (1: the id itself)."""
    if attempt == 1:
        return run_id
    suffix = f".{attempt}"
    return run_id[: 128 - len(suffix)] + suffix


class RunWriter:
    """Writes one worker's records of one run, and (on the chief) the manifest."""

    def __init__(
        self,
        runs_dir: str | os.PathLike[str] | None = None,
        run_id: str | None = None,
        *,
        rank: int = 0,
        manifest: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        self.runs_dir = resolve_runs_dir(runs_dir)
        requested = run_id or os.environ.get("ADVISOR_RUN_ID")
        base = requested or new_run_id(name)
        if not RUN_ID_RE.match(base):
            raise UsageError(
                f"run id {base!r} is not safe as a directory name "
                "(letters, digits, '.', '_' and '-', at most 128 characters)"
            )
        self.rank = rank
        self.dropped_records = 0
        self.end_lost: str | None = None  # why the end record could not be written (close)
        self._faults: dict[int, int] = {}  # errno → how many times
        self._lock = threading.Lock()
        self._closed = False
        self._listeners: list[Callable[[Record], None]] = []
        self._manifest: Manifest | None = None
        self._wrote_manifest = False
        from_env = run_id is None and requested is not None
        self.run_id, self.path, self._file = self._claim(base, requested is not None, from_env)
        try:
            (self.path / TRACES_DIR).mkdir(exist_ok=True)
            if self.is_chief:
                now = time.time()
                fields: dict[str, Any] = {
                    "run_id": self.run_id,
                    "created": now,
                    "updated": now,
                    "pid": os.getpid(),
                    "hostname": socket.gethostname(),
                    "scope": local_scope(),
                    "name": name,
                }
                fields.update(manifest or {})
                fields["run_id"] = self.run_id
                self._manifest = Manifest.model_validate(fields)
                self._save_manifest()
                self._wrote_manifest = True
            start = StartRecord(
                t=time.time(),
                rank=rank,
                pid=os.getpid(),
                hostname=socket.gethostname(),
                scope=local_scope(),
                node=os.environ.get("ADVISOR_NODE") or os.environ.get("SLURMD_NODENAME"),
            )
            self._file.append(dumps_line(start.model_dump(mode="json", exclude_none=True)))
        except BaseException:
            self._abandon()
            raise
        self._last_write = time.monotonic()
        _HEARTBEAT.add(self)

    def _claim(self, base: str, requested: bool, from_env: bool) -> tuple[str, Path, RecordFile]:
        """Create this rank's record file in a directory no other job writes this rank to."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            run_id = attempt_id(base, attempt)
            path = self.runs_dir / run_id
            path.mkdir(parents=True, exist_ok=True)
            try:
                record_file = RecordFile(path / worker_file_name(self.rank), exclusive=True)
            except FileExistsError:
                continue
            except OSError:
                _remove_empty(path)
                raise
            if attempt > 1:
                why = "ADVISOR_RUN_ID set twice?" if from_env else "the same run id given twice?"
                log.warning(
                    "advisor: run %s already has records of worker %d from another job (%s); "
                    "this job is recorded as run %s instead of merging into it",
                    base,
                    self.rank,
                    why,
                    run_id,
                )
            return run_id, path, record_file
        raise UsageError(f"run id {base!r}: {MAX_ATTEMPTS} attempts already exist; choose a new id")

    def _abandon(self) -> None:
        """Undo a start that could not complete: no half-made run is left to look like a run.
        Only what this writer made is removed (another worker may share the directory)."""
        self._closed = True
        self._file.close()
        mine = [self._file.path] + ([self.path / MANIFEST_NAME] if self._wrote_manifest else [])
        for file in mine:
            try:
                os.unlink(file)
            except OSError:
                pass
        _remove_empty(self.path / TRACES_DIR)
        _remove_empty(self.path)

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def manifest(self) -> Manifest | None:
        return self._manifest

    def add_listener(self, listener: Callable[[Record], None]) -> None:
        """Call ``listener(record)`` after each typed record is written (from the writing thread).

        For publishers that mirror records elsewhere (CloudWatch): a listener must only queue the
        record; one that raises is removed, the record stays written.
        """
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[Record], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def write(self, record: Record | dict[str, Any]) -> None:
        """Append one record as one line and hand it to the OS at once.

        A write error drops the record and is reported once per kind; it never raises."""
        if isinstance(record, Record):
            payload = record.model_dump(mode="json", exclude_none=True)
        else:
            payload = dict(record)
            payload.setdefault("t", time.time())
        payload = redact_payload(payload)  # a run directory is shared: no secret quoted in its text
        line = dumps_line(payload, _json_default)
        with self._lock:
            if self._closed:
                return
            try:
                self._file.append(line)
            except OSError as exc:
                self.dropped_records += 1
                self._fault("records", exc)
                return
            self._last_write = time.monotonic()
        if self._listeners and isinstance(record, Record):
            for listener in list(self._listeners):
                try:
                    listener(record)
                except Exception:
                    self._listeners.remove(listener)

    def heartbeat(self) -> None:
        """Write a heartbeat record when nothing was written for ``HEARTBEAT_S`` seconds."""
        if not self._closed and time.monotonic() - self._last_write >= HEARTBEAT_S:
            self.write(HeartbeatRecord(t=time.time()))

    def sync(self) -> None:
        """fsync the worker file (close)."""
        with self._lock:
            if self._closed:
                return
            try:
                self._file.sync()
            except OSError as exc:
                self._fault("records", exc)

    def update_manifest(self, **fields: Any) -> None:
        """Merge fields into the manifest and replace ``run.json`` atomically (chief only)."""
        if self._manifest is None:
            return
        data = self._manifest.model_dump(mode="python")
        for key, value in fields.items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key] = {**data[key], **value}
            else:
                data[key] = value
        data["updated"] = time.time()
        self._manifest = Manifest.model_validate(data)
        self._write_manifest()

    def close(self, status: str = "finished", **end_fields: Any) -> None:
        """Write the end record, mark the manifest, close the file. Safe to call twice.

        The end record is tried even after earlier write errors: where space allows, a run
        that finished reads as finished."""
        if self._closed:
            return
        now = time.time()
        dropped = self.dropped_records or None
        faults_before = dict(self._faults)
        self.write(
            EndRecord(
                t=now,
                status=_END_STATUS.get(status, "finished"),
                dropped_records=dropped,
                **end_fields,
            )
        )
        if self.dropped_records > (dropped or 0):
            code = next((c for c, n in self._faults.items() if n > faults_before.get(c, 0)), 0)
            self.end_lost = os.strerror(code) if code else "write error"
        self.sync()
        with self._lock:
            self._closed = True
            self._file.close()
        _HEARTBEAT.discard(self)
        if self.is_chief:
            extra: dict[str, Any] = (
                {"dropped_records": self.dropped_records} if self.dropped_records else {}
            )
            if self.end_lost:  # the manifest may still be writable: the reader then knows why
                extra["end_record_lost"] = self.end_lost
            if end_fields.get("signal"):
                extra["signal"] = end_fields["signal"]
            self.update_manifest(status=status, ended=now, **extra)

    def _write_manifest(self) -> None:
        assert self._manifest is not None
        with self._lock:
            try:
                self._save_manifest()
            except OSError as exc:
                self._fault("the manifest", exc)

    def _save_manifest(self) -> None:
        """Write the manifest atomically, the user's labels and options redacted (a URL in them
        may carry credentials)."""
        assert self._manifest is not None
        manifest = self._manifest.model_dump(mode="json")
        for key in ("tags", "config"):
            manifest[key] = redact_value(manifest.get(key) or {})
        write_json_atomic(self.path / MANIFEST_NAME, manifest)

    def _fault(self, what: str, exc: OSError) -> None:
        """Count a write error; warn on the first of its kind in this run only."""
        code = exc.errno or 0
        self._faults[code] = self._faults.get(code, 0) + 1
        if self._faults[code] == 1:
            reason = os.strerror(code) if code else str(exc)
            hint = " (disk full?)" if code == errno.ENOSPC else ""
            log.warning(
                "advisor: cannot write %s of run %s: %s%s; training goes on, and records are "
                "kept again once writing works (warned once)",
                what,
                self.run_id,
                reason,
                hint,
            )


def _remove_empty(folder: Path) -> None:
    try:
        folder.rmdir()  # only when empty: never anything another writer made
    except OSError:
        pass


class _Heartbeats:
    """One daemon thread for every open writer of the process."""

    def __init__(self) -> None:
        self._writers: weakref.WeakSet[RunWriter] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, writer: RunWriter) -> None:
        with self._lock:
            self._writers.add(writer)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="advisor-heartbeat", daemon=True
                )
                self._thread.start()

    def discard(self, writer: RunWriter) -> None:
        with self._lock:
            self._writers.discard(writer)

    def _loop(self) -> None:
        while True:
            time.sleep(HEARTBEAT_S / 3)
            with self._lock:
                writers = list(self._writers)
            for writer in writers:
                try:
                    writer.heartbeat()
                except Exception as exc:  # noqa: BLE001 — a heartbeat must never take anything down
                    log.debug("advisor: heartbeat of run %s failed: %s", writer.run_id, exc)


_HEARTBEAT = _Heartbeats()


def _json_default(value: Any) -> Any:
    """numpy scalars and arrays, paths and sets in records."""
    if hasattr(value, "item") and callable(value.item):
        try:
            return value.item()
        except (ValueError, TypeError):
            pass
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
