"""Finding runs in the store: by path, run id, unique id prefix, or ``latest``."""

from __future__ import annotations

import math
import os
from pathlib import Path

from advisor.errors import RunFormatError, RunNotFoundError
from advisor.store.limits import MAX_MANIFEST_BYTES, parse_json, read_limited
from advisor.store.paths import resolve_runs_dir
from advisor.store.scan import list_run_dirs
from advisor.store.schema import MANIFEST_NAME


def resolve_run(ref: str | None, runs_dir: str | os.PathLike[str] | None = None) -> Path:
    """A run from a path, a run id, a unique id prefix, or ``latest`` (also when ``ref`` is
    None)."""
    if ref and Path(ref).is_dir() and (Path(ref) / MANIFEST_NAME).exists():
        return Path(ref)
    root = resolve_runs_dir(runs_dir)
    runs = list_run_dirs(root)
    if ref in (None, "", "latest", "last"):
        if not runs:
            raise RunNotFoundError(f"{root}: no runs in this store")
        return max(runs, key=_created)
    assert ref is not None
    if Path(ref).is_dir():
        raise RunFormatError(f"{ref}: missing manifest {MANIFEST_NAME} (not a run directory?)")
    return pick_by_name(runs, ref, "run", root, "see `advisor runs`")


def pick_by_name(paths: list[Path], ref: str, kind: str, where: Path, hint: str) -> Path:
    """The one path whose name is ``ref``, else the only one that starts with or contains it."""
    exact = [p for p in paths if p.name == ref]
    if exact:
        return exact[0]
    matches = [p for p in paths if p.name.startswith(ref) or ref in p.name]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise RunNotFoundError(f"no {kind} {ref!r} in {where} ({hint})")
    names = ", ".join(p.name for p in matches[:5])
    raise RunNotFoundError(f"{ref!r} matches {len(matches)} {kind}s in {where}: {names}")


def _created(path: Path) -> tuple[float, str]:
    try:
        created = float(
            parse_json(read_limited(path / MANIFEST_NAME, MAX_MANIFEST_BYTES)).get("created", 0.0)
        )
    except (OSError, ValueError, TypeError, AttributeError, OverflowError):
        created = 0.0
    return (created if math.isfinite(created) else 0.0), path.name
