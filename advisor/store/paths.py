"""Where runs live: argument, then ``ADVISOR_RUNS_DIR``, then ``./advisor-runs``.

A store may also be an object-store URL (``s3://bucket/prefix``). Such a store is not a local
path: the callback writes it through a local spool and the commands read it through a local
mirror (both in :mod:`advisor.cloud`), so :func:`resolve_runs_dir` refuses URLs instead of
turning ``s3://b/p`` into a local folder named ``s3:``.
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.errors import UsageError

DEFAULT_RUNS_DIR = "advisor-runs"
RUNS_DIR_ENV = "ADVISOR_RUNS_DIR"
REMOTE_SCHEMES = ("s3://",)
UNSUPPORTED_SCHEMES = ("gs://", "az://", "abfs://", "hdfs://", "http://", "https://")


def _chosen(runs_dir: str | os.PathLike[str] | None) -> str | None:
    if runs_dir is not None and str(runs_dir) != "":
        return os.fspath(runs_dir)
    return os.environ.get(RUNS_DIR_ENV) or None


def store_url(runs_dir: str | os.PathLike[str] | None = None) -> str | None:
    """The store's URL when it is an object store (``s3://bucket/prefix``), else None."""
    chosen = _chosen(runs_dir)
    if chosen is None:
        return None
    if chosen.startswith(UNSUPPORTED_SCHEMES):
        raise UsageError(
            f"runs store {chosen!r}: only local folders and s3://bucket/prefix are supported"
        )
    return chosen.rstrip("/") if chosen.startswith(REMOTE_SCHEMES) else None


def is_store_url(value: str | os.PathLike[str] | None) -> bool:
    """True for an ``s3://`` URL (a run or a store in S3)."""
    return value is not None and os.fspath(value).startswith(REMOTE_SCHEMES)


def resolve_runs_dir(runs_dir: str | os.PathLike[str] | None = None) -> Path:
    """The local store folder; an ``s3://`` store is an error here (see the module docs)."""
    chosen = _chosen(runs_dir)
    if chosen is None:
        return Path(DEFAULT_RUNS_DIR)
    if store_url(chosen) is not None:
        raise UsageError(
            f"{chosen}: an S3 store is read through advisor.RunService / the advisor command and "
            "written through AdvisorCallback (install keras-advisor[cloud]); this call needs a "
            "local folder"
        )
    return Path(chosen).expanduser()
