"""Worker and launcher logs kept in the store, redacted as they are written.

A training process's output goes through a pipe, and each line reaches its log file only after
:func:`advisor.store.redact.redact_known`: token shapes, values of secret-named flags and fields,
and every secret the process was given on its command line or in its environment, word for word
(``secret_values``). The sweep's logs are what ``advisor upload`` mirrors: no secret is written
to them even for a moment. Locally and on Ray a thread pumps each worker's pipe; under Slurm the
job's script pipes ``srun``'s output through ``python -m advisor.launch.logpipe -- COMMAND``.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from advisor.store.redact import redact_known, secret_values

# A line longer than this is cut and redacted in pieces (progress bars redrawn with \r).
MAX_LINE = 1 << 20
JOIN_S = 5.0


def redact_lines(source: IO[bytes], sink: IO[bytes], secrets: Sequence[str]) -> None:
    """Copy ``source`` to ``sink`` line by line, each line redacted and flushed at once."""
    for raw in iter(lambda: source.readline(MAX_LINE), b""):
        line = raw.decode("utf-8", "replace")
        sink.write(redact_known(line, secrets).encode("utf-8"))
        sink.flush()


class RedactedLog:
    """A log file fed from a process's output pipe by a thread of its own."""

    def __init__(self, path: Path, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self.path = path
        self._secrets = secret_values(argv, env)
        self._file: IO[bytes] = open(path, "wb")  # noqa: SIM115 (closed by close())
        self._thread: threading.Thread | None = None

    def follow(self, stream: IO[bytes]) -> None:
        """Start copying ``stream`` (the process's stdout, stderr merged) into the file."""
        self._thread = threading.Thread(
            target=self._pump, args=(stream,), name="advisor-log", daemon=True
        )
        self._thread.start()

    def _pump(self, stream: IO[bytes]) -> None:
        try:
            redact_lines(stream, self._file, self._secrets)
        except (OSError, ValueError):  # the file closed under us, or the disk is full: stop
            pass
        finally:
            stream.close()

    def close(self) -> None:
        """Wait for the pipe's end (the process has ended), then close the file."""
        if self._thread is not None:
            self._thread.join(JOIN_S)
        if self._thread is None or not self._thread.is_alive():
            self._file.close()


def main(argv: list[str] | None = None) -> int:
    """``COMMAND 2>&1 | python -m advisor.launch.logpipe -- COMMAND``: stdin to stdout, redacted
    with the secrets of COMMAND and of this environment (the job's)."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[1:] if args[:1] == ["--"] else args
    redact_lines(sys.stdin.buffer, sys.stdout.buffer, secret_values(command, os.environ))
    return 0


if __name__ == "__main__":
    sys.exit(main())
