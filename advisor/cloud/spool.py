"""The spool: a run is written locally first and uploaded to its S3 store in the background.

``AdvisorCallback(runs_dir="s3://bucket/prefix")`` writes each worker's run into
``<spool>/rank-<r>/<run_id>/`` (``$ADVISOR_SPOOL_DIR``, else
``~/.cache/advisor/spool/<bucket>/<prefix>``) and a :class:`RunUploader` thread sends what changed
at every epoch end and at train end, with retries and exponential backoff. S3 checks each upload
against its MD5 and the uploader records what it confirmed; the spool folder is removed only once
every file of the ended run is confirmed. An upload failure is logged once and never reaches
``fit()``; what could not be sent stays in the spool until ``advisor upload`` (or the next training
run into the same store) sends it.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import socket
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.cloud.s3store import S3Store, local_folder
from advisor.errors import AdvisorError

log = logging.getLogger("advisor")

STATE_FILE = ".advisor-spool.json"
MAX_BACKOFF_S = 60.0
FINAL_WAIT_ENV = "ADVISOR_UPLOAD_WAIT_S"
DEFAULT_FINAL_WAIT_S = 120.0  # at interpreter exit, wait this long for the last uploads


def spool_root(url: str, rank: int) -> Path:
    """The local store a worker of ``rank`` writes into for the S3 store ``url``."""
    return local_folder("spool", url) / f"rank-{rank}"


@dataclass
class SpoolState:
    """``.advisor-spool.json`` in a spooled run folder: whose it is and what S3 confirmed."""

    url: str
    run_id: str
    rank: int
    pid: int
    hostname: str
    closed: bool = False
    confirmed: dict[str, list[int]] = field(default_factory=dict)  # rel → [size, mtime_ns]

    @classmethod
    def load(cls, folder: Path) -> SpoolState | None:
        try:
            data = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
            return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
        except (OSError, ValueError, TypeError):
            return None

    def save(self, folder: Path) -> None:
        tmp = folder / f"{STATE_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(self.__dict__, sort_keys=True), encoding="utf-8")
        os.replace(tmp, folder / STATE_FILE)

    def writer_alive(self) -> bool:
        """Is the process that writes this run still running (on this host)?"""
        if self.closed:
            return False
        if self.hostname != socket.gethostname():
            return True  # cannot tell: treat as alive, never remove another host's spool
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def sync_folder(folder: Path, state: SpoolState, store: S3Store) -> list[str]:
    """Upload what changed since the last confirmed upload; record each confirmation."""

    def changed(rel: str, stat: os.stat_result) -> bool:
        return state.confirmed.get(rel) != [stat.st_size, stat.st_mtime_ns]

    def done(rel: str, stat: os.stat_result, sent: int) -> None:
        # A record file is sent up to its last newline: confirmed only when that was all of it.
        size = stat.st_size if sent == stat.st_size or not rel.endswith(".jsonl") else sent
        state.confirmed[rel] = [size, stat.st_mtime_ns]
        state.save(folder)

    return store.upload_tree(folder, state.run_id, changed=changed, done=done)


def fully_confirmed(folder: Path, state: SpoolState) -> bool:
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            stat = path.stat()
            if state.confirmed.get(rel) != [stat.st_size, stat.st_mtime_ns]:
                return False
    return True


class RunUploader:
    """Background uploads of one worker's spooled run (see the module docs)."""

    def __init__(
        self,
        url: str,
        folder: Path,
        run_id: str,
        rank: int,
        *,
        store: S3Store | None = None,
        note: Any = None,
        clock: Any = time.monotonic,
    ) -> None:
        self.url = url
        self.folder = folder
        self.store = store or S3Store(url, budget="training")
        self.state = SpoolState.load(folder) or SpoolState(
            url, run_id, rank, os.getpid(), socket.gethostname()
        )
        self.state.save(folder)
        self.note = note  # callable(message) → an event in the run while it is open
        self.clock = clock
        self.failures = 0
        self.last_error: str | None = None
        self.uploaded = 0
        self.done = threading.Event()  # set once the ended run is confirmed and its spool removed
        self._wake = threading.Event()
        self._finishing = False
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="advisor-upload", daemon=True)
        self._thread.start()
        _ACTIVE.add(self)

    def request(self) -> None:
        """Upload what changed, soon (epoch end). Never blocks."""
        self._wake.set()

    def finish(self) -> None:
        """The writer closed: upload the rest, then remove the spool once confirmed. Never
        blocks."""
        self._finishing = True
        self._wake.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the ended run is uploaded and its spool removed; False on timeout."""
        return self.done.wait(timeout)

    def stop(self) -> None:
        self._stop = True
        self._wake.set()

    def _run(self) -> None:
        backoff = 0.0
        while not self._stop:
            self._wake.wait(backoff if backoff else None)
            self._wake.clear()
            if self._stop:
                return
            finishing = self._finishing
            try:
                self.uploaded += len(sync_folder(self.folder, self.state, self.store))
            except (AdvisorError, OSError) as exc:
                backoff = min(MAX_BACKOFF_S, max(1.0, backoff * 2))
                self._failed(exc, backoff)
                continue
            except Exception as exc:  # never let a thread traceback reach the user's console
                backoff = min(MAX_BACKOFF_S, max(1.0, backoff * 2))
                self._failed(exc, backoff)
                continue
            if self.failures:
                log.info("advisor: upload to %s works again", self.url)
            self.failures, backoff = 0, 0.0
            if finishing:
                self.state.closed = True
                self.state.save(self.folder)
                if fully_confirmed(self.folder, self.state):
                    shutil.rmtree(self.folder, ignore_errors=True)
                    self.done.set()
                    _ACTIVE.discard(self)
                    return
                backoff = 1.0  # the folder changed during the upload: once more

    def _failed(self, exc: BaseException, backoff: float) -> None:
        self.failures += 1
        message = str(exc) if isinstance(exc, AdvisorError) else f"{type(exc).__name__}: {exc}"
        if message != self.last_error:
            self.last_error = message
            log.warning(
                "advisor: upload to %s failed (%s); the run is kept in %s and retried "
                "(`advisor upload` sends it later)",
                self.url,
                message,
                self.folder,
            )
            if self.note is not None:
                try:
                    self.note(f"upload to {self.url} failed: {message}; kept in the spool, retried")
                except Exception:
                    pass
        else:
            log.debug("advisor: upload retry %d failed; next in %.0f s", self.failures, backoff)


_ACTIVE: weakref.WeakSet[RunUploader] = weakref.WeakSet()


def start_upload(
    url: str, folder: Path, run_id: str, rank: int, note: Any = None
) -> RunUploader | None:
    """The background uploader of a run being written in ``folder``, and a late upload of what
    earlier processes left in the spool. None (and one warning) when it cannot start: the run is
    still written to the spool, so nothing is lost."""
    try:
        uploader = RunUploader(url, folder, run_id, rank, note=note)
        resume_pending(url, skip=folder)
        return uploader
    except Exception as exc:
        log.warning(
            "advisor: no upload to %s (%s: %s); the run stays in %s",
            url,
            type(exc).__name__,
            exc,
            folder,
        )
        return None


def wait_for_uploads(timeout: float) -> list[RunUploader]:
    """Wait up to ``timeout`` seconds in total for every active upload; returns the unfinished."""
    deadline = time.monotonic() + timeout
    pending = [u for u in list(_ACTIVE) if u._finishing]
    for uploader in pending:
        uploader.wait(max(0.0, deadline - time.monotonic()))
    return [u for u in pending if not u.done.is_set()]


def _at_exit() -> None:
    try:
        wait_s = float(os.environ.get(FINAL_WAIT_ENV, DEFAULT_FINAL_WAIT_S))
    except ValueError:
        wait_s = DEFAULT_FINAL_WAIT_S
    for uploader in wait_for_uploads(wait_s):
        log.warning(
            "advisor: run %s is not uploaded to %s (%s); it is kept in %s: run `advisor --runs-dir "
            "%s upload` to send it",
            uploader.state.run_id,
            uploader.url,
            uploader.last_error or "still uploading",
            uploader.folder,
            uploader.url,
        )
        uploader.stop()


atexit.register(_at_exit)


# ---------------------------------------------------------------------------------------------
# Later uploads: what earlier processes left in the spool


@dataclass
class Pending:
    folder: Path
    state: SpoolState


def pending(url: str) -> list[Pending]:
    """Spooled runs of the store ``url`` that are not (fully) uploaded, oldest first."""
    base = local_folder("spool", url)
    found: list[Pending] = []
    for rank_dir in sorted(base.glob("rank-*")):
        for folder in sorted(p for p in rank_dir.iterdir() if p.is_dir()):
            state = SpoolState.load(folder)
            if state is not None and state.url.rstrip("/") == url.rstrip("/"):
                found.append(Pending(folder, state))
    return sorted(found, key=lambda p: p.folder.stat().st_mtime)


def upload_pending(
    url: str, store: S3Store | None = None, skip: Path | None = None
) -> list[tuple[Pending, int, bool]]:
    """Upload every pending run of ``url`` now; remove the spools of ended runs once confirmed.

    Returns (pending run, files sent, spool removed). A run still being written elsewhere on
    this host is uploaded but kept. The first failure is raised (a one-line CloudError).
    """
    store = store or S3Store(url)
    results: list[tuple[Pending, int, bool]] = []
    for item in pending(url):
        if skip is not None and item.folder.resolve() == skip.resolve():
            continue
        sent = sync_folder(item.folder, item.state, store)
        removed = False
        if not item.state.writer_alive() and fully_confirmed(item.folder, item.state):
            shutil.rmtree(item.folder, ignore_errors=True)
            removed = True
        results.append((item, len(sent), removed))
    return results


def resume_pending(url: str, skip: Path | None = None) -> threading.Thread | None:
    """Upload, on a background thread, the runs that earlier processes left in the spool."""
    if not [p for p in pending(url) if skip is None or p.folder.resolve() != skip.resolve()]:
        return None

    def work() -> None:
        try:
            done = upload_pending(url, S3Store(url, budget="training"), skip=skip)
            if done:
                log.info("advisor: uploaded %d run(s) left in the spool to %s", len(done), url)
        except Exception as exc:  # tried again by the next run or `advisor upload`
            log.info("advisor: runs left in the spool of %s not uploaded yet (%s)", url, exc)

    thread = threading.Thread(target=work, name="advisor-upload-pending", daemon=True)
    thread.start()
    return thread
