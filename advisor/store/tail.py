"""RecordTail: the records appended to a run directory since the last look (for live views).

A live view must not re-read a growing run from its start every second. The tail keeps, per
worker file, the byte offset it has read up to and an incomplete last line (a writer may be in
the middle of one); each :meth:`RecordTail.poll` parses only the complete lines added since.
The same rules as :class:`~advisor.store.reader.RunReader` apply: unknown record types are
skipped, a malformed complete line is skipped and listed in :attr:`RecordTail.problems`, only
regular files are read, and the status comes from the records (heartbeats, end records).
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.errors import RunFormatError
from advisor.store.limits import MAX_LINE_BYTES, BadInput, describe_os_error, open_regular
from advisor.store.reader import RunReader
from advisor.store.schema import MANIFEST_NAME, WORKER_FILE_RE, Manifest, Record, Status
from advisor.store.status import derive_status
from advisor.store.worker_file import parse_line


class RecordTail:
    """Follows one run directory: new records per poll, the manifest when it changes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._offsets: dict[Path, int] = {}
        self._lines: dict[Path, int] = {}
        self._partial: dict[Path, bytes] = {}
        self._manifest: Manifest | None = None
        self._manifest_stamp: tuple[int, int] | None = None
        self._records: dict[int, list[Record]] = {}
        self.problems: list[
            str
        ] = []  # lines skipped (malformed, too long), as the reader says them

    def manifest(self) -> Manifest:
        """The manifest, read again only when ``run.json`` was replaced."""
        try:
            stat = (self.path / MANIFEST_NAME).stat()
        except OSError:
            stat = None
        stamp = (stat.st_mtime_ns, stat.st_ino) if stat is not None else None
        if self._manifest is None or stamp != self._manifest_stamp:
            self._manifest = RunReader(self.path).read_manifest()
            self._manifest_stamp = stamp
        return self._manifest

    def status(self) -> Status:
        """running / finished / failed / killed, from the records polled so far (as the reader)."""
        return derive_status(self.manifest(), self._records)[0]

    def poll(self) -> list[tuple[int, Record]]:
        """Records appended since the last poll, as ``(rank, record)`` in file order per rank."""
        found: list[tuple[int, Record]] = []
        try:
            files = sorted(self.path.iterdir())
        except OSError as exc:
            raise RunFormatError(f"{self.path}: cannot list the run directory ({exc})") from None
        for file in files:
            match = WORKER_FILE_RE.match(file.name)
            if match:
                rank = int(match.group(1))
                new = self._read_new(file)
                self._records.setdefault(rank, []).extend(new)
                found.extend((rank, record) for record in new)
        return found

    def _read_new(self, file: Path) -> list[Record]:
        offset = self._offsets.get(file, 0)
        try:
            with os.fdopen(open_regular(file), "rb") as fh:
                fh.seek(offset)
                chunk = fh.read(64 * MAX_LINE_BYTES)
        except OSError as exc:
            raise RunFormatError(f"{file}: cannot read ({describe_os_error(exc)})") from None
        except BadInput as exc:
            raise RunFormatError(f"{file}: {exc}") from None
        if not chunk:
            return []
        self._offsets[file] = offset + len(chunk)
        pieces = (self._partial.pop(file, b"") + chunk).split(b"\n")
        tail = pieces.pop()  # b"" after a complete line, else a line still being written
        if tail and len(tail) <= MAX_LINE_BYTES:
            self._partial[file] = tail
        records: list[Record] = []
        for line in pieces:
            self._lines[file] = self._lines.get(file, 0) + 1
            if not line.strip():
                continue
            try:
                record = parse_line(line) if len(line) <= MAX_LINE_BYTES else None
            except BadInput as exc:
                self.problems.append(f"{file.name}:{self._lines[file]}: {exc}; line skipped")
                continue
            if record is not None:
                records.append(record)
        return records
