"""Facts about the data files a pipeline reads: how many, how big, how compressed.

Checklist S301 wants files of about 100 MB (many tiny files cost an open and a request each; a few
huge ones limit parallel reads); S305 asks whether compression was considered. Only local paths
are measured here; remote ones (``s3://``, ``gs://``) are counted here and ``s3://`` ones are
sized by ``advisor.cloud.s3data`` from the pipeline collector, with the same classifier.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from typing import Any

from advisor.probes.formats import HEAD_BYTES, classify
from advisor.stats import percentiles

REMOTE_PREFIXES = ("s3://", "gs://", "hdfs://", "http://", "https://", "az://", "abfs://")
MAX_FILES = 100_000  # stat at most this many (listing huge datasets must stay quick)
SNIFF_FILES = 8  # files whose first bytes are read to recognise compression


def resolve_files(
    declared: Sequence[str], candidates: Sequence[str] = ()
) -> tuple[list[str], list[str], list[str]]:
    """Split path strings into (local files, remote paths, missing declared paths).

    Declared paths (fed to a file reader) that do not exist are reported as missing; a glob
    pattern is expanded; candidate strings only count when they name an existing file.
    """
    local: list[str] = []
    remote: list[str] = []
    missing: list[str] = []
    for path, is_declared in [(p, True) for p in declared] + [(p, False) for p in candidates]:
        if len(local) >= MAX_FILES:
            break
        if path.startswith(REMOTE_PREFIXES):
            remote.append(path)
        elif any(ch in path for ch in "*?["):
            matches = sorted(glob.glob(path))
            local.extend(m for m in matches if os.path.isfile(m))
            if not matches and is_declared:
                missing.append(path)
        elif os.path.isfile(path):
            local.append(path)
        elif is_declared:
            missing.append(path)
    return list(dict.fromkeys(local))[:MAX_FILES], remote, missing


def sniff(path: str) -> tuple[str | None, str | None]:
    """(compression, format) of a local file from its first bytes (``advisor.probes.formats``)."""
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    return classify(head, path)


def file_facts(
    declared: Sequence[str], candidates: Sequence[str] = (), declared_compression: str | None = None
) -> dict[str, Any]:
    """Storage facts for the files a pipeline reads.

    Returns keys ``files``, ``total_bytes``, ``bytes_p10/p50/p90``, ``compression``, ``remote``,
    ``missing`` and ``unreadable`` (the last two: up to 5 paths with the reason), all optional.
    """
    local, remote, missing = resolve_files(list(declared), list(candidates))
    out: dict[str, Any] = {}
    if remote:
        out["remote"] = len(remote)
    if missing:
        out["missing"] = [f"{p}: no such file" for p in missing[:5]]
    sizes: list[int] = []
    unreadable: list[str] = []
    for path in local:
        try:
            sizes.append(os.stat(path).st_size)
        except OSError as exc:
            unreadable.append(f"{path}: {exc.strerror or exc}")
    if sizes:
        out["files"] = len(sizes)
        out["total_bytes"] = sum(sizes)
        p10, p50, p90 = percentiles(sizes, (10, 50, 90))
        out.update(bytes_p10=p10, bytes_p50=p50, bytes_p90=p90)
    found: list[str] = []
    formats: list[str] = []
    for path in local[:SNIFF_FILES]:
        try:
            kind, fmt = sniff(path)
        except OSError as exc:
            unreadable.append(f"{path}: {exc.strerror or exc}")
            continue
        found.append(kind or "none")
        if fmt:
            formats.append(fmt)
    if formats:
        out["format"] = max(set(formats), key=formats.count)
    if unreadable:
        out["unreadable"] = unreadable[:5]
    if declared_compression:
        out["compression"] = declared_compression.lower()
    elif found:
        kinds = [k for k in found if k != "none"]
        out["compression"] = max(set(kinds), key=kinds.count) if kinds else "none"
    return out
