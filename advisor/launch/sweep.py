"""Run a sweep: every configuration of a plan, one after the other, recorded in the sweep file.

A configuration that fails (a worker dies, or it runs past its timeout) is recorded with the
reason, its log tail and a hint where the failure is a known one; the sweep goes on with the next.
Ctrl-C fails the running configuration as interrupted, and the sweep ends there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from advisor.launch.hints import hint_for
from advisor.launch.plan import (
    Config,
    Plan,
    ProcessSpec,
    horovod_timeline_path,
    local_gpu_count,
    local_processes,
)
from advisor.store.schema import MANIFEST_NAME
from advisor.store.sweep import ConfigRecord, SweepRecord, sweep_dir, write_sweep

if TYPE_CHECKING:
    from advisor.launch.local import Outcome

DEFAULT_TIMEOUT_S = 1800.0
# Slurm ends a job at its --time (whole minutes); the follower cancels it only if it missed that.
SLURM_GRACE_S = 120.0
# The reason of the configuration Ctrl-C stopped (the ones after it stay pending).
INTERRUPTED = "interrupted (Ctrl-C): the sweep was stopped"
log = logging.getLogger("advisor")


def new_record(
    plan: Plan, launcher: str, timeout_s: float | None, instance_type: str | None
) -> SweepRecord:
    return SweepRecord(
        sweep_id=plan.sweep_id,
        launcher=launcher,
        command=plan.command,
        strategies=sorted(
            {c.strategy for c in plan.configs}, key=[c.strategy for c in plan.configs].index
        ),
        workers=sorted({c.workers for c in plan.configs}),
        repeat=max((c.repeat for c in plan.configs), default=0) + 1,
        timeout_s=timeout_s,
        instance_type=instance_type,
        configs=[
            ConfigRecord(
                strategy=c.strategy,
                workers=c.workers,
                repeat=c.repeat,
                run_id=c.run_id(plan.sweep_id),
            )
            for c in plan.configs
        ],
    )


class Runner(Protocol):
    """Runs one configuration's processes to their end (``run_local``, or a Ray placement group)."""

    def __call__(
        self,
        config: Config,
        specs: Callable[..., list[ProcessSpec]],
        log_dir: Path,
        timeout_s: float | None,
        on_tick: Callable[[float], None] | None,
    ) -> Outcome: ...


def _local_runner(gpus: int) -> Runner:
    from advisor.launch.local import run_local

    def run(
        config: Config,
        specs: Callable[..., list[ProcessSpec]],
        log_dir: Path,
        timeout_s: float | None,
        on_tick: Callable[[float], None] | None,
    ) -> Outcome:
        return run_local(specs(gpus=gpus), log_dir, timeout_s, on_tick=on_tick)

    return run


def run_sweep(
    plan: Plan,
    runs_dir: Path,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    instance_type: str | None = None,
    display: Any = None,
    record: SweepRecord | None = None,
    runner: Runner | None = None,
) -> SweepRecord:
    """Run every configuration, locally or by ``runner``; returns the final sweep record (also
    on disk).

    ``record``: the (pending) record to fill in, when a display already shows it. ``runner`` gets
    each configuration with a function that makes its processes (``hosts``, ``ports``, ``gpus``
    as ``local_processes`` takes them)."""
    from advisor.launch.local import log_tail

    runs_dir = runs_dir.resolve()
    record = record or new_record(plan, "local", timeout_s, instance_type)
    write_sweep(runs_dir, record)
    runner = runner or _local_runner(local_gpu_count())
    logs_root = sweep_dir(runs_dir, plan.sweep_id) / "logs"
    for config, rec in _records(plan, record):
        rec.status = "running"
        write_sweep(runs_dir, record)
        if display is not None:
            display.start(rec)
        if config.strategy == "horovod":
            horovod_timeline_path(runs_dir, plan.sweep_id, config).parent.mkdir(
                parents=True, exist_ok=True
            )
        tick = (lambda elapsed, r=rec: display.tick(r, elapsed)) if display is not None else None
        specs = partial(_processes, config, plan, runs_dir, instance_type)
        started = time.monotonic()
        try:
            outcome = runner(config, specs, logs_root / config.label, timeout_s, tick)
        except KeyboardInterrupt:  # the runner has stopped the workers: say so before going
            rec.status, rec.reason = "failed", INTERRUPTED
            rec.seconds = round(time.monotonic() - started, 3)
            write_sweep(runs_dir, record)
            raise
        rec.status = "finished" if outcome.status == "finished" else "failed"
        rec.seconds = round(outcome.seconds, 3)
        rec.logs = outcome.logs
        rec.nodes = outcome.nodes or rec.nodes
        rec.job_id = outcome.job_id or rec.job_id
        rec.actors = outcome.actors or rec.actors
        run_dir = runs_dir / rec.run_id
        if outcome.status == "finished" and not (run_dir / MANIFEST_NAME).is_file():
            rec.status = "failed"
            outcome.reason = (
                "the job finished but wrote no run: does the script pass "
                "advisor.AdvisorCallback() to fit?"
            )
            outcome.log_tail = log_tail(Path(outcome.logs[0])) if outcome.logs else ""
        elif outcome.status == "finished" and outcome.nodes and missing_ranks(run_dir, rec):
            rec.status = "failed"
            outcome.reason = (
                f"the job finished, but {run_dir} lacks the records of rank(s) "
                f"{', '.join(map(str, missing_ranks(run_dir, rec)))}: is the runs "
                f"directory shared with every node ({', '.join(outcome.nodes)})?"
            )
        if rec.status == "finished" and config.strategy == "horovod":
            _attach_timeline(
                horovod_timeline_path(runs_dir, plan.sweep_id, config), runs_dir / rec.run_id
            )
        if rec.status == "failed":
            # The run's own status says whether it was told to stop (a SIGTERM exit, a handler
            # of the script's that exits otherwise, a Ray actor gone with no exit code seen);
            # the launcher's own SIGTERM at a timeout is not a preemption.
            stopped = outcome.status == "failed" and not outcome.timed_out
            rec.reason = said_preempted(run_dir, outcome.reason) if stopped else outcome.reason
            rec.log_tail = outcome.log_tail or None
            rec.hint = hint_for(outcome.log_tail or "") if outcome.log_tail else None
        write_sweep(runs_dir, record)
        if display is not None:
            display.finish(rec)
    return record


def _records(plan: Plan, record: SweepRecord) -> list[tuple[Config, ConfigRecord]]:
    """Each configuration of the plan with its record (a resumed sweep's plan is a part of it)."""
    pairs = []
    for config in plan.configs:
        rec = record.config(config.run_id(plan.sweep_id))
        assert rec is not None, config.label
        pairs.append((config, rec))
    return pairs


def _processes(
    config: Config, plan: Plan, runs_dir: Path, instance_type: str | None, **where: Any
) -> list[ProcessSpec]:
    specs = local_processes(config, plan.command, plan.sweep_id, runs_dir, **where)
    if instance_type:
        for spec in specs:
            spec.env["ADVISOR_INSTANCE_TYPE"] = instance_type
    return specs


def _attach_timeline(timeline: Path, run_path: Path) -> None:
    """Horovod's timeline into the run: its communication share becomes the run's trace facts."""
    from advisor.errors import AdvisorError
    from advisor.traces.attach import attach_timeline

    if not timeline.is_file():
        log.warning("advisor scale: horovodrun wrote no timeline at %s", timeline)
        return
    try:
        attach_timeline(timeline, run_path)
    except AdvisorError as exc:
        log.warning("advisor scale: the Horovod timeline could not be read: %s", exc)


def submit_sweep(
    plan: Plan,
    runs_dir: Path,
    timeout_s: float | None,
    options: Any = None,
    instance_type: str | None = None,
    record: SweepRecord | None = None,
) -> SweepRecord:
    """Write one sbatch script per configuration, laid out to fit the partition (read first where
    Slurm can be asked), and submit each where ``sbatch`` exists, each job after the previous one
    has ended (``--dependency=afterany``). A script sbatch refuses fails its configuration, with
    sbatch's words; the others are submitted."""
    from advisor.errors import UsageError
    from advisor.launch.slurm import SlurmOptions, sbatch_script, secret_refs, submit
    from advisor.launch.slurm_partition import read_partition
    from advisor.launch.slurm_text import run_slurm

    runs_dir = runs_dir.resolve()
    options = options or SlurmOptions()
    options.cluster = options.cluster or read_partition(options.partition, run_slurm)
    if options.gpus_per_node is None and options.cluster is not None:
        options.gpus_per_node = options.cluster.gpus_per_node
    record = record or new_record(plan, "slurm", timeout_s, instance_type)
    root = sweep_dir(runs_dir, plan.sweep_id)
    previous: str | None = None
    for config, rec in _records(plan, record):
        script = _script_path(root, config)
        log_dir = root / "logs" / config.label
        log_dir.mkdir(parents=True, exist_ok=True)
        script.parent.mkdir(parents=True, exist_ok=True)
        text = sbatch_script(
            config,
            plan.command,
            plan.sweep_id,
            runs_dir,
            log_dir,
            timeout_s,
            options,
            instance_type,
        )
        script.write_text(text, encoding="utf-8")
        script.chmod(0o755)
        rec.script, rec.layout = str(script), options.layout(config).describe()
        try:
            job = submit(script, after=previous, secrets=secret_refs(plan.command))
        except UsageError as exc:
            rec.status, rec.reason = "failed", str(exc)
        else:
            previous = job or previous
            rec.status = "submitted" if job else "written"
            rec.job_id = job
        write_sweep(runs_dir, record)
    return record


def follow_sweep(
    record: SweepRecord,
    runs_dir: Path,
    timeout_s: float | None,
    display: Any = None,
    poll_s: float = 1.0,
) -> SweepRecord:
    """Follow the submitted jobs in turn until each ends; every configuration ends finished or
    failed (with Slurm's reason and its log's tail), never ``submitted``."""
    from advisor.launch.local import log_tail
    from advisor.launch.slurm_jobs import JobState, follow

    runs_dir = runs_dir.resolve()
    root = sweep_dir(runs_dir, record.sweep_id)
    for rec in record.configs:
        if not rec.job_id or rec.status != "submitted":  # kept by --resume: followed before
            continue
        job_id, log_dir = (
            rec.job_id,
            root / "logs" / Config(rec.strategy, rec.workers, rec.repeat).label,
        )

        def started(state: JobState, rec: ConfigRecord = rec) -> None:
            rec.status, rec.nodes = "running", state.nodes
            write_sweep(runs_dir, record)
            if display is not None:
                display.start(rec)

        tick = (lambda elapsed, r=rec: display.tick(r, elapsed)) if display is not None else None
        grace = None if timeout_s is None else timeout_s + SLURM_GRACE_S
        ended = follow(job_id, log_dir, grace, on_start=started, on_tick=tick, poll_s=poll_s)
        rec.nodes = ended.state.nodes or rec.nodes
        seconds = ended.state.seconds if ended.state.seconds is not None else ended.seconds
        rec.seconds = round(seconds, 3) if seconds is not None else None
        rec.logs = [str(log_dir / f"slurm-{job_id}.log")]
        run_dir = runs_dir / rec.run_id
        missing = missing_ranks(run_dir, rec)
        if ended.state.succeeded and (run_dir / MANIFEST_NAME).is_file() and not missing:
            rec.status, rec.reason = "finished", None
        else:
            rec.status = "failed"
            if ended.timed_out:
                rec.reason = (
                    f"Slurm job {job_id} still running {grace:g} s after it started: cancelled"
                )
            elif ended.state.succeeded and missing and (run_dir / MANIFEST_NAME).is_file():
                rec.reason = (
                    f"Slurm job {job_id} finished, but {run_dir} lacks the records of rank(s) "
                    f"{', '.join(map(str, missing))}: is the runs directory shared with every "
                    f"node ({', '.join(rec.nodes) or 'unknown'})? Rank 0's share is not the whole"
                )
            elif ended.state.succeeded:
                rec.reason = (
                    f"Slurm job {job_id} finished but wrote no run in {runs_dir}: is the runs "
                    "directory shared with the nodes, and does the script pass "
                    "advisor.AdvisorCallback() to fit?"
                )
            else:
                rec.reason = said_preempted(run_dir, ended.describe(job_id))
            tail = log_tail(log_dir / f"slurm-{job_id}.log")
            rec.log_tail = tail or None
            rec.hint = hint_for(tail) if tail else None
        write_sweep(runs_dir, record)
        if display is not None:
            display.finish(rec)
    return record


def said_preempted(run_dir: Path, reason: str) -> str:
    """``reason``, led by what preempted the configuration where its run was terminated by a
    signal (SIGTERM: preemption, eviction, scancel) rather than crashing."""
    from advisor.errors import AdvisorError
    from advisor.store.reader import RunReader
    from advisor.store.status import status_label

    try:
        run = RunReader(run_dir).read()
    except AdvisorError:
        return reason
    if run.status != "terminated":  # also when a worker failed first (the others then stopped)
        return reason
    manifest = run.manifest
    when = time.strftime(" at %H:%M:%S", time.localtime(manifest.ended)) if manifest.ended else ""
    return (
        f"preempted: its run was {status_label('terminated', manifest.signal)}{when} before it "
        f"ended ({reason}); run the sweep again to measure it"
    )


def missing_ranks(run_dir: Path, rec: ConfigRecord) -> list[int]:
    """Ranks of a multi-process configuration with no worker file in its run (each rank writes
    its own, on its own node: a runs directory not shared with a node loses that node's)."""
    if rec.strategy in ("mirrored", "single") or not run_dir.is_dir():
        return []
    return [r for r in range(rec.workers) if not (run_dir / f"worker-{r}.jsonl").is_file()]


def _script_path(root: Path, config: Config) -> Path:
    return root / "slurm" / f"{config.label}.sbatch"
