"""S3 stores through the service: local mirrors of ``s3://`` runs and stores, and pushing back
a run that a command changed (``advisor data --into``, ``advisor trace --into``)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


class Mirrors:
    """The local mirrors of S3 stores a command reads: mirror folder → (S3 store, key prefix)."""

    def __init__(self) -> None:
        self._by_folder: dict[Path, tuple[Any, str]] = {}

    def add(self, folder: str | os.PathLike[str], remote: Any, prefix: str = "") -> Path:
        path = Path(os.path.abspath(folder))
        self._by_folder[path] = (remote, prefix)
        return path

    def localize(
        self, target: str | None, *, store_url: str | None, store_root: Path
    ) -> str | None:
        """``target`` unchanged unless it is an ``s3://`` URL: then its mirror folder, up to
        date."""
        from advisor.cloud.s3store import S3Store
        from advisor.store.paths import is_store_url

        if target is None or not is_store_url(target):
            return target
        url = target.rstrip("/")
        if url == store_url:
            return str(store_root)
        remote = S3Store(url)
        return str(self.add(remote.mirror(), remote))

    def push(self, run_path: str | os.PathLike[str]) -> list[str]:
        """Upload the files of ``run_path`` that differ from what its mirror downloaded; [] if the
        run is not in a mirror."""
        from advisor.cloud.s3store import MIRROR_INDEX

        path = Path(os.path.abspath(run_path))
        owner = next(
            (
                (folder, entry)
                for folder, entry in self._by_folder.items()
                if path == folder or folder in path.parents
            ),
            None,
        )
        if owner is None:
            return []
        folder, (remote, rel_prefix) = owner
        rel = path.relative_to(folder).as_posix() if path != folder else ""
        index = _read_json(folder / MIRROR_INDEX)

        def changed(name: str, stat: os.stat_result) -> bool:
            key = f"{rel}/{name}" if rel else name
            return index.get(key) != hashlib.md5((path / name).read_bytes()).hexdigest()

        prefix = "/".join(p for p in (rel_prefix, rel) if p)
        return list(remote.upload_tree(path, prefix, changed=changed))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
