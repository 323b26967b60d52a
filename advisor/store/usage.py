"""How big a store is: its runs and the bytes they take (for the P7 housekeeping rules)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from advisor.store.schema import MANIFEST_NAME

# Scanning a huge store must not make `advisor check` slow: stop counting bytes after this many
# files.
SCAN_LIMIT = 20000


@dataclass(frozen=True)
class StoreUsage:
    runs: int
    bytes: int | None  # None when the store was too large to count in time


def store_usage(store: str | os.PathLike[str]) -> StoreUsage | None:
    """Runs and bytes under ``store`` (only directories that hold a run manifest); None if
    unreadable."""
    runs = 0
    total = 0
    files = 0
    counting = True
    try:
        entries = list(os.scandir(Path(store)))
    except OSError:
        return None
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False) or not os.path.isfile(
                os.path.join(entry.path, MANIFEST_NAME)
            ):
                continue
        except OSError:
            continue
        runs += 1
        if not counting:
            continue
        for root, _dirs, names in os.walk(entry.path):
            for name in names:
                files += 1
                if files > SCAN_LIMIT:
                    counting = False
                    break
                try:
                    total += os.lstat(os.path.join(root, name)).st_size
                except OSError:
                    pass
            if not counting:
                break
    if not runs:
        return None
    return StoreUsage(runs, total if counting else None)
