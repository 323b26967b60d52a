"""RunWriter: the training side of the run directory.

Each record is written and flushed to the OS as one line when it is produced, so a job killed
with SIGKILL keeps everything up to its last record; ``sync()`` (epoch end, close) also fsyncs.
Writes are serialised with a lock because samplers write from their own threads.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from advisor.errors import UsageError
from advisor.store.paths import resolve_runs_dir
from advisor.store.schema import (
    MANIFEST_NAME,
    RUN_ID_RE,
    TRACES_DIR,
    EndRecord,
    Manifest,
    Record,
    StartRecord,
    worker_file_name,
)


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


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Write JSON to a temporary file beside ``path``, fsync it, then rename over ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


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
        self.run_id = run_id or os.environ.get("ADVISOR_RUN_ID") or new_run_id(name)
        if not RUN_ID_RE.match(self.run_id):
            raise UsageError(
                f"run id {self.run_id!r} is not safe as a directory name "
                "(letters, digits, '.', '_' and '-', at most 128 characters)"
            )
        self.rank = rank
        self.path = self.runs_dir / self.run_id
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / TRACES_DIR).mkdir(exist_ok=True)
        self._lock = threading.Lock()
        self._closed = False
        # Called with every record after it is written (e.g. to log metrics elsewhere); each must
        # be quick and thread-safe (a queue put): samplers write from their own threads.
        self.listeners: list[Callable[[Record], None]] = []
        self._manifest: Manifest | None = None
        if self.is_chief:
            now = time.time()
            fields: dict[str, Any] = {
                "run_id": self.run_id,
                "created": now,
                "updated": now,
                "pid": os.getpid(),
                "hostname": socket.gethostname(),
                "name": name,
            }
            fields.update(manifest or {})
            self._manifest = Manifest.model_validate(fields)
            self._write_manifest()
        self._fh: IO[str] = open(self.path / worker_file_name(rank), "a", encoding="utf-8")
        self.write(StartRecord(t=time.time(), rank=rank, pid=os.getpid(), hostname=socket.gethostname()))

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def manifest(self) -> Manifest | None:
        return self._manifest

    def write(self, record: Record | dict[str, Any]) -> None:
        """Append one record as one line and hand it to the OS at once."""
        if isinstance(record, Record):
            payload = record.model_dump(mode="json", exclude_none=True)
        else:
            payload = dict(record)
            payload.setdefault("t", time.time())
        line = json.dumps(payload, separators=(",", ":"), default=_json_default) + "\n"
        with self._lock:
            if self._closed:
                return
            self._fh.write(line)
            self._fh.flush()
        if self.listeners and isinstance(record, Record):
            for listener in list(self.listeners):
                try:
                    listener(record)
                except Exception:  # a listener never breaks the record file
                    self.listeners.remove(listener)

    def sync(self) -> None:
        """Flush and fsync the worker file (epoch ends, close)."""
        with self._lock:
            if self._closed:
                return
            self._fh.flush()
            os.fsync(self._fh.fileno())

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
        """Write the end record, mark the manifest, close the file. Safe to call twice."""
        if self._closed:
            return
        now = time.time()
        self.write(EndRecord(t=now, status="failed" if status == "failed" else "finished", **end_fields))
        self.sync()
        with self._lock:
            self._closed = True
            self._fh.close()
        if self.is_chief:
            self.update_manifest(status=status, ended=now)

    def _write_manifest(self) -> None:
        assert self._manifest is not None
        with self._lock:
            write_json_atomic(self.path / MANIFEST_NAME, self._manifest.model_dump(mode="json"))


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
