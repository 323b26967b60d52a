"""Runs and findings as pandas DataFrames, for notebooks: one line from a store to a table.

    import advisor
    df = advisor.runs_frame("advisor-runs")                       # one row per run
    df = advisor.runs_frame(facts=["throughput.*", "gpu.util.p95"])
    findings = advisor.findings_frame(status="fail")             # one row per finding per run
    epochs = advisor.epochs_frame("advisor-runs", "latest")       # one row per epoch of one run

Every frame takes the store first (``runs_dir``: a folder or ``s3://`` URL, default
``$ADVISOR_RUNS_DIR`` or ``./advisor-runs``), as ``AdvisorCallback`` and ``advisor.RunService`` do;
which runs comes second. The older forms that gave the run first
(``epochs_frame("latest")``, ``findings_frame("run-1", runs_dir=...)``) still work, with a
DeprecationWarning.

Columns of facts are the fact names (``advisor rules`` and docs/pandas.md list them); units are in
``df.attrs["units"]``. Everything is read through :class:`advisor.service.RunService` (each run read
and derived once); pandas is imported only here, on call.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from advisor.errors import AdvisorError, UsageError
from advisor.numbers import strategy_label, workers_label

if TYPE_CHECKING:
    import pandas as pd

    from advisor.service import RunService

F = TypeVar("F", bound=Callable[..., Any])
StorePath = str | os.PathLike[str]
RunRef = str | os.PathLike[str]

# What a run is (from its manifest), before the fact columns.
RUN_COLUMNS = (
    "run_id",
    "name",
    "status",
    "created",
    "sweep_id",
    "strategy",
    "num_workers",
    "backend",
    "keras_version",
    "instance_type",
    "price_per_hour",
    "global_batch_size",
    "path",
    "error",
)
RUN_UNITS = {"created": "UTC", "price_per_hour": "USD/h", "global_batch_size": "samples"}
DEFAULT_FACTS = (
    "throughput.samples_per_s",
    "throughput.steps_per_s",
    "cost.samples_per_dollar",
    "time.epoch_s.mean",
    "run.epochs",
    "gpu.util.p95",
    "host.cpu.mean",
    "energy.wh",
    "input.share",
    "trace.communication_percent",
    "goodput",
    "memory.host.peak_bytes",
    "memory.growth_mb_per_epoch",
    "memory.batch.largest",
)

FactSpec = str | Iterable[str] | None


def fact_names(spec: FactSpec = None) -> list[str]:
    """Registered fact names chosen by ``spec``: None (the defaults), ``"all"``, names or globs.

    ``"throughput.*"`` picks an area; an unknown name is a :class:`UsageError` naming the closest;
    a deprecated name (``whatif.budget_seconds``) picks its new one, with a DeprecationWarning.
    """
    from advisor.analysis.registry import registry, resolve_fact

    known = registry().names()
    if spec is None:
        return list(DEFAULT_FACTS)
    if isinstance(spec, str):
        spec = known if spec == "all" else [p.strip() for p in spec.split(",") if p.strip()]
    chosen: list[str] = []
    for pattern in spec:
        pattern = resolve_fact(pattern)
        if any(ch in pattern for ch in "*?["):
            hits = fnmatch.filter(known, pattern)
            if not hits:
                raise UsageError(
                    f"facts {pattern!r}: no fact matches (see `advisor rules` or docs/pandas.md)"
                )
        elif pattern in known:
            hits = [pattern]
        else:
            close = difflib.get_close_matches(pattern, known, n=1)
            raise UsageError(
                f"unknown fact {pattern!r}" + (f"; did you mean {close[0]!r}?" if close else "")
            )
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def fact_units(names: Sequence[str]) -> dict[str, str]:
    from advisor.analysis.registry import registry

    reg = registry()
    return {n: f.unit for n in names if (f := reg.get(n)) is not None and f.unit}


def numeric_facts(names: Sequence[str]) -> list[str]:
    """The names among ``names`` whose facts are numbers (not strings, flags or tables)."""
    from advisor.analysis.registry import registry

    reg = registry()
    return [n for n in names if (f := reg.get(n)) is not None and f.kind == "number"]


def run_rows(
    store: RunService, facts: Sequence[str], limit: int | None = None
) -> list[dict[str, Any]]:
    """One plain dict per run (oldest first): manifest columns, ``tags.<key>``, the chosen facts.

    An unreadable run is a row with ``status="unreadable"`` and its ``error``; nothing is skipped.
    """
    dirs = store.run_dirs()
    rows: list[dict[str, Any]] = []
    for path in dirs[-limit:] if limit else dirs:
        try:
            analysis = store.analyse(path)
        except AdvisorError as exc:
            rows.append(
                {"run_id": path.name, "path": str(path), "status": "unreadable", "error": str(exc)}
            )
            continue
        m = analysis.run.manifest
        row: dict[str, Any] = {
            "run_id": m.run_id,
            "name": m.name,
            "status": analysis.run.status,
            "created": m.created,
            "sweep_id": m.sweep_id,
            "strategy": strategy_label(m.strategy, m.tags),
            "num_workers": workers_label(m.num_workers, m.tags),
            "backend": m.framework.backend,
            "keras_version": m.framework.keras_version,
            "instance_type": m.instance_type,
            "price_per_hour": m.price_per_hour,
            "global_batch_size": m.global_batch_size,
            "path": str(path),
            "error": None,
        }
        row.update({f"tags.{k}": v for k, v in m.tags.items()})
        row.update({name: analysis.facts.get(name) for name in facts})
        rows.append(row)
    return rows


def run_columns(rows: Sequence[dict[str, Any]], facts: Sequence[str]) -> list[str]:
    tags = sorted({k for r in rows for k in r if k.startswith("tags.")})
    return [*RUN_COLUMNS, *tags, *facts]


_warned_run_first: set[str] = set()


def is_run_reference(value: Any) -> bool:
    """True when a frame's first argument is a run (the older call form), not a store: several
    references, ``latest``, a run folder (it holds ``run.json``) or a name that is no folder here.
    A store is an existing folder without ``run.json`` or an ``s3://`` URL."""
    if isinstance(value, (list, tuple, set)):
        return True
    if not isinstance(value, (str, os.PathLike)):
        return False
    from advisor.store.paths import is_store_url

    text = os.fspath(value)
    if is_store_url(text):
        return False
    return (
        text == "latest"
        or os.path.isfile(os.path.join(text, "run.json"))
        or not os.path.isdir(text)
    )


def run_first_still_works(run_param: str) -> Callable[[F], F]:
    """Keep the older call form of a frame that took the run first: ``f(run)`` or
    ``f(run, runs_dir=...)`` becomes ``f(runs_dir, run)``, with a DeprecationWarning once."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if (
                len(args) == 1
                and run_param not in kwargs
                and ("runs_dir" in kwargs or is_run_reference(args[0]))
            ):
                kwargs[run_param], args = args[0], ()
                if fn.__name__ not in _warned_run_first:
                    _warned_run_first.add(fn.__name__)
                    warnings.warn(
                        f"{fn.__name__}(run) is deprecated: the store comes first, "
                        f"{fn.__name__}(runs_dir, {run_param}) or {fn.__name__}({run_param}=...)",
                        DeprecationWarning,
                        stacklevel=2,
                    )
            return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def runs_frame(
    runs_dir: StorePath | None = None,
    facts: FactSpec = None,
    *,
    limit: int | None = None,
    store: RunService | None = None,
) -> pd.DataFrame:
    """Every run of the store as a DataFrame, oldest first, indexed by ``run_id``.

    ``facts``: None (a default set: throughput, cost, epoch time, utilization, energy, input and
    communication shares, peak memory, its growth per epoch and the largest batch that fits),
    ``"all"``, or fact names and globs (``"trace.*"``). Fact columns are
    the fact names; ``df.attrs["units"]`` maps each column to its unit. Facts a run did not
    measure are NaN/None (a number no run measured is a float column of NaN), never zero;
    ``goodput`` is among the defaults. ``created`` is a UTC timestamp.
    """
    from advisor.dataframes import pandas, to_frame
    from advisor.service import RunService

    names = fact_names(facts)
    store = store or RunService(runs_dir)
    rows = run_rows(store, names, limit)
    frame = to_frame(
        rows, run_columns(rows, names), {**RUN_UNITS, **fact_units(names)}, runs_dir=str(store.root)
    )
    pd = pandas()
    frame["created"] = pd.to_datetime(frame["created"], unit="s", utc=True)
    for name in numeric_facts(names):
        if (
            frame[name].isna().all()
        ):  # measured by no run: NaN in a float column, as where some runs have it
            frame[name] = frame[name].astype(float)
    return frame.set_index("run_id", drop=False)


@run_first_still_works("runs")
def findings_frame(
    runs_dir: StorePath | None = None,
    runs: RunRef | Iterable[RunRef] | None = None,
    *,
    status: str | Iterable[str] | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    store: RunService | None = None,
) -> pd.DataFrame:
    """One row per finding per run: ``run_id``, ``code``, ``name``, ``status``, ``severity``,
    ``impact``…

    ``runs``: a run reference or several (default: every readable run of the store); ``status``
    keeps only those statuses (``"fail"``, ``["fail", "unknown"]``); ``select`` / ``ignore`` as in
    ``advisor check``. Unreadable runs are left out and listed in ``df.attrs["unreadable"]``.
    """
    from advisor.diagnosis.report import FINDING_COLUMNS
    from advisor.service import RunService

    store = store or RunService(runs_dir)
    refs: list[Any] = (
        list(store.run_dirs())
        if runs is None
        else [runs]
        if isinstance(runs, (str, os.PathLike))
        else list(runs)
    )
    wanted = None if status is None else ({status} if isinstance(status, str) else set(status))
    rows: list[dict[str, Any]] = []
    unreadable: dict[str, str] = {}
    for ref in refs:
        try:
            report = store.diagnose(ref, select=select, ignore=ignore)
        except AdvisorError as exc:
            if runs is not None:
                raise
            unreadable[os.path.basename(str(ref))] = str(exc)
            continue
        for f in report.findings:
            if wanted is None or f.status in wanted:
                rows.append(
                    {"run_id": report.run.run_id, **f.model_dump(include=set(FINDING_COLUMNS))}
                )
    from advisor.dataframes import to_frame

    return to_frame(
        rows,
        ["run_id", *FINDING_COLUMNS],
        {"impact": "fraction"},
        runs_dir=str(store.root),
        unreadable=unreadable,
    )


@run_first_still_works("run")
def epochs_frame(
    runs_dir: StorePath | None = None, run: RunRef | None = None, *, store: RunService | None = None
) -> pd.DataFrame:
    """The epochs of one run of the store (default ``latest``): time, training and validation
    time, samples/s."""
    from advisor.service import RunService

    store = store or RunService(runs_dir)
    return store.analyse(run or "latest").overview().epoch_table().to_frame()
