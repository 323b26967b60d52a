"""Diagnosis: the checklist's rules evaluated on a run's facts.

    from advisor.diagnosis import diagnose_facts, load_rules

    report = diagnose_facts(facts, load_rules())     # facts from advisor.analysis

Rules live in ``rules/*.yaml`` (see docs/rules.md); fact names come from the registry in
``advisor.analysis.registry``. Nothing here reads runs: the only files it opens are its own
inputs, the rule files and the ``[tool.advisor]`` configuration. To diagnose a run directory, use
``advisor.diagnose(run)`` (:mod:`advisor.service`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

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

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "Config",
    "Finding",
    "Report",
    "Rule",
    "RunInfo",
    "Settings",
    "resolve_settings",
    "diagnose_facts",
    "evaluate",
    "json_schema",
    "load_config",
    "load_rules",
]


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
