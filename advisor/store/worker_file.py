"""One worker file (``worker-<rank>.jsonl``) read line by line into records.

Bad lines are skipped and reported with their reason, never fatal; a truncated last line — what a
killed writer leaves — is counted apart. Each line is read within the limits of
:mod:`advisor.store.limits`.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from advisor.store.limits import BadInput, describe_os_error, iter_lines, parse_json, plain
from advisor.store.ranges import RunBounds
from advisor.store.schema import RECORD_TYPES, Record
from advisor.store.validate import WorkerOrder, missing_records, record_doubt

# Bad lines reported one by one per file; beyond this only their number.
MAX_REPORTED_LINES = 3


@dataclass
class WorkerFilePart:
    """What one worker file gave: its records, and what could not be read."""

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


def read_worker_file(file: Path, bounds: RunBounds | None = None) -> WorkerFilePart:
    """The records of one worker file; bad lines are skipped and reported, never fatal. With
    ``bounds``, a record that cannot belong to the run (:mod:`advisor.store.ranges`) is a bad
    line too."""
    with _gc_paused():
        return _read_lines(file, bounds)


def _read_lines(file: Path, bounds: RunBounds | None) -> WorkerFilePart:
    part = WorkerFilePart()
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
                    doubt = (
                        record_doubt(record)
                        or (bounds.doubt(record) if bounds is not None else None)
                        or order.doubt(record, line, number)
                    )
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
    nonfinite: list[str] = []
    try:
        payload = parse_json(line, nonfinite)
    except BadInput as exc:
        raise BadInput(f"not a JSON record ({exc})") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        raise BadInput("a record must be a JSON object with a 'type'")
    if nonfinite and payload["type"] in RECORD_TYPES:  # our writers write null, never NaN
        raise BadInput(f"{payload['type']} record: {nonfinite[0]} is not a finite number")
    cls = RECORD_TYPES.get(payload["type"])
    if cls is None:
        return None
    try:
        return cls.model_validate(payload, strict=True)
    except ValidationError as exc:
        raise BadInput(f"invalid {payload['type']!r} record ({first_error(exc)})") from None


def first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "record"
    return f"{where}: {err.get('msg', 'invalid')}"
