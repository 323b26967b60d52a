"""Resume a sweep: measure again only the configurations (and repeats) that did not finish.

A configuration is kept when its sweep record says ``finished`` and its run is still there; every
other one (preempted, failed, interrupted, never started, or new in the plan) is run again. Before
a configuration is rerun its earlier attempt is set aside: its run directory and its logs move to
``sweeps/<id>/attempts/<k>/`` (out of the store's listing, so the report reads the new run alone)
and the record keeps how it ended under ``attempts``. The sweep file is rewritten atomically.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import UsageError
from advisor.launch.plan import Config, Plan
from advisor.store.schema import MANIFEST_NAME
from advisor.store.sweep import Attempt, ConfigRecord, Resumed, SweepRecord, sweep_dir

# Statuses of a configuration whose job may still be alive elsewhere (a queued Slurm job).
_IN_FLIGHT = ("submitted",)
# What a rerun starts afresh (the rest of a configuration's record is its identity).
_RESET = ("seconds", "reason", "hint", "log_tail", "script", "layout", "job_id")


@dataclass
class Resume:
    """What ``--resume`` decided: the plan of the configurations to run, and what it kept."""

    plan: Plan
    record: SweepRecord
    kept: list[ConfigRecord] = field(default_factory=list)
    rerun: list[ConfigRecord] = field(default_factory=list)

    def describe(self) -> list[str]:
        """Lines for the user: what is kept and what is run again, and why."""
        lines = [
            f"resuming sweep {self.record.sweep_id}: keeping {len(self.kept)} finished "
            f"configuration(s), running {len(self.rerun)} again"
        ]
        lines += [f"  kept  {_label(rec)}" for rec in self.kept]
        for rec in self.rerun:
            last = rec.attempts[-1] if rec.attempts else None
            why = "never run" if last is None else last.reason or last.status
            lines.append(f"  rerun {_label(rec)} ({_short(why)})")
        return lines


def resume(old: SweepRecord, plan: Plan, runs_dir: Path, launcher: str) -> Resume:
    """The sweep ``old`` resumed with ``plan``: finished configurations kept, the others (and the
    plan's configurations ``old`` lacks) set aside and pending, in ``plan``'s order. Refused
    while a configuration's job may still run (a submitted Slurm job)."""
    busy = [rec for rec in old.configs if rec.status in _IN_FLIGHT]
    if busy:
        jobs = " ".join(rec.job_id or rec.run_id for rec in busy)
        raise UsageError(
            f"sweep {old.sweep_id}: {len(busy)} configuration(s) are still submitted ({jobs}); "
            "wait for them (advisor report) or cancel them (scancel) before --resume"
        )
    record = old.model_copy(deep=True)
    record.launcher = launcher
    done = Resume(Plan(plan.sweep_id, plan.command, []), record)
    for config in plan.configs:
        rec = record.config(config.run_id(plan.sweep_id))
        if rec is None:
            rec = ConfigRecord(
                strategy=config.strategy,
                workers=config.workers,
                repeat=config.repeat,
                run_id=config.run_id(plan.sweep_id),
            )
            record.configs.append(rec)
        elif rec.status == "finished" and (runs_dir / rec.run_id / MANIFEST_NAME).is_file():
            done.kept.append(rec)
            continue
        else:
            _set_aside(rec, config, runs_dir, plan.sweep_id)
        done.rerun.append(rec)
        done.plan.configs.append(config)
    record.strategies = list(
        dict.fromkeys([*record.strategies, *(c.strategy for c in plan.configs)])
    )
    record.workers = sorted({*record.workers, *(c.workers for c in plan.configs)})
    record.repeat = max([record.repeat, *(c.repeat + 1 for c in plan.configs)])
    record.resumed.append(
        Resumed(kept=[r.run_id for r in done.kept], rerun=[r.run_id for r in done.rerun])
    )
    return done


def recorded_inputs(
    runs_dir: Path,
    sweep_id: str | None,
    given: tuple[tuple[str, ...], str, tuple[str, ...], int],
    workers_given: bool,
    repeat_given: bool,
) -> tuple[tuple[str, ...], str, tuple[str, ...], int]:
    """(command, workers, strategies, repeat) of a resumed sweep: those given on the command
    line, the sweep's own for the rest (a command recorded with hidden secrets must be given)."""
    from advisor.store.sweep import read_sweep

    if sweep_id is None:
        raise UsageError("--resume needs the --sweep-id of the sweep to resume")
    path = sweep_dir(runs_dir, sweep_id)
    if not path.is_dir():
        raise UsageError(f"--resume: no sweep {sweep_id} in {runs_dir}")
    old = read_sweep(path)
    command, workers_text, strategies, repeat = given
    if not command:
        if any("***" in arg for arg in old.command):
            raise UsageError(
                f"--resume: sweep {sweep_id}'s command was recorded with its secrets hidden; "
                "give the command again after `--`"
            )
        command = tuple(old.command)
    if not workers_given:
        workers_text = ",".join(map(str, old.workers))
    return (
        command,
        workers_text,
        strategies or tuple(old.strategies),
        (repeat if repeat_given else old.repeat),
    )


def _set_aside(rec: ConfigRecord, config: Config, runs_dir: Path, sweep_id: str) -> None:
    """Move the attempt's run and logs under ``attempts/<k>/`` and reset the record to pending."""
    k = len(rec.attempts) + 1
    root = sweep_dir(runs_dir, sweep_id)
    target = root / "attempts" / str(k)
    moved: str | None = None
    run = runs_dir / rec.run_id
    if run.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        os.replace(run, target / rec.run_id)
        moved = str(target / rec.run_id)
    logs = root / "logs" / config.label
    if logs.is_dir():
        (target / "logs").mkdir(parents=True, exist_ok=True)
        shutil.move(str(logs), str(target / "logs" / config.label))
    if rec.status != "pending" or moved:
        rec.attempts.append(
            Attempt(status=rec.status, reason=rec.reason, seconds=rec.seconds, moved_to=moved)
        )
    rec.status = "pending"
    for name in _RESET:
        setattr(rec, name, None)
    rec.logs, rec.nodes, rec.actors = [], [], []


def _label(rec: ConfigRecord) -> str:
    return f"{rec.strategy} ×{rec.workers} repeat {rec.repeat}"


def _short(text: str, limit: int = 160) -> str:
    line = text.splitlines()[0] if text else text
    return line if len(line) <= limit else line[: limit - 1] + "…"
