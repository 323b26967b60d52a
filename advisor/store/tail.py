"""RecordTail: the records appended to a run directory since the last look (for live views).

A live view must not re-read a growing run from its start every second. The tail keeps, per
worker file, the byte offset it has read up to and an incomplete last line (a writer may be in
the middle of one); each :meth:`RecordTail.poll` parses only the complete lines added since.
The same rules as :class:`~advisor.store.reader.RunReader` apply: unknown record types are
skipped, a malformed complete line is an error naming the file and line.
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.errors import RunFormatError
from advisor.store.reader import RunReader, _parse_line, infer_status
from advisor.store.schema import MANIFEST_NAME, WORKER_FILE_RE, Manifest, Record, Status


class RecordTail:
    """Follows one run directory: new records per poll, the manifest when it changes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._offsets: dict[Path, int] = {}
        self._lines: dict[Path, int] = {}
        self._partial: dict[Path, bytes] = {}
        self._manifest: Manifest | None = None
        self._manifest_stamp: tuple[int, int] | None = None

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
        """running / finished / failed, or killed when a running writer is gone."""
        return infer_status(self.manifest(), self.path, {})

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
                found.extend((rank, record) for record in self._read_new(file))
        return found

    def _read_new(self, file: Path) -> list[Record]:
        offset = self._offsets.get(file, 0)
        try:
            with open(file, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
        except OSError as exc:
            raise RunFormatError(f"{file}: cannot read ({exc})") from None
        if not chunk:
            return []
        self._offsets[file] = offset + len(chunk)
        pieces = (self._partial.pop(file, b"") + chunk).split(b"\n")
        tail = pieces.pop()  # b"" after a complete line, else a line still being written
        if tail:
            self._partial[file] = tail
        records: list[Record] = []
        for line in pieces:
            self._lines[file] = self._lines.get(file, 0) + 1
            if line.strip():
                record = _parse_line(file, self._lines[file], line)
                if record is not None:
                    records.append(record)
        return records
