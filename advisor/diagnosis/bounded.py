"""Bounded reads of rule files and configuration: regular files only, at most a size limit.

A rule directory or a ``--config`` path can point anywhere; a FIFO must not hang the load and
``/dev/zero`` must not fill memory. Errors come back as the caller's error type, naming the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from advisor.errors import AdvisorError

MAX_RULE_FILE_BYTES = 1 << 20  # the shipped rule files are ~30 KB each
MAX_CONFIG_BYTES = 1 << 20


def read_text(path: Path, limit: int, error: type[AdvisorError]) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes, or ``error`` naming it."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError) as exc:
        raise error(f"{path}: cannot read ({_reason(exc)})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise error(f"{path}: not a regular file; refused")
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise error(f"{path}: cannot read ({_reason(exc)})") from None
    if len(data) > limit:
        raise error(f"{path}: larger than {limit // 1024} KiB; refused")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__
