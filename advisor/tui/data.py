"""The TUI's one door to the application layer: a :class:`~advisor.service.RunService` behind a
lock, and the exports. No textual here: screens call it from worker threads, tests call it directly.

Every read goes through ``service`` (read once, derive once, diagnose once); the lock keeps the
background listing and a screen's request from deriving the same run at the same time. Errors a
user can cause arrive as :class:`~advisor.errors.AdvisorError`; anything else is wrapped into
one so a screen shows a line, never a traceback (:func:`attempt`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from advisor.errors import AdvisorError
from advisor.tui.model import ExportResult

if TYPE_CHECKING:
    from advisor.analysis.comparison_model import RunComparison
    from advisor.analysis.scaling import ScalingTable
    from advisor.diagnosis.config import Config
    from advisor.diagnosis.report import Report
    from advisor.service.listing import RunDigest, Target
    from advisor.service.live import LiveRun
    from advisor.service.run_service import RunRow

T = TypeVar("T")

DEFAULT_EXPORT_DIR = "advisor-export"


class TuiError(AdvisorError):
    """Something the TUI could not do, said in one line."""


def attempt(call: Callable[[], T]) -> T:
    """Run ``call``; an unexpected exception becomes a one-line :class:`TuiError`."""
    try:
        return call()
    except AdvisorError:
        raise
    except Exception as exc:
        raise TuiError(f"internal error: {type(exc).__name__}: {exc}") from exc


class TuiData:
    """The store the TUI shows, its diagnosis settings, and where exports go."""

    def __init__(
        self,
        runs_dir: str | os.PathLike[str] | None = None,
        *,
        config: Config | None = None,
        export_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        from advisor.service import RunService

        self.store = RunService(runs_dir)
        self.config = config
        self.export_dir = Path(export_dir if export_dir is not None else DEFAULT_EXPORT_DIR)
        self.lock = threading.RLock()
        self._reports: dict[str, Report] = {}

    @property
    def root(self) -> Path:
        return self.store.root

    def reload(self) -> None:
        """Forget everything read so far (new runs, runs that changed)."""
        from advisor.service import RunService

        with self.lock:
            self.store = RunService(self.store.root)
            self._reports.clear()

    # -- reading ----------------------------------------------------------------------------------
    def entries(self) -> list[RunRow]:
        from advisor.service.listing import entries

        with self.lock:
            return attempt(lambda: entries(self.store))

    def digest(self, path: str) -> RunDigest:
        from advisor.service.listing import digest

        with self.lock:
            return attempt(lambda: digest(self.store, path, self.config))

    def report(self, path: str, *, fresh: bool = False) -> Report:
        """The diagnosis of a run (kept: the screens come back to it); ``fresh`` reads it again,
        as does a run that was running when it was read."""
        with self.lock:
            kept = self._reports.get(path)
            if fresh or (kept is not None and kept.run.status == "running"):
                self.store.forget(path, everything=True)
                self._reports.pop(path, None)
            if path not in self._reports:
                self._reports[path] = attempt(lambda: self.store.diagnose(path, self.config))
                self.store.forget(path)
            return self._reports[path]

    def comparison(self, baseline: str, path: str) -> RunComparison | None:
        """``path`` against ``baseline``, part by part against their noise (None when the runs
        cannot be compared: no samples/s on one of them)."""
        with self.lock:
            try:
                report = self.store.diagnose(path, self.config, baseline=baseline)
            except AdvisorError:
                return None
        return report.regression.comparison if report.regression else None

    def rule_docs(self, code: str) -> Mapping[str, Any] | None:
        """The rule's documentation sections (what, why, how, references), if it is a known rule."""
        from advisor.diagnosis.rules import load_rules

        rule = next((r for r in attempt(load_rules) if r.code == code), None)
        return rule.docs if rule is not None else None

    def table(self, sweep: str | None) -> ScalingTable:
        """The scaling table of a sweep id (None: every run of the store)."""
        with self.lock:
            return attempt(
                lambda: self.store.scaling_table(sweep if sweep else str(self.store.root))
            )

    def run_status(self, path: str) -> str:
        """A run's status now (running, finished, failed, killed or unreadable)."""
        from advisor.service.listing import run_status

        return run_status(path)

    def sweep_of(self, path: str) -> str | None:
        """The sweep id a run belongs to (None for a run of its own)."""
        with self.lock:
            manifest = self.store.manifest(Path(path))
        return manifest.sweep_id if manifest is not None else None

    def live(self, path: str) -> LiveRun:
        from advisor.service.live import LiveRun

        return attempt(lambda: LiveRun(path))

    # -- exports ----------------------------------------------------------------------------------
    def export_report(self, report: Report) -> ExportResult:
        """The run's JSON report (the same document as ``advisor export``)."""
        from advisor.render import render

        path = self._out(f"{report.run.run_id}.report.json")
        _write(path, render(report, "json"))
        return ExportResult([str(path)])

    def export_table(self, table: ScalingTable, name: str) -> ExportResult:
        """The scaling report as JSON (``advisor report --format json``; it can be reloaded)."""
        from advisor.render.scaling import render_table

        path = self._out(f"{name}.scaling.json")
        _write(path, render_table(table, "json"))
        return ExportResult([str(path)])

    def export_plots(
        self, name: str, text_plots: Mapping[str, str], table: ScalingTable | None = None
    ) -> ExportResult:
        """The screen's plots as text (what the terminal shows) and, for a scaling table, as PNG
        when matplotlib is installed (the ``report`` extra)."""
        result = ExportResult()
        folder = self._out(f"{name}-plots")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TuiError(f"{folder}: cannot create the plot directory ({exc})") from None
        for plot, text in text_plots.items():
            path = folder / f"{plot}.txt"
            _write(path, text)
            result.written.append(str(path))
        if table is not None:
            from advisor.render.plots import write_plots

            try:
                written, skipped = write_plots(table, folder)
            except ImportError:
                result.skipped.append(
                    "PNG plots need matplotlib: pip install 'keras-advisor[report]'"
                )
            else:
                result.written += [str(p) for p in written]
                result.skipped += skipped
        return result

    def _out(self, name: str) -> Path:
        try:
            self.export_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TuiError(
                f"{self.export_dir}: cannot create the export directory ({exc})"
            ) from None
        return self.export_dir / name


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise TuiError(f"{path}: cannot write ({exc})") from None


def resolve(target: str | None, runs_dir: str | os.PathLike[str] | None) -> Target:
    """What ``advisor tui TARGET`` names: a runs directory, a run or a sweep."""
    from advisor.service.listing import resolve_target

    return resolve_target(target, runs_dir)
