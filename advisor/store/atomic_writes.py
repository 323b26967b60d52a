"""Low-level writing for the store: whole-line appends that never leave a torn line behind,
and atomic JSON files. Every byte goes through :func:`_write`, the one place where tests inject
faults (ENOSPC, EROFS, EIO) exactly as the operating system would raise them."""

from __future__ import annotations

import json
import math
import os
import secrets
from pathlib import Path
from typing import Any

_write = os.write  # the fault-injection point: tests replace it to simulate a full disk


def write_all(fd: int, data: bytes) -> int:
    """Write every byte of ``data``; returns the number written before an OSError (re-raised
    with ``.written`` set)."""
    view = memoryview(data)
    done = 0
    while done < len(data):
        try:
            n = _write(fd, view[done:])
        except OSError as exc:
            exc.written = done  # type: ignore[attr-defined]
            raise
        if n <= 0:
            err = OSError(f"write returned {n}")
            err.written = done  # type: ignore[attr-defined]
            raise err
        done += n
    return done


class RecordFile:
    """One worker's append-only JSONL file. Each line reaches the OS in one go; a write cut
    short (a full disk, a store turned read-only) is rolled back to the last whole line, so
    a later successful write never lands after half a record."""

    def __init__(self, path: Path, *, exclusive: bool = False) -> None:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        if exclusive:
            flags |= os.O_EXCL
        self.path = path
        self.fd = os.open(path, flags, 0o644)
        self.size = os.fstat(self.fd).st_size

    def append(self, data: bytes) -> None:
        try:
            write_all(self.fd, data)
        except OSError as exc:
            if getattr(exc, "written", 0):
                try:
                    os.ftruncate(self.fd, self.size)
                except OSError:
                    pass
            raise
        self.size += len(data)

    def sync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def dumps_line(payload: dict[str, Any], default: Any = None) -> bytes:
    """One record as one line of strict JSON: non-finite floats are written as ``null``."""
    try:
        text = json.dumps(payload, separators=(",", ":"), default=default, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(payload), separators=(",", ":"), default=default)
    return (text + "\n").encode("utf-8", "surrogatepass")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Write JSON to a temporary file beside ``path``, fsync it, then rename over ``path``.

    On any error the temporary file is removed: a full disk leaves the old file, not a stray
    half-written one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    text = json.dumps(_finite(payload), indent=2, sort_keys=True) + "\n"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        try:
            write_all(fd, text.encode("utf-8", "surrogatepass"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
