"""Hard limits on everything the store reads: file size, line length, nesting, counts, numbers.

Run directories come from crashed jobs, full disks, copies and hand edits. Every JSON or JSONL
read goes through here so that no input can hang the reader (a FIFO where a file should be),
exhaust memory (``/dev/zero``, a 10 GB line), recurse without bound (deeply nested arrays) or
smuggle values that crash later code (integers over 2**63, lone surrogates). A value outside the
limits is a :class:`BadInput` with a short reason; callers name the file and line. Non-finite
numbers (``NaN``, ``Infinity``, ``1e999``) read as missing (``null``); lone surrogates as U+FFFD.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from advisor.bounded_reads import (
    BadInput,
    MiB,
    describe_os_error,
    open_regular,
    read_limited,
    size_text,
)
from advisor.errors import first_line

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

MAX_MANIFEST_BYTES = 4 * MiB  # run.json
MAX_JSON_FILE_BYTES = 64 * MiB  # trace summaries, sweep files
MAX_RECORD_FILE_BYTES = 4096 * MiB  # one worker-<rank>.jsonl (a week of 1 s telemetry is ~200 MB)
MAX_LINE_BYTES = 4 * MiB  # one record
MAX_RECORDS_PER_FILE = 20_000_000
MAX_WORKER_FILES = 4096
MAX_DEPTH = 32  # nesting of arrays and objects inside one document
MAX_INT = 2**63 - 1  # integers beyond a signed 64-bit range are refused
_MANY_BRACKETS = MAX_DEPTH

# Cheap pre-filters in C (translate, substring search): only documents that could break a
# limit are walked. Digits read as "0" and "E" as "e", so a run of 19 digits (an integer that may
# exceed 2**63) or an exponent of 3 digits (a float that may be infinite) is a substring search.
_DIGITS = bytes.maketrans(b"0123456789E", b"0000000000e")
_LONG_DIGITS = b"0" * 19
_SURROGATE_ESCAPE = re.compile(rb"\\[uU][dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _constant(name: str) -> Any:
    """``NaN`` / ``Infinity`` (which Python's json writes by default) read as missing."""
    return None


class _NonFinite:
    """Where a ``NaN`` or ``Infinity`` was read, while the caller wants to know which field."""


_NONFINITE = _NonFinite()
_DECODER = json.JSONDecoder(parse_constant=_constant)
NONFINITE_DECODER = json.JSONDecoder(parse_constant=lambda name: _NONFINITE)


def parse_json(data: bytes | str, nonfinite: list[str] | None = None) -> Any:
    """Parse one JSON document within the limits; raise :class:`BadInput` with the reason.

    Non-finite numbers read as None; with ``nonfinite`` given, the top-level key of each (or
    ``"value"`` for a bare number) is appended to it, so that a caller can say which field
    held one."""
    try:
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        text = raw.decode("utf-8")
    except UnicodeError:
        raise BadInput("not UTF-8 text") from None
    tracking = nonfinite is not None and (b"NaN" in raw or b"Infinity" in raw)
    try:
        value = (NONFINITE_DECODER if tracking else _DECODER).decode(text)
    except RecursionError:
        raise BadInput(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise BadInput(f"not JSON ({first_line(exc, 80)})") from None
    except MemoryError:
        raise BadInput("too large to parse") from None
    brackets = raw.count(b"[") + raw.count(b"{")
    big = _big_numbers(raw)
    surrogates = b"\\u" in raw and _SURROGATE_ESCAPE.search(raw) is not None
    if brackets > _MANY_BRACKETS or big or surrogates or tracking:
        value = checked_value(
            value, check_numbers=big or tracking, fix_strings=surrogates, nonfinite=nonfinite
        )
    return value


def _big_numbers(raw: bytes) -> bool:
    digits = raw.translate(_DIGITS)
    return _LONG_DIGITS in digits or b"e000" in digits or b"e+000" in digits


def plain(raw: bytes) -> bool:
    """True when ``raw`` cannot break a limit: shallow, no long numbers, no ``NaN`` or
    ``Infinity``, no escapes. Such a line may go to a fast validating parser directly; any
    other goes through :func:`parse_json`."""
    return (
        raw.count(b"[") + raw.count(b"{") <= _MANY_BRACKETS
        and b"\\u" not in raw
        and b"NaN" not in raw
        and b"Infinity" not in raw
        and not _big_numbers(raw)
    )


def checked_value(
    value: Any, *, check_numbers: bool, fix_strings: bool, nonfinite: list[str] | None = None
) -> Any:
    """Walk ``value`` (iteratively): depth, number ranges; lone surrogates become U+FFFD;
    non-finite numbers become None (their top-level keys go to ``nonfinite`` when given)."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any, int, str]] = [(root, 0, 0, "value")]  # (container, key, depth, top)
    while stack:
        container, key, depth, top = stack.pop()
        item = container[key]
        if isinstance(item, dict):
            if depth >= MAX_DEPTH:
                raise BadInput(f"nested deeper than {MAX_DEPTH} levels")
            if fix_strings and any(_SURROGATE.search(k) for k in item):
                item = {_fix(k): v for k, v in item.items()}
                container[key] = item
            stack.extend((item, k, depth + 1, k if depth == 0 else top) for k in item)
        elif isinstance(item, list):
            if depth >= MAX_DEPTH:
                raise BadInput(f"nested deeper than {MAX_DEPTH} levels")
            stack.extend((item, i, depth + 1, top) for i in range(len(item)))
        elif isinstance(item, str):
            if fix_strings and _SURROGATE.search(item):
                container[key] = _fix(item)
        elif item is _NONFINITE or (
            check_numbers and isinstance(item, float) and not math.isfinite(item)
        ):
            container[key] = None  # 1e999 reads as inf: missing, like NaN
            if nonfinite is not None and top not in nonfinite:
                nonfinite.append(top)
        elif check_numbers and isinstance(item, int) and not isinstance(item, bool):
            if abs(item) > MAX_INT:
                raise BadInput(f"integer out of range ({len(str(abs(item)))} digits)")
    return root[0]


def _fix(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


# -- files (opened and read within their limits by advisor.bounded_reads)
# ---------------------------


def load_json_file(path: str | os.PathLike[str], max_bytes: int = MAX_JSON_FILE_BYTES) -> Any:
    """Read and parse one JSON file within the limits; OSError or :class:`BadInput`."""
    return parse_json(read_limited(path, max_bytes))


def iter_lines(
    path: str | os.PathLike[str],
    max_bytes: int = MAX_RECORD_FILE_BYTES,
    max_line: int = MAX_LINE_BYTES,
) -> Iterator[tuple[int, bytes | None, bool]]:
    """``(line number, line, complete)`` of a JSONL file, streamed (never read whole).

    ``line`` is None for a line longer than ``max_line`` (its bytes are skipped, not kept);
    ``complete`` is False for a last line without its newline (a write cut short).
    """
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise BadInput(f"larger than {size_text(max_bytes)}; refused")
        number = 0
        while True:
            line = fh.readline(max_line + 1)
            if not line:
                return
            number += 1
            if number > MAX_RECORDS_PER_FILE:
                raise BadInput(f"more than {MAX_RECORDS_PER_FILE:,} lines; refused")
            if len(line) > max_line and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # skip the rest of the long line
                    line = fh.readline(MiB)
                yield number, None, bool(line)
                continue
            complete = line.endswith(b"\n")
            yield number, line[:-1] if complete else line, complete


def inside(root: str | os.PathLike[str], relative: str) -> Path:
    """``root/relative`` resolved, refused (:class:`BadInput`) when it leaves ``root``.

    Paths read from records are relative to their run directory; an absolute path, ``..`` or a
    symlink pointing elsewhere must not let a record make the advisor read or write outside it.
    """
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        raise BadInput(f"invalid path {relative!r}")
    try:
        base = Path(root).resolve()
        target = (base / relative).resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        raise BadInput(f"path {relative!r} cannot be resolved ({first_line(exc, 80)})") from None
    if target != base and base not in target.parents:
        raise BadInput(f"path {relative!r} leads outside the run directory; refused")
    return target


def load_versioned(
    file: Path,
    model: type[M],
    *,
    what: str,
    version_key: str,
    known: int,
    error: type[Exception],
    parse: Callable[[bytes], Any] = parse_json,
    strict: bool = False,
) -> M:
    """A versioned JSON file (a sweep, a trace summary) read within the size and depth limits and
    validated by ``model``. Every problem is one ``error`` naming the file: unreadable, not a JSON
    object, a version that is not an integer, written by a newer advisor (``version_key`` above
    ``known``: never read as if it were ours), or invalid (the first field pydantic refused)."""
    from pydantic import ValidationError

    try:
        data: Any = parse(read_limited(file, MAX_JSON_FILE_BYTES))
    except OSError as exc:
        raise error(f"{file}: unreadable {what} ({describe_os_error(exc)})") from None
    except BadInput as exc:
        raise error(f"{file}: unreadable {what} ({exc})") from None
    if not isinstance(data, dict):
        raise error(f"{file}: the {what} is not a JSON object")
    version = data.get(version_key, 0) or 0
    if not isinstance(version, int) or isinstance(version, bool):
        raise error(f"{file}: {version_key} is not an integer")
    if version > known:
        raise error(
            f"{file}: written by a newer advisor ({what} {version_key} {version}); upgrade advisor"
        )
    try:
        return model.model_validate(data, strict=strict)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        raise error(
            f"{file}: invalid {what} ({where + ': ' if where else ''}{err.get('msg', 'invalid')})"
        ) from None
