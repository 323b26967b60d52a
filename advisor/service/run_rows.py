"""The records the service hands out about runs: an :class:`Analysis` (a run and what was derived
from it), a :class:`RunRow` (one line of ``advisor runs``) and a report's :class:`RunInfo`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.numbers import strategy_label, workers_label

if TYPE_CHECKING:
    from advisor.analysis.overview import RunOverview
    from advisor.diagnosis.report import RunInfo
    from advisor.store.reader import Run
    from advisor.store.schema import Manifest


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
    signal: str | None = None  # a terminated run: the signal that ended it (SIGTERM)

    @property
    def status_text(self) -> str:
        """The status as listings say it: ``terminated (SIGTERM)``, never ``killed``, for a run
        that was preempted."""
        from advisor.store.status import status_label

        return status_label(self.status, self.signal)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}

    @classmethod
    def of(
        cls,
        path: Path,
        manifest: Manifest,
        status: str,
        facts: Mapping[str, Any] | None = None,
    ) -> RunRow:
        """A readable run's row from its manifest (and its facts, once derived): its
        configuration labelled as every view labels it (``scale.strategy`` × ``scale.workers``,
        what ``advisor scale`` launched it as, else the manifest's)."""
        facts = facts or {}
        return cls(
            run_id=manifest.run_id,
            path=str(path),
            status=status,
            created=manifest.created,
            name=manifest.name,
            strategy=strategy_label(manifest.strategy, manifest.tags),
            workers=workers_label(manifest.num_workers, manifest.tags),
            samples_per_s=facts.get("throughput.samples_per_s"),
            samples_per_dollar=facts.get("cost.samples_per_dollar"),
            sweep_id=manifest.sweep_id,
            tags=dict(manifest.tags),
            signal=manifest.signal if status == "terminated" else None,
        )

    @classmethod
    def unreadable(cls, path: Path, reason: str) -> RunRow:
        return cls(run_id=path.name, path=str(path), status="unreadable", error=reason)


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
        strategy=strategy_label(
            m.strategy, m.tags
        ),  # as every view names it (the class is context.strategy)
        num_workers=m.num_workers,
        instance_type=m.instance_type,
        tags=dict(m.tags),
    )
