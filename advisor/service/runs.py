"""``CachedRuns``: a run store with every read, derivation and diagnosis cached (see
:mod:`advisor.service`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError
from advisor.service.remote import Mirrors
from advisor.service.run_rows import Analysis, RunRow, run_info
from advisor.store.paths import resolve_runs_dir

if TYPE_CHECKING:
    from advisor.analysis.scaling_points import Point
    from advisor.diagnosis.config import Config
    from advisor.diagnosis.report import Report
    from advisor.store.reader import Run
    from advisor.store.schema import Manifest
    from advisor.store.sweep import SweepRecord


class CachedRuns:
    """A run store (a directory of run directories) with the reads and derivations cached.

    ``runs_dir`` may be ``s3://bucket/prefix``: the store is then listed in S3 and read through a
    local mirror that only downloads what changed (:mod:`advisor.cloud.s3store`).
    """

    def __init__(self, runs_dir: str | os.PathLike[str] | None = None) -> None:
        from advisor.store.paths import store_url

        self.url = store_url(runs_dir)
        self.remote: Any = None
        self.mirrors = Mirrors()  # the S3 stores read through local folders, to push changes back
        if self.url is not None:
            from advisor.cloud.s3store import S3Store

            self.remote = S3Store(self.url)
            self.root = self.remote.mirror()
            self.mirrors.add(self.root, self.remote)
        else:
            self.root = resolve_runs_dir(runs_dir)
        self._runs: dict[Path, Run] = {}
        self._manifests: dict[Path, Manifest | None] = {}
        self._base: dict[Path, tuple[dict[str, Any], list[str]]] = {}
        self._points: dict[Path, Point] = {}
        self._analyses: dict[Path, Analysis] = {}
        self._sweeps: dict[tuple[Path, str], SweepRecord | None] = {}
        self._sweep_errors: dict[tuple[Path, str], str] = {}  # why a sweep file could not be read
        self._usage: dict[Path, Any] = {}
        self._listings: dict[Path, tuple[list[Path], list[tuple[Path, str]]]] = {}
        self._members: dict[Path, dict[str, list[Path]]] = {}

    # -- finding runs ---------------------------------------------------------------------------
    def resolve(self, ref: str | os.PathLike[str] | None) -> Path:
        """A run directory from a path, an id, a unique id prefix, ``latest`` or an ``s3://``
        URL."""
        from advisor.store.run_refs import resolve_run

        if ref is not None and is_store_url(ref):
            ref = self.localize(str(ref))
        return resolve_run(None if ref is None else str(ref), self.root)

    def localize(self, target: str | None) -> str | None:
        """An ``s3://`` run or store as the folder of its local mirror (other targets unchanged)."""
        return self.mirrors.localize(target, store_url=self.url, store_root=self.root)

    def push(self, run_path: str | os.PathLike[str]) -> list[str]:
        """Upload a run changed by a command (an attached check or profile) back to its S3 store."""
        return self.mirrors.push(run_path)

    def run_dirs(self, root: Path | None = None) -> list[Path]:
        """Run directories under ``root`` (default: the store), oldest first; listed once."""
        return self._scan(root)[0]

    def unlisted(self, root: Path | None = None) -> list[tuple[Path, str]]:
        """Entries under ``root`` that should be runs but cannot be read as one, with the reason
        (a link loop, a FIFO as ``run.json``: see :func:`advisor.store.scan.scan_store`)."""
        return self._scan(root)[1]

    def _scan(self, root: Path | None) -> tuple[list[Path], list[tuple[Path, str]]]:
        from advisor.store.scan import scan_store

        key = _key(root or self.root)
        if key not in self._listings:
            self._listings[key] = scan_store(key)
        return self._listings[key]

    def sweep_members(self, parent: Path, sweep_id: str) -> list[Path]:
        """The run directories under ``parent`` whose manifest names ``sweep_id`` (indexed once)."""
        key = _key(parent)
        if key not in self._members:
            index: dict[str, list[Path]] = {}
            for path in self.run_dirs(key):
                manifest = self.manifest(path)
                if manifest is not None and manifest.sweep_id:
                    index.setdefault(manifest.sweep_id, []).append(_key(path))
            self._members[key] = index
        return self._members[key].get(sweep_id, [])

    def read(self, ref: Run | str | os.PathLike[str] | None) -> Run:
        """The run (read once; later calls return the same object)."""
        from advisor.store.reader import Run, RunReader

        if isinstance(ref, Run):
            self._runs.setdefault(_key(ref.path), ref)
            return ref
        path = _key(self.resolve(ref))
        if path not in self._runs:
            self._runs[path] = RunReader(path).read()
        return self._runs[path]

    def manifest(self, path: Path) -> Manifest | None:
        """A run's manifest (read once), None when unreadable."""
        from advisor.store.reader import RunReader

        key = _key(path)
        if key in self._runs:
            return self._runs[key].manifest
        if key not in self._manifests:
            try:
                self._manifests[key] = RunReader(key).read_manifest()
            except AdvisorError:
                self._manifests[key] = None
        return self._manifests[key]

    def forget(self, ref: Run | str | os.PathLike[str], *, everything: bool = False) -> None:
        """Drop a run's records, facts and analysis (by run or directory) from the cache.

        ``everything`` drops its manifest and scaling point too. Long listings stay small in
        memory this way, and a growing run is read afresh."""
        from advisor.store.reader import Run

        key = _key(ref.path if isinstance(ref, Run) else ref)
        for cache in (self._runs, self._base, self._analyses):
            cache.pop(key, None)
        if everything:
            self._manifests.pop(key, None)
            self._points.pop(key, None)

    # -- facts ----------------------------------------------------------------------------------
    def analyse(self, ref: Run | str | os.PathLike[str] | None) -> Analysis:
        """The run and its facts; runs of the same sweep in the same store are its siblings."""
        from advisor.analysis.registry import DeriveContext, registry

        run = self.read(ref)
        key = _key(run.path)
        if key not in self._analyses:
            base, errors = self._base_facts(run)
            parent = key.parent
            sweep = self.sweep(parent, run.manifest.sweep_id)
            unread = self._sweep_errors.get((parent, run.manifest.sweep_id or ""))
            siblings = tuple(self._points_of_sweep(parent, run.manifest.sweep_id, exclude=key))
            usage = self._store_usage(parent)
            ctx = DeriveContext(
                sweep=sweep,
                siblings=siblings,
                store_runs=usage.runs if usage else None,
                store_bytes=usage.bytes if usage else None,
            )
            facts, more = registry().derive_rest(run, base, ctx)
            self._analyses[key] = Analysis(run, facts, errors + more + ([unread] if unread else []))
        return self._analyses[key]

    def facts(self, ref: Run | str | os.PathLike[str] | None) -> tuple[dict[str, Any], list[str]]:
        analysis = self.analyse(ref)
        return analysis.facts, analysis.errors

    def _base_facts(self, run: Run) -> tuple[dict[str, Any], list[str]]:
        from advisor.analysis.registry import registry

        key = _key(run.path)
        if key not in self._base:
            self._base[key] = registry().derive_base(run)
        return self._base[key]

    def point(self, run: Run) -> Point:
        """The run as a point of its sweep (from its base facts; made once)."""
        from advisor.analysis.scaling_points import point_of

        key = _key(run.path)
        if key not in self._points:
            sweep = self.sweep(key.parent, run.manifest.sweep_id)
            self._points[key] = point_of(run, sweep, self._base_facts(run)[0])
        return self._points[key]

    def _points_of_sweep(
        self, parent: Path, sweep_id: str | None, exclude: Path | None = None
    ) -> list[Point]:
        points = []
        for key in self.sweep_members(parent, sweep_id) if sweep_id else []:
            if key == exclude:
                continue
            try:
                points.append(self.point(self.read(key)))
            except AdvisorError:  # an unreadable sibling does not hide this run's facts
                continue
        return points

    def sweep(self, parent: Path, sweep_id: str | None) -> SweepRecord | None:
        """The sweep file of ``sweep_id`` in the store at ``parent`` (read once), None if there is
        none."""
        from advisor.store.schema import RUN_ID_RE
        from advisor.store.sweep import SWEEP_FILE, read_sweep, sweep_dir

        if not sweep_id or not RUN_ID_RE.match(sweep_id):  # no sweep id: no sweep file to find
            return None
        key = (parent, sweep_id)
        if key not in self._sweeps:
            folder = sweep_dir(parent, sweep_id)
            try:
                self._sweeps[key] = read_sweep(folder) if (folder / SWEEP_FILE).is_file() else None
            except (
                AdvisorError,
                OSError,
            ) as exc:  # a damaged sweep file: the manifests' labels still hold
                self._sweeps[key] = None
                reason = (
                    str(exc)
                    if isinstance(exc, AdvisorError)
                    else f"{folder / SWEEP_FILE}: {exc.strerror or exc}"
                )
                self._sweep_errors[key] = f"{reason}; the run is read without its sweep file"
        return self._sweeps[key]

    def _store_usage(self, parent: Path) -> Any:
        from advisor.store.usage import store_usage

        if parent not in self._usage:
            self._usage[parent] = store_usage(parent)
        return self._usage[parent]

    # -- diagnosis ------------------------------------------------------------------------------
    def diagnose(
        self,
        ref: Run | str | os.PathLike[str] | None,
        config: Config | str | os.PathLike[str] | Mapping[str, Any] | None = None,
        select: Iterable[str] | None = None,
        ignore: Iterable[str] | None = None,
        *,
        extend_select: Iterable[str] | None = None,
        fail_on: str | None = None,
        thresholds: Mapping[str, Mapping[str, Any]] | None = None,
        rules_dir: str | os.PathLike[str] | None = None,
        baseline: Run | Report | str | os.PathLike[str] | None = None,
        max_regression_pct: float = 5.0,
        generated_at: str | None = None,
    ) -> Report:
        """The ranked report of a run, from the facts :meth:`analyse` derived.

        ``select`` / ``extend_select`` / ``ignore`` take codes or prefixes and win over ``config``.
        With ``baseline`` (a run, or a saved :class:`Report`), the report carries the samples/s and
        samples/$ regression check.
        """
        from advisor.diagnosis import diagnose_facts, load_rules, resolve_settings
        from advisor.diagnosis.regression import compare
        from advisor.diagnosis.report import Settings

        analysis = self.analyse(ref)
        rules = load_rules(rules_dir)
        resolved = resolve_settings(
            rules,
            config,
            select=select,
            extend_select=extend_select,
            ignore=ignore,
            fail_on=fail_on,
            thresholds=thresholds,
        )
        chosen = [r for r in rules if r.code in set(resolved.codes)]
        report = diagnose_facts(
            analysis.facts,
            chosen,
            run=run_info(analysis.run),
            thresholds=resolved.thresholds,
            min_measured_steps=resolved.min_measured_steps,
            errors=analysis.notes,
            settings=Settings(
                select=resolved.select,
                extend_select=resolved.extend_select,
                ignore=resolved.ignore,
                fail_on=resolved.fail_on,  # type: ignore[arg-type]
                min_measured_steps=resolved.min_measured_steps,
                thresholds=resolved.thresholds,
                config_file=resolved.config_file,
            ),
            generated_at=generated_at,
        )
        report.incomplete = list(analysis.run.incomplete)
        if analysis.run.problems:  # a verdict on doubted records says so
            from advisor.analysis.doubts import mark

            mark(report.findings, analysis.run.problems)
        if baseline is not None:
            from advisor.diagnosis.report import Report as SavedReport

            if isinstance(
                baseline, SavedReport
            ):  # a report saved as JSON: its facts are the baseline
                saved = {name: fact.value for name, fact in baseline.facts.items()}
                report.regression = compare(
                    analysis.facts, saved, baseline.run.run_id, max_regression_pct
                )
            else:
                base = self.analyse(baseline)
                report.regression = compare(
                    analysis.facts, base.facts, base.run_id, max_regression_pct
                )
                from advisor.service.comparisons import noise_aware

                report.regression = noise_aware(report, analysis, base, chosen, resolved)
        return report

    # -- the whole store ------------------------------------------------------------------------
    def runs(self, limit: int | None = None) -> list[RunRow]:
        """Every run of the store, oldest first (newest ``limit`` when given); unreadable ones
        too."""
        dirs = self.run_dirs()
        if limit:
            dirs = dirs[-limit:]
        rows = [RunRow.unreadable(path, reason) for path, reason in self.unlisted()]
        for path in dirs:
            try:
                analysis = self.analyse(path)
            except Exception as exc:  # noqa: BLE001 — an unreadable run is listed, the rest too
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                rows.append(RunRow.unreadable(path, reason))
                continue
            m = analysis.run.manifest
            rows.append(RunRow.of(path, m, analysis.run.status, analysis.facts))
        return rows


def _key(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(path))


def is_store_url(value: str | os.PathLike[str]) -> bool:
    from advisor.store.paths import is_store_url as check

    return check(value)
