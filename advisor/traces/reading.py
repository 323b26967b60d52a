"""Reading a whole trace file (a torch chrome trace, a Horovod timeline) within a size limit:
every problem is one ``TraceError`` that names the file and says what to do."""

from __future__ import annotations

import os
from pathlib import Path

from advisor.errors import TraceError

MAX_BYTES = 2 << 30  # larger traces need a streaming reader: refused with a clear message


def read_trace_text(
    path: Path, *, empty_hint: str, large_hint: str, what: str = "trace file"
) -> str:
    """The text of ``path`` (invalid UTF-8 replaced), refused when empty, larger than
    ``MAX_BYTES``, not a regular file or unreadable."""
    from advisor.store.limits import BadInput, describe_os_error, read_limited

    try:
        size = path.stat().st_size
        if size == 0:
            raise TraceError(f"{path}: the {what} is empty ({empty_hint})")
        if size > MAX_BYTES:
            raise TraceError(
                f"{path}: {size / 2**30:.1f} GiB is too large to summarise; {large_hint}"
            )
        return read_limited(os.fspath(path), MAX_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        raise TraceError(f"{path}: cannot read ({describe_os_error(exc)})") from None
    except BadInput as exc:
        raise TraceError(f"{path}: cannot read ({exc})") from None
