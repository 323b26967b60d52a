"""The sweep file: what ``advisor scale`` ran, and how each configuration ended.

``<runs_dir>/sweeps/<sweep_id>/sweep.json`` (rewritten atomically after every configuration) with
the worker logs beside it under ``logs/``. The runs themselves are ordinary run directories in
``<runs_dir>`` whose manifests carry the sweep id; the sweep file adds what runs cannot say about
themselves: the configuration each was launched as, and the configurations that failed before or
while writing a run. The command line and the log tails are redacted before they are written
(tokens, passwords, keys, URLs with credentials): the file is meant to be shared.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.errors import RunFormatError, RunNotFoundError

SWEEPS_DIR = "sweeps"
SWEEP_FILE = "sweep.json"
SWEEP_SCHEMA_VERSION = 1

ConfigStatus = Literal["pending", "running", "finished", "failed", "submitted", "written"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class Attempt(_Model):
    """An earlier attempt at a configuration, replaced when the sweep was resumed: how it ended,
    and where its run (if it wrote one) was moved (``sweeps/<id>/attempts/<k>/``)."""

    status: str
    reason: str | None = None
    seconds: float | None = None
    moved_to: str | None = None


class Resumed(_Model):
    """One ``advisor scale --resume``: when, and the configurations it kept and reran (run ids)."""

    at: float = Field(default_factory=time.time)
    kept: list[str] = Field(default_factory=list)
    rerun: list[str] = Field(default_factory=list)


class ConfigRecord(_Model):
    strategy: str
    workers: int
    repeat: int = 0
    run_id: str
    status: ConfigStatus = "pending"
    seconds: float | None = None
    reason: str | None = None
    hint: str | None = None
    log_tail: str | None = None
    logs: list[str] = Field(default_factory=list)
    script: str | None = None  # slurm: the sbatch script
    layout: str | None = None  # slurm: where its tasks go ("2 tasks on 1 node (packed: …)")
    job_id: str | None = None  # slurm: the submitted job; ray: the sweep's Ray job (driver)
    nodes: list[str] = Field(default_factory=list)  # slurm, ray: the nodes the job ran on
    actors: list[str] = Field(default_factory=list)  # ray: each rank's actor id, in rank order
    attempts: list[Attempt] = Field(default_factory=list)  # earlier ones, replaced by --resume


class SweepRecord(_Model):
    schema_version: int = SWEEP_SCHEMA_VERSION
    sweep_id: str
    created: float = Field(default_factory=time.time)
    updated: float | None = None
    launcher: str = "local"
    command: list[str] = Field(default_factory=list)
    strategies: list[str] = Field(default_factory=list)
    workers: list[int] = Field(default_factory=list)
    repeat: int = 1
    timeout_s: float | None = None
    instance_type: str | None = None
    configs: list[ConfigRecord] = Field(default_factory=list)
    resumed: list[Resumed] = Field(default_factory=list)  # every --resume, oldest first

    def config(self, run_id: str) -> ConfigRecord | None:
        return next((c for c in self.configs if c.run_id == run_id), None)


def sweep_dir(runs_dir: Path, sweep_id: str) -> Path:
    return runs_dir / SWEEPS_DIR / sweep_id


def write_sweep(runs_dir: Path, record: SweepRecord) -> Path:
    """Write the sweep file, secrets redacted (the record in memory keeps the real command)."""
    from advisor.store.writer import write_json_atomic

    record.updated = time.time()
    path = sweep_dir(runs_dir, record.sweep_id)
    path.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path / SWEEP_FILE, redacted(record))
    return path / SWEEP_FILE


def redacted(record: SweepRecord) -> dict[str, Any]:
    """The sweep record as JSON with argv, log tails and failure reasons redacted."""
    from advisor.store.redact import redact_argv, redact_text

    payload = record.model_dump(mode="json")
    payload["command"] = redact_argv(payload.get("command") or [])
    for config in payload.get("configs", []):
        for key in ("log_tail", "reason"):
            if isinstance(config.get(key), str):
                config[key] = redact_text(config[key])
        for attempt in config.get("attempts") or []:
            if isinstance(attempt.get("reason"), str):
                attempt["reason"] = redact_text(attempt["reason"])
    return payload


def read_sweep(path: Path) -> SweepRecord:
    """A sweep file (or a sweep directory holding one); malformed files are a one-line error."""
    from advisor.store.limits import load_versioned

    file = path / SWEEP_FILE if path.is_dir() else path
    if not file.exists():
        raise RunNotFoundError(f"{file}: no sweep file")
    return load_versioned(
        file,
        SweepRecord,
        what="sweep file",
        version_key="schema_version",
        known=SWEEP_SCHEMA_VERSION,
        error=RunFormatError,
    )


def list_sweeps(runs_dir: Path) -> list[Path]:
    """Sweep directories under the store, oldest first."""
    root = runs_dir / SWEEPS_DIR
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if (p / SWEEP_FILE).is_file()]
    return sorted(found, key=lambda p: ((p / SWEEP_FILE).stat().st_mtime, p.name))


def resolve_sweep(ref: str | None, runs_dir: Path) -> Path:
    """A sweep directory from a path, a sweep id or unique prefix, or the latest (``None``)."""
    if ref and Path(ref).is_dir() and (Path(ref) / SWEEP_FILE).is_file():
        return Path(ref)
    sweeps = list_sweeps(runs_dir)
    if not ref or ref in ("latest", "last"):
        if not sweeps:
            raise RunNotFoundError(
                f"{runs_dir}: no sweeps in this store (run `advisor scale` first)"
            )
        return sweeps[-1]
    from advisor.store.run_refs import pick_by_name

    return pick_by_name(sweeps, ref, "sweep", runs_dir, "neither a runs directory nor a sweep id")
