"""Sizing a data set from a stream of (name, size) and a few ranged reads: the data check.

One accumulator for local folders and object stores: it keeps every size (an array of ints, so
millions of objects stay cheap), a fixed-size random sample of names whose first bytes are read
to recognise compression and format (:mod:`advisor.probes.formats`), and extension counts. The
result, :class:`DataSummary`, turns into the storage facts of checklist items S301 and S305.
"""

from __future__ import annotations

import os
import random
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from advisor.probes.formats import classify
from advisor.stats import percentiles

SNIFF_SAMPLE = 16  # names whose first bytes are read
MAX_OBJECTS = 1_000_000  # a larger data set is sized from its first million objects (said so)

Progress = Callable[[int, int], None]  # (objects so far, bytes so far)


@dataclass
class DataSummary:
    """What a data set is made of: how many objects, how big, how compressed, which formats."""

    location: str
    objects: int = 0
    total_bytes: int = 0
    bytes_min: float | None = None
    bytes_p10: float | None = None
    bytes_p50: float | None = None
    bytes_p90: float | None = None
    bytes_max: float | None = None
    compression: str | None = None  # the most common among the sniffed objects
    compressions: dict[str, int] = field(default_factory=dict)
    formats: dict[str, int] = field(default_factory=dict)
    extensions: dict[str, int] = field(default_factory=dict)  # the ten most common
    sniffed: int = 0
    unreadable: list[str] = field(default_factory=list)
    truncated: bool = False  # stopped at the object limit
    seconds: float = 0.0

    @property
    def format(self) -> str | None:
        return max(self.formats, key=lambda k: self.formats[k]) if self.formats else None

    @property
    def remote(self) -> bool:
        return "://" in self.location

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataSummary:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def facts(self) -> dict[str, Any]:
        """``storage.*`` facts (and ``cloud.data_*`` for object stores); absent when unmeasured."""
        out: dict[str, Any] = {}
        if self.objects:
            out.update(
                {
                    "storage.files": self.objects,
                    "storage.total_bytes": self.total_bytes,
                    "storage.file_bytes.p10": self.bytes_p10,
                    "storage.file_bytes.p50": self.bytes_p50,
                    "storage.file_bytes.p90": self.bytes_p90,
                }
            )
            if self.remote:
                out.update(
                    {
                        "cloud.data_object_bytes.p50": self.bytes_p50,
                        "cloud.data_objects": self.objects,
                        "cloud.data_location": self.location,
                    }
                )
        if self.compression:
            out["storage.compression"] = self.compression
        if self.format:
            out["storage.format"] = self.format
        return {k: v for k, v in out.items() if v is not None}


class DataCheck:
    """Accumulates (name, size) pairs; :meth:`finish` reads the sampled heads and summarises."""

    def __init__(
        self,
        location: str,
        sample: int = SNIFF_SAMPLE,
        limit: int = MAX_OBJECTS,
        progress: Progress | None = None,
        progress_every_s: float = 1.0,
        seed: int = 0,
    ) -> None:
        self.location = location
        self.sample_size = sample
        self.limit = limit
        self.progress = progress
        self.progress_every_s = progress_every_s
        self.sizes = array("q")
        self.sample: list[str] = []
        self.extensions: Counter[str] = Counter()
        self.truncated = False
        self._rng = random.Random(seed)
        self._t0 = time.monotonic()
        self._last_progress = self._t0
        self._total = 0

    @property
    def full(self) -> bool:
        return len(self.sizes) >= self.limit

    def add(self, name: str, size: int) -> bool:
        """Count one object; False once the limit is reached (the caller stops listing)."""
        if self.full:
            self.truncated = True
            return False
        self.sizes.append(int(size))
        self._total += int(size)
        self.extensions[_extension(name)] += 1
        n = len(self.sizes)
        if len(self.sample) < self.sample_size:  # reservoir sampling: every object equally likely
            self.sample.append(name)
        else:
            j = self._rng.randrange(n)
            if j < self.sample_size:
                self.sample[j] = name
        if self.progress is not None:
            now = time.monotonic()
            if now - self._last_progress >= self.progress_every_s:
                self._last_progress = now
                self.progress(n, self._total)
        return True

    def add_all(self, entries: Iterator[tuple[str, int]]) -> None:
        for name, size in entries:
            if not self.add(name, size):
                break

    def finish(self, read_head: Callable[[str], bytes]) -> DataSummary:
        """Read the sampled objects' first bytes and build the summary."""
        summary = DataSummary(
            self.location,
            objects=len(self.sizes),
            total_bytes=self._total,
            truncated=self.truncated,
        )
        if self.sizes:
            values = np.frombuffer(self.sizes, dtype=np.int64)
            p10, p50, p90 = percentiles(values, (10, 50, 90))
            summary.bytes_min, summary.bytes_max = float(values.min()), float(values.max())
            summary.bytes_p10, summary.bytes_p50, summary.bytes_p90 = p10, p50, p90
        summary.extensions = dict(self.extensions.most_common(10))
        compressions: Counter[str] = Counter()
        formats: Counter[str] = Counter()
        for name in sorted(self.sample):
            try:
                head = read_head(name)
            except Exception as exc:  # one unreadable object is a note, not a failed check
                summary.unreadable.append(f"{name}: {exc}")
                continue
            compression, fmt = classify(head, name)
            summary.sniffed += 1
            if compression:
                compressions[compression] += 1
            if fmt:
                formats[fmt] += 1
        summary.compressions = dict(compressions)
        summary.formats = dict(formats)
        if compressions:
            summary.compression = compressions.most_common(1)[0][0]
        summary.seconds = time.monotonic() - self._t0
        if self.progress is not None:
            self.progress(len(self.sizes), self._total)
        return summary


def _extension(name: str) -> str:
    base, ext = os.path.splitext(name.rsplit("/", 1)[-1].lower())
    if ext in (".gz", ".zst", ".bz2", ".xz", ".lz4", ".zlib") and os.path.splitext(base)[1]:
        ext = os.path.splitext(base)[1] + ext
    return ext or "(none)"


def walk_local(root: str) -> Iterator[tuple[str, int]]:
    """(path, size) of every regular file under ``root`` (hidden files and folders skipped)."""
    if os.path.isfile(root):
        yield root, os.stat(root).st_size
        return
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=True):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=True):
                    yield entry.path, entry.stat().st_size
            except OSError:
                continue


def read_local_head(path: str, nbytes: int = 1024) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(nbytes)


def check_local(
    root: str,
    sample: int = SNIFF_SAMPLE,
    limit: int = MAX_OBJECTS,
    progress: Progress | None = None,
) -> DataSummary:
    """The data check of a local folder (or one file)."""
    check = DataCheck(root, sample=sample, limit=limit, progress=progress)
    check.add_all(walk_local(root))
    return check.finish(read_local_head)
