"""Scaling tables from a store: which runs are the points of a sweep, and which failed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError, RunNotFoundError

if TYPE_CHECKING:
    from advisor.analysis.scaling import Failure, ScalingTable
    from advisor.analysis.scaling_points import Point
    from advisor.service.runs import CachedRuns
    from advisor.store.reader import Run


def scaling_table(
    store: CachedRuns,
    source: str | os.PathLike[str] | None = None,
    price_per_hour: float | None = None,
    gpus_per_instance: int | None = None,
) -> ScalingTable:
    """The scaling table of a sweep id / sweep directory / runs directory / the latest sweep."""
    from advisor.analysis.scaling import build_table
    from advisor.store.sweep import SWEEP_FILE, list_sweeps, read_sweep, resolve_sweep

    overrides: dict[str, Any] = {
        "price_per_hour": price_per_hour,
        "gpus_per_instance": gpus_per_instance,
    }
    ref = None if source is None else str(source)
    if ref and Path(ref).is_dir():
        path = Path(ref)
        if (path / SWEEP_FILE).is_file():
            record = read_sweep(path)
            return _sweep_table(store, path.parent.parent, record.sweep_id, overrides)
        if (path / "run.json").is_file():
            raise RunNotFoundError(f"{ref}: a single run; give its runs directory or its sweep id")
        points, failures = sweep_points(store, path, None)
        return advise(store, build_table(points, f"runs in {path}", failures, **overrides), path)
    if ref is None and not list_sweeps(store.root):
        if not store.run_dirs():
            raise RunNotFoundError(
                f"{store.root}: no runs and no sweeps (run `advisor scale` first)"
            )
        points, failures = sweep_points(store, store.root, None)
        return advise(
            store, build_table(points, f"runs in {store.root}", failures, **overrides), store.root
        )
    try:
        return _sweep_table(
            store, store.root, read_sweep(resolve_sweep(ref, store.root)).sweep_id, overrides
        )
    except RunNotFoundError:
        # A sweep made by hand (ADVISOR_SWEEP_ID set by the user) has runs but no sweep file.
        ids = {m.sweep_id for p in store.run_dirs() if (m := store.manifest(p)) is not None}
        if ref is not None and ref in ids:
            return _sweep_table(store, store.root, ref, overrides)
        raise


def _sweep_table(
    store: CachedRuns, root: Path, sweep_id: str, overrides: dict[str, Any]
) -> ScalingTable:
    from advisor.analysis.scaling import build_table

    points, failures = sweep_points(store, root, sweep_id)
    return advise(store, build_table(points, f"sweep {sweep_id}", failures, **overrides), root)


def advise(store: CachedRuns, table: ScalingTable, root: Path | None = None) -> ScalingTable:
    """The table with its recommendations (``analysis.scaling_advice``) and, where the runs are
    in the store under ``root``, the D6 findings of each configuration's runs; a recommendation
    lists the codes found on the runs of the configuration it names."""
    from advisor.analysis.scaling import SweepFinding
    from advisor.analysis.scaling_advice import advice_notes, recommend

    table.recommendations = recommend(table)
    table.notes += advice_notes(table, table.recommendations)
    if root is None:
        return table
    findings: list[SweepFinding] = []
    for row in table.rows:
        for run_id in row.run_ids:
            path = Path(root) / run_id
            if not (path / "run.json").is_file():
                continue
            report = store.diagnose(path, select=["D6"])
            for f in report.failures:
                findings.append(
                    SweepFinding(
                        code=f.code,
                        name=f.name,
                        severity=f.severity,
                        strategy=row.strategy,
                        workers=row.workers,
                        run_id=run_id,
                        message=f.message,
                        impact=f.impact,
                        evidence={e.fact: e.value for e in f.evidence},
                    )
                )
    table.findings = findings
    for row in table.rows:
        if any(
            f.code == "D651" and f.strategy == row.strategy and f.workers == row.workers
            for f in findings
        ):
            row.straggler = _straggler_name(row)
    for rec in table.recommendations:
        rec.findings = sorted(
            {f.code for f in findings if f.strategy == rec.strategy and f.workers == rec.workers}
        )
    return table


def _straggler_name(row: Any) -> str:
    where = f" on {row.straggler_host}" if row.straggler_host else ""
    return f"rank {row.straggler_rank}{where}"


def sweep_points(
    store: CachedRuns, root: Path, sweep_id: str | None
) -> tuple[list[Point], list[Failure]]:
    """Finished runs under ``root`` (of one sweep when ``sweep_id``) as points, and the failures."""
    from advisor.analysis.scaling import Failure

    found: list[Point] = []
    failures: list[Failure] = []
    seen: set[str] = set()
    sweep_ids: set[str] = set()
    if sweep_id is None:  # every run of the store: what cannot be a run is named, not passed over
        failures.extend(
            Failure("unknown", 0, path.name, None, f"unreadable: {reason}")
            for path, reason in store.unlisted(root)
        )
    for path in store.run_dirs(root):
        manifest = store.manifest(path)
        if manifest is None:  # listed as a failure, the others still make the table
            if sweep_id is None:
                failures.append(Failure("unknown", 0, path.name, None, _unreadable(path)))
            continue
        if sweep_id is not None and manifest.sweep_id != sweep_id:
            continue
        try:
            run = store.read(path)
        except AdvisorError as exc:
            failures.append(Failure("unknown", 0, path.name, None, f"unreadable: {exc}"))
            continue
        seen.add(run.run_id)
        sid = manifest.sweep_id
        if sid:
            sweep_ids.add(sid)
        point = store.point(run)
        record = store.sweep(Path(os.path.abspath(root)), sid)
        cfg = record.config(run.run_id) if record is not None else None
        failure = _failure(run, point, manifest.num_workers, cfg)
        if failure is None:
            found.append(point)
        else:
            failures.append(failure)
    if sweep_id is not None:
        sweep_ids.add(sweep_id)
    failures += _not_run(store, root, sweep_ids, seen)
    return found, failures


def _failure(run: Run, point: Point, num_workers: int, cfg: Any) -> Failure | None:
    """Why a run read from the store is left out of the table (None: it is a point of it): ranks
    missing, damaged data, or a run that did not finish (or whose configuration failed)."""
    from advisor.analysis.scaling import Failure
    from advisor.store.status import status_label

    missing = [r for r in range(num_workers or 1) if r not in run.ranks]
    if run.status == "finished" and (cfg is None or cfg.status != "failed") and missing:
        return Failure(
            point.strategy,
            point.workers,
            run.run_id,
            point.repeat,
            f"{num_workers} workers, but no records of rank(s) "
            f"{', '.join(map(str, missing))}: is the runs directory shared with "
            "every node? Rank 0's share alone is not the whole",
        )
    elif run.problems:  # doubtful figures would move the table: left out, and said why
        more = f" (and {len(run.problems) - 1} more)" if len(run.problems) > 1 else ""
        return Failure(
            point.strategy,
            point.workers,
            run.run_id,
            point.repeat,
            f"left out: damaged data: {run.problems[0]}{more}",
        )
    elif run.status == "finished" and (cfg is None or cfg.status != "failed"):
        return None
    else:
        return Failure(
            point.strategy,
            point.workers,
            run.run_id,
            point.repeat,
            (cfg.reason if cfg else None) or f"run {status_label(run.status, run.manifest.signal)}",
            cfg.hint if cfg else None,
            cfg.log_tail if cfg else None,
        )


def _not_run(store: CachedRuns, root: Path, sweep_ids: set[str], seen: set[str]) -> list[Failure]:
    """The configurations of these sweeps without a run: failed before writing one, not ended
    yet, or never submitted (said, not left out)."""
    from advisor.analysis.scaling import Failure

    failures: list[Failure] = []
    for sid in sorted(sweep_ids):  # configurations that failed before writing a run
        record = store.sweep(Path(os.path.abspath(root)), sid)
        for cfg in record.configs if record is not None else []:
            if cfg.run_id in seen:
                continue
            if cfg.status == "failed":
                failures.append(
                    Failure(
                        cfg.strategy,
                        cfg.workers,
                        cfg.run_id,
                        cfg.repeat,
                        cfg.reason,
                        cfg.hint,
                        cfg.log_tail,
                    )
                )
            elif cfg.status != "finished":  # not ended yet, or never submitted: said, not left out
                engine = (
                    "Ray job" if record is not None and record.launcher == "ray" else "Slurm job"
                )
                job = f"{engine} {cfg.job_id} " if cfg.job_id else ""
                failures.append(
                    Failure(
                        cfg.strategy,
                        cfg.workers,
                        cfg.run_id,
                        cfg.repeat,
                        f"{job}{cfg.status}: no run yet",
                        state=cfg.status,
                    )
                )
    return failures


def _unreadable(path: Path) -> str:
    """Why a run's manifest cannot be read, in one line."""
    from advisor.store.reader import RunReader

    try:
        RunReader(path).read_manifest()
    except AdvisorError as exc:
        return f"unreadable: {exc}"
    return f"unreadable: {path}"


def saved_table(path: Path) -> ScalingTable:
    """A report saved as JSON, to render again (another format, plots); one saved before
    recommendations existed gets them computed from its rows (its runs' D6 findings need the
    runs themselves)."""
    from advisor.analysis.scaling import ScalingTable
    from advisor.analysis.scaling_advice import advice_notes, recommend
    from advisor.errors import RunFormatError
    from advisor.store.limits import load_json_file

    try:
        data = load_json_file(path)  # bounded: size, nesting, numbers; regular files only
        if not isinstance(data, dict) or "rows" not in data:
            raise ValueError("not a scaling report (no 'rows')")
        table = ScalingTable.from_dict(data)
        if not table.recommendations:
            table.recommendations = recommend(table)
            table.notes += [
                n for n in advice_notes(table, table.recommendations) if n not in table.notes
            ]
        return table
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise RunFormatError(f"{path}: cannot read the saved report ({exc})") from None
