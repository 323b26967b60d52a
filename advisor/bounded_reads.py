"""Bounded file reads: regular files only, at most a size limit, never a hang.

Run directories, rule directories and ``--config`` paths can point anywhere: a FIFO must not
hang the open and ``/dev/zero`` must not fill memory. The store (its JSON and JSONL limits) and
the diagnosis (rule files and configuration) both read through here; a leaf that imports
nothing of the package but its errors.
"""

from __future__ import annotations

import os
import stat

from advisor.errors import AdvisorError

MiB = 1 << 20


class BadInput(ValueError):
    """Input that breaks a limit or is not valid; ``str()`` is the short reason."""


def open_regular(path: str | os.PathLike[str]) -> int:
    """Open ``path`` for reading without blocking, and only if it is a regular file.

    ``O_NONBLOCK`` keeps a FIFO from hanging the open; the ``fstat`` after it (not a ``stat``
    before it) judges the very file that was opened. Raises OSError or :class:`BadInput`.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise BadInput(f"not a regular file ({file_kind(mode)}); refused")
    except BaseException:
        os.close(fd)
        raise
    return fd


def file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def read_limited(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; OSError or :class:`BadInput`."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        # sized by the file, not the limit: read(limit) allocates the whole limit first
        size = min(os.fstat(fh.fileno()).st_size, max_bytes)
        data = fh.read(size + 1)
        if len(data) > size:  # it grew while being read (or fstat cannot tell): the rest
            data += fh.read(max_bytes + 1 - len(data))
    if len(data) > max_bytes:
        raise BadInput(f"larger than {size_text(max_bytes)}; refused")
    return data


def read_text(path: str | os.PathLike[str], limit: int, error: type[AdvisorError]) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes, or ``error`` naming it."""
    try:
        data = read_limited(path, limit)
    except BadInput as exc:
        raise error(f"{path}: {exc}") from None
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL byte
        reason = (
            describe_os_error(exc) if isinstance(exc, OSError) else str(exc) or type(exc).__name__
        )
        raise error(f"{path}: cannot read ({reason})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None


def size_text(n: int) -> str:
    """A size limit in words: '4 MiB', '1000 bytes'."""
    return f"{n // MiB} MiB" if n >= MiB else f"{n} bytes"


def describe_os_error(exc: OSError) -> str:
    """A short reason for an OSError: 'permission denied', 'no such file', ..."""
    return (exc.strerror or type(exc).__name__).lower() if exc.strerror else str(exc)
