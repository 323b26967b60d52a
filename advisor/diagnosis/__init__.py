"""Diagnosis: the checklist's rules evaluated on a run's facts.

    from advisor.diagnosis import diagnose
    from advisor.render import render

    report = diagnose(run)                  # a Run from advisor.store.reader, or its path / id
    print(render(report, "text"))

Rules live in ``rules/*.yaml`` (see docs/rules.md); facts come from the registry in
``advisor.analysis.registry``. Everything here is pure except reading the run and the rules.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.diagnosis.config import Config, Resolved, load_config, resolve
from advisor.diagnosis.engine import diagnose_facts, evaluate
from advisor.diagnosis.report import (
    REPORT_SCHEMA_VERSION,
    Finding,
    Report,
    RunInfo,
    Settings,
    json_schema,
)
from advisor.diagnosis.rules import Rule, load_rules
from advisor.diagnosis.selection import normalize

if TYPE_CHECKING:
    from advisor.store.reader import Run

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "Config",
    "Finding",
    "Report",
    "Rule",
    "diagnose",
    "diagnose_facts",
    "evaluate",
    "json_schema",
    "load_config",
    "load_rules",
]


def _as_run(run: Run | str | os.PathLike[str], runs_dir: str | os.PathLike[str] | None) -> Run:
    from advisor.store.reader import Run as RunCls
    from advisor.store.reader import read_run

    if isinstance(run, RunCls):
        return run
    return read_run(str(run), runs_dir)


def run_info(run: Run) -> RunInfo:
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


def settings_for(config: Config | str | os.PathLike[str] | Mapping[str, Any] | None) -> Config:
    """A :class:`Config` from a Config, a path to pyproject.toml, a ``[tool.advisor]`` dict,
    ``"auto"`` (the nearest pyproject.toml), or None (defaults only)."""
    from advisor.diagnosis.config import parse_table

    if config is None:
        return Config()
    if isinstance(config, Config):
        return config
    if isinstance(config, Mapping):
        return parse_table(config, "config")
    if str(config) == "auto":
        return load_config()
    return load_config(Path(config))


def resolve_settings(
    rules: Iterable[Rule],
    config: Config | str | os.PathLike[str] | Mapping[str, Any] | None = None,
    *,
    select: Iterable[str] | None = None,
    extend_select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    fail_on: str | None = None,
    thresholds: Mapping[str, Mapping[str, Any]] | None = None,
) -> Resolved:
    cli = Config(
        select=normalize(select),
        extend_select=normalize(extend_select) or (),
        ignore=normalize(ignore) or (),
        fail_on=fail_on,
        thresholds={k.upper(): dict(v) for k, v in (thresholds or {}).items()},
    )
    return resolve(list(rules), settings_for(config), cli)


def diagnose(
    run: Run | str | os.PathLike[str],
    config: Config | str | os.PathLike[str] | Mapping[str, Any] | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    *,
    extend_select: Iterable[str] | None = None,
    fail_on: str | None = None,
    thresholds: Mapping[str, Mapping[str, Any]] | None = None,
    rules_dir: str | os.PathLike[str] | None = None,
    runs_dir: str | os.PathLike[str] | None = None,
    baseline: Run | str | os.PathLike[str] | None = None,
    max_regression_pct: float = 5.0,
    generated_at: str | None = None,
) -> Report:
    """Derive the facts of ``run``, evaluate the selected rules, and return the ranked report.

    ``select`` / ``extend_select`` / ``ignore`` take codes or prefixes and win over ``config``.
    With ``baseline`` (a run), the report carries the samples/s and samples/$ regression check.
    """
    from advisor.analysis.registry import registry
    from advisor.diagnosis.regression import compare

    the_run = _as_run(run, runs_dir)
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
    reg = registry()
    facts, errors = reg.derive(the_run)
    report = diagnose_facts(
        facts,
        chosen,
        run=run_info(the_run),
        thresholds=resolved.thresholds,
        min_measured_steps=resolved.min_measured_steps,
        errors=[*the_run.warnings, *errors],
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
        reg=reg,
    )
    report.incomplete = list(the_run.incomplete)
    if baseline is not None:
        base_run = _as_run(baseline, runs_dir)
        base_facts, _ = reg.derive(base_run)
        report.regression = compare(facts, base_facts, base_run.run_id, max_regression_pct)
    return report
