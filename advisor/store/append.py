"""Adding a record to a run that has ended (an attached data check, an imported fact).

A killed job can leave a truncated last line; readers ignore it, but a record appended after it
would turn it into a malformed line in the middle, so it is cut off first.
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.errors import RunFormatError
from advisor.store.schema import Record, worker_file_name


def append_record(run_path: str | os.PathLike[str], record: Record, rank: int = 0) -> Path:
    """Append ``record`` as one line to ``worker-<rank>.jsonl`` of the run; returns the file."""
    path = Path(run_path) / worker_file_name(rank)
    line = record.model_dump_json(exclude_none=True) + "\n"
    if os.path.lexists(path) and not path.is_file():  # a FIFO would block the open below
        raise RunFormatError(
            f"{path}: not a regular file; the {record.type} record cannot be added"
        )
    try:
        with open(path, "a+b") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            if size:
                fh.seek(max(0, size - 65536))
                tail = fh.read()
                if not tail.endswith(b"\n"):
                    cut = tail.rfind(b"\n")
                    fh.truncate(
                        size - len(tail) + cut + 1 if cut >= 0 else max(0, size - len(tail))
                    )
            fh.seek(0, os.SEEK_END)
            fh.write(line.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise RunFormatError(
            f"{path}: cannot add the {record.type} record ({exc.strerror or exc})"
        ) from None
    return path
