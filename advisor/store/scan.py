"""The store's listing: which directories are runs, and which entries should be but cannot be.

Listing reads no manifest: a directory is a run when it holds a non-empty regular ``run.json``.
What looks like a run but cannot be one (a link loop, a FIFO as ``run.json``) is returned with
its reason, so that commands over a store name it instead of passing over it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from advisor.bounded_reads import describe_os_error, file_kind
from advisor.errors import RunFormatError
from advisor.store.paths import resolve_runs_dir
from advisor.store.schema import MANIFEST_NAME


def list_run_dirs(runs_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Run directories under the store, oldest first (by manifest time, then name).

    A directory is a run when it holds a non-empty regular ``run.json``: one whose manifest was
    never completed (a writer that could not start, a temporary file left by a full disk) is
    not a run. Whether the manifest is *readable* is for the reader to say.
    """
    return scan_store(runs_dir)[0]


def scan_store(
    runs_dir: str | os.PathLike[str] | None = None,
) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The store's runs (as :func:`list_run_dirs`), and the entries that should be runs but
    cannot be read as one, each with its reason: a link that leads nowhere (dangling, a loop), a
    ``run.json`` that is not a regular file (a FIFO, a directory, a device) or cannot be opened.
    Commands over a store name those instead of passing over them."""
    root = resolve_runs_dir(runs_dir)
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return [], []
    except NotADirectoryError:
        return [], []
    except OSError as exc:
        raise RunFormatError(f"{root}: cannot list the store ({describe_os_error(exc)})") from None
    found: list[tuple[float, str, Path]] = []
    bad: list[tuple[Path, str]] = []
    for entry in entries:
        path = Path(entry.path)
        try:
            if entry.is_symlink() and not os.path.exists(entry.path):
                bad.append((path, _broken_link(entry.path)))
                continue
            if not entry.is_dir():
                continue
            info = os.stat(os.path.join(entry.path, MANIFEST_NAME))
        except FileNotFoundError:
            if os.path.islink(os.path.join(entry.path, MANIFEST_NAME)):
                bad.append(
                    (
                        path,
                        f"{MANIFEST_NAME}: {_broken_link(os.path.join(entry.path, MANIFEST_NAME))}",
                    )
                )
            continue
        except (OSError, ValueError) as exc:
            reason = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
            bad.append((path, f"{MANIFEST_NAME}: cannot be read ({reason})"))
            continue
        if stat.S_ISREG(info.st_mode):
            if info.st_size > 0:
                found.append((info.st_mtime, entry.name, path))
        else:
            bad.append(
                (path, f"{MANIFEST_NAME}: not a regular file ({file_kind(info.st_mode)}); refused")
            )
    return [p for _, _, p in sorted(found)], sorted(bad)


def _broken_link(path: str) -> str:
    try:
        os.stat(path)
    except OSError as exc:
        return f"a link that leads nowhere ({describe_os_error(exc)})"
    return "a link that leads nowhere"
