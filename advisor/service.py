"""The application layer: read each run once, derive its facts once, diagnose once.

The CLI, the TUI and the Python API all go through a :class:`Store`::

    store = Store("advisor-runs")
    analysis = store.analyse("latest")          # run + facts (siblings of its sweep included)
    report = store.diagnose("latest")            # the ranked findings, from the same facts
    rows = store.runs()                          # every run (unreadable ones listed as such)
    table = store.scaling_table("sweep-2026")    # strategy × workers

A ``Store`` caches what it read and derived, so a command that needs a run's summary and its
diagnosis, or every run of a store full of sweeps, reads each run directory once. Derivation and
diagnosis stay pure (:mod:`advisor.analysis`, :mod:`advisor.diagnosis`); only this module and
:mod:`advisor.store` touch the disk.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError, RunFormatError, RunNotFoundError
from advisor.store.paths import resolve_runs_dir

if TYPE_CHECKING:
    from advisor.analysis.overview import RunOverview
    from advisor.analysis.scaling import ScalingTable
    from advisor.analysis.scaling_points import Point
    from advisor.diagnosis.config import Config
    from advisor.diagnosis.report import Report, RunInfo
    from advisor.store.reader import Run
    from advisor.store.schema import Manifest
    from advisor.store.sweep import SweepRecord
    from advisor.store.trace_summary import TraceSummary

@dataclass
class Analysis:
    """One run and everything derived from it."""

    run: Run
    facts: dict[str, Any]
    errors: list[str] = field(default_factory=list)  # derivation errors (a broken fact area)

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def notes(self) -> list[str]:
        """Reader warnings (a truncated line, an unreadable summary) and derivation errors."""
        return [*self.run.warnings, *self.errors]

    def overview(self) -> RunOverview:
        from advisor.analysis.overview import overview

        return overview(self.run)


@dataclass
class RunRow:
    """One line of ``advisor runs``: a readable run, or an unreadable one with its reason."""

    run_id: str
    path: str
    status: str
    created: float | None = None
    name: str | None = None
    strategy: str | None = None
    workers: int | None = None
    samples_per_s: float | None = None
    samples_per_dollar: float | None = None
    sweep_id: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


class Store:
    """A run store (a directory of run directories) with the reads and derivations cached."""

    def __init__(self, runs_dir: str | os.PathLike[str] | None = None) -> None:
        self.root = resolve_runs_dir(runs_dir)
        self._runs: dict[Path, Run] = {}
        self._manifests: dict[Path, Manifest | None] = {}
        self._base: dict[Path, tuple[dict[str, Any], list[str]]] = {}
        self._points: dict[Path, Point] = {}
        self._analyses: dict[Path, Analysis] = {}
        self._sweeps: dict[tuple[Path, str], SweepRecord | None] = {}
        self._usage: dict[Path, Any] = {}

    # -- finding runs ---------------------------------------------------------------------------
    def resolve(self, ref: str | os.PathLike[str] | None) -> Path:
        """A run directory from a path, an id, a unique id prefix or ``latest``."""
        from advisor.store.reader import resolve_run

        return resolve_run(None if ref is None else str(ref), self.root)

    def run_dirs(self, root: Path | None = None) -> list[Path]:
        from advisor.store.reader import list_run_dirs

        return list_run_dirs(root or self.root)

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

    # -- facts ----------------------------------------------------------------------------------
    def analyse(self, ref: Run | str | os.PathLike[str] | None) -> Analysis:
        """The run and its facts; runs of the same sweep in the same store are its siblings."""
        from advisor.analysis.registry import DeriveContext, registry

        run = self.read(ref)
        key = _key(run.path)
        if key not in self._analyses:
            base, errors = self._base_facts(run)
            parent = key.parent
            sweep = self._sweep(parent, run.manifest.sweep_id)
            siblings = tuple(self._points_of_sweep(parent, run.manifest.sweep_id, exclude=key))
            usage = self._store_usage(parent)
            ctx = DeriveContext(sweep=sweep, siblings=siblings,
                                store_runs=usage.runs if usage else None,
                                store_bytes=usage.bytes if usage else None)
            facts, more = registry().derive_rest(run, base, ctx)
            self._analyses[key] = Analysis(run, facts, errors + more)
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

    def _point(self, run: Run) -> Point:
        from advisor.analysis.scaling_points import point_of

        key = _key(run.path)
        if key not in self._points:
            sweep = self._sweep(key.parent, run.manifest.sweep_id)
            self._points[key] = point_of(run, sweep, self._base_facts(run)[0])
        return self._points[key]

    def _points_of_sweep(self, parent: Path, sweep_id: str | None, exclude: Path | None = None) -> list[Point]:
        if not sweep_id:
            return []
        points = []
        for path in self.run_dirs(parent):
            key = _key(path)
            manifest = self.manifest(key)
            if key == exclude or manifest is None or manifest.sweep_id != sweep_id:
                continue
            try:
                points.append(self._point(self.read(key)))
            except AdvisorError:  # an unreadable sibling does not hide this run's facts
                continue
        return points

    def _sweep(self, parent: Path, sweep_id: str | None) -> SweepRecord | None:
        from advisor.store.sweep import SWEEP_FILE, read_sweep, sweep_dir

        if not sweep_id:
            return None
        key = (parent, sweep_id)
        if key not in self._sweeps:
            folder = sweep_dir(parent, sweep_id)
            try:
                self._sweeps[key] = read_sweep(folder) if (folder / SWEEP_FILE).is_file() else None
            except AdvisorError:  # a damaged sweep file: the manifests' labels still hold
                self._sweeps[key] = None
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
        baseline: Run | str | os.PathLike[str] | None = None,
        max_regression_pct: float = 5.0,
        generated_at: str | None = None,
    ) -> Report:
        """The ranked report of a run, from the facts :meth:`analyse` derived.

        ``select`` / ``extend_select`` / ``ignore`` take codes or prefixes and win over ``config``.
        With ``baseline`` (a run), the report carries the samples/s and samples/$ regression check.
        """
        from advisor.diagnosis import diagnose_facts, load_rules, resolve_settings
        from advisor.diagnosis.regression import compare
        from advisor.diagnosis.report import Settings

        analysis = self.analyse(ref)
        rules = load_rules(rules_dir)
        resolved = resolve_settings(rules, config, select=select, extend_select=extend_select,
                                    ignore=ignore, fail_on=fail_on, thresholds=thresholds)
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
        if baseline is not None:
            base = self.analyse(baseline)
            report.regression = compare(analysis.facts, base.facts, base.run_id, max_regression_pct)
        return report

    # -- the whole store ------------------------------------------------------------------------
    def runs(self, limit: int | None = None) -> list[RunRow]:
        """Every run of the store, oldest first (newest ``limit`` when given); unreadable ones too."""
        dirs = self.run_dirs()
        if limit:
            dirs = dirs[-limit:]
        rows = []
        for path in dirs:
            try:
                analysis = self.analyse(path)
            except AdvisorError as exc:
                rows.append(RunRow(run_id=path.name, path=str(path), status="unreadable", error=str(exc)))
                continue
            m = analysis.run.manifest
            rows.append(RunRow(
                run_id=m.run_id, path=str(path), status=analysis.run.status, created=m.created, name=m.name,
                strategy=m.strategy or "default", workers=m.num_workers,
                samples_per_s=analysis.facts.get("throughput.samples_per_s"),
                samples_per_dollar=analysis.facts.get("cost.samples_per_dollar"),
                sweep_id=m.sweep_id, tags=dict(m.tags),
            ))
        return rows

    def scaling_table(self, source: str | os.PathLike[str] | None = None,
                      price_per_hour: float | None = None, gpus_per_instance: int | None = None) -> ScalingTable:
        """The scaling table of a sweep id / sweep directory / runs directory / the latest sweep."""
        from advisor.analysis.scaling import build_table
        from advisor.store.sweep import SWEEP_FILE, list_sweeps, read_sweep, resolve_sweep

        overrides = {"price_per_hour": price_per_hour, "gpus_per_instance": gpus_per_instance}
        ref = None if source is None else str(source)
        if ref and Path(ref).is_dir():
            path = Path(ref)
            if (path / SWEEP_FILE).is_file():
                record = read_sweep(path)
                return self._sweep_table(path.parent.parent, record.sweep_id, overrides)
            if (path / "run.json").is_file():
                raise RunNotFoundError(f"{ref}: a single run; give its runs directory or its sweep id")
            points, failures = self.points(path, None)
            return build_table(points, f"runs in {path}", failures, **overrides)
        if ref is None and not list_sweeps(self.root):
            if not self.run_dirs():
                raise RunNotFoundError(f"{self.root}: no runs and no sweeps (run `advisor scale` first)")
            points, failures = self.points(self.root, None)
            return build_table(points, f"runs in {self.root}", failures, **overrides)
        try:
            return self._sweep_table(self.root, read_sweep(resolve_sweep(ref, self.root)).sweep_id, overrides)
        except RunNotFoundError:
            # A sweep made by hand (ADVISOR_SWEEP_ID set by the user) has runs but no sweep file.
            ids = {m.sweep_id for p in self.run_dirs() if (m := self.manifest(p)) is not None}
            if ref is not None and ref in ids:
                return self._sweep_table(self.root, ref, overrides)
            raise

    def _sweep_table(self, root: Path, sweep_id: str, overrides: dict[str, Any]) -> ScalingTable:
        from advisor.analysis.scaling import build_table

        points, failures = self.points(root, sweep_id)
        return build_table(points, f"sweep {sweep_id}", failures, **overrides)

    def points(self, root: Path | None = None, sweep_id: str | None = None) -> tuple[list[Point], list[Any]]:
        """Finished runs under ``root`` (of one sweep when ``sweep_id``) as points, and the failures."""
        from advisor.analysis.scaling import Failure

        root = root or self.root
        points: list[Point] = []
        failures: list[Failure] = []
        seen: set[str] = set()
        sweep_ids: set[str] = set()
        for path in self.run_dirs(root):
            manifest = self.manifest(path)
            if manifest is None:
                raise RunFormatError(f"{path}: unreadable manifest")
            if sweep_id is not None and manifest.sweep_id != sweep_id:
                continue
            run = self.read(path)
            seen.add(run.run_id)
            sid = manifest.sweep_id
            if sid:
                sweep_ids.add(sid)
            point = self._point(run)
            record = self._sweep(_key(root), sid)
            cfg = record.config(run.run_id) if record is not None else None
            if run.status == "finished" and (cfg is None or cfg.status != "failed"):
                points.append(point)
            else:
                failures.append(Failure(point.strategy, point.workers, run.run_id, point.repeat,
                                        (cfg.reason if cfg else None) or f"run {run.status}",
                                        cfg.hint if cfg else None, cfg.log_tail if cfg else None))
        if sweep_id is not None:
            sweep_ids.add(sweep_id)
        for sid in sorted(sweep_ids):  # configurations that failed before writing a run
            record = self._sweep(_key(root), sid)
            for cfg in record.configs if record is not None else []:
                if cfg.status == "failed" and cfg.run_id not in seen:
                    failures.append(Failure(cfg.strategy, cfg.workers, cfg.run_id, cfg.repeat,
                                            cfg.reason, cfg.hint, cfg.log_tail))
        return points, failures


    # -- profiles -------------------------------------------------------------------------------
    def summarize_traces(self, path: str | os.PathLike[str], *, into: str | None = None, force: bool = False,
                         timeout_s: float | None = None, memory_mb: int | None = None,
                         ) -> tuple[list[tuple[str, TraceSummary]], list[str]]:
        """Summaries of a profile (a file, session, log dir or run); ``into`` attaches it to a run.

        Returns ``[(where, summary)]`` and notes for people. A run's captures that already have a
        summary are read back unless ``force``.
        """
        from advisor.errors import TraceError
        from advisor.store.schema import MANIFEST_NAME, TraceRecord
        from advisor.traces.attach import attach, summarize_run
        from advisor.traces.summarize import summarize

        source = Path(path)
        results: list[tuple[str, TraceSummary]] = []
        notes: list[str] = []
        if into is not None:
            run_path = self.resolve(into)
            record, summary = attach(source, run_path, timeout_s=timeout_s, memory_mb=memory_mb)
            results.append((str(run_path / record.path), summary))
            notes.append(f"attached to run {run_path.name} as {record.path}")
        elif source.is_dir() and (source / MANIFEST_NAME).is_file():
            done = summarize_run(source, force=force, timeout_s=timeout_s, memory_mb=memory_mb)
            if not done:
                run = self.read(source)
                latest = {r.path: r for r in run.of_type(TraceRecord) if r.summary}
                for rec in latest.values():
                    if rec.summary in run.trace_summaries:
                        results.append((str(source / rec.path), run.trace_summaries[rec.summary]))
                notes.append("already summarised (use --force to summarise again)")
            for record, summary in done:
                results.append((str(source / record.path), summary))
                notes.append(f"recorded in run {source.name}")
        else:
            results.append((str(source), summarize(source, timeout_s=timeout_s, memory_mb=memory_mb)))
        if not results:
            raise TraceError(f"{source}: nothing to summarise")
        return results, notes


def _key(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(path))


def run_info(run: Run) -> RunInfo:
    """The report's description of a run."""
    from advisor.diagnosis.report import RunInfo

    m = run.manifest
    return RunInfo(
        run_id=m.run_id,
        path=str(run.path),
        name=m.name,
        status=run.status,
        created=m.created,
        backend=m.framework.backend,
        strategy=m.strategy,
        num_workers=m.num_workers,
        instance_type=m.instance_type,
        tags=dict(m.tags),
    )


# ---------------------------------------------------------------------------------------------
# One-call conveniences (each builds a Store for the call)


def analyse(run: Run | str | os.PathLike[str] | None = None,
            runs_dir: str | os.PathLike[str] | None = None) -> Analysis:
    """The facts of one run (``latest`` by default), its sweep's siblings included."""
    return Store(runs_dir).analyse(run)


def diagnose(run: Run | str | os.PathLike[str] | None = None,
             config: Config | str | os.PathLike[str] | Mapping[str, Any] | None = None,
             select: Iterable[str] | None = None, ignore: Iterable[str] | None = None,
             *, runs_dir: str | os.PathLike[str] | None = None, **options: Any) -> Report:
    """The diagnosis of one run: ``advisor.diagnose("latest")``; options as :meth:`Store.diagnose`."""
    return Store(runs_dir).diagnose(run, config, select, ignore, **options)
