"""``advisor scale``: run one training command at several worker counts and strategies."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from advisor.cli.common import runs_dir_option

if TYPE_CHECKING:
    from advisor.launch.plan import Plan
    from advisor.launch.resume import Resume
    from advisor.launch.slurm import SlurmOptions
    from advisor.store.sweep import SweepRecord


@click.command("scale", context_settings={"ignore_unknown_options": False})
@click.option(
    "--workers",
    "workers_text",
    default="1,2",
    show_default=True,
    help="Worker counts, comma-separated (processes, or devices for mirrored).",
)
@click.option(
    "--strategy",
    "strategies",
    multiple=True,
    type=click.Choice(["multiworker", "mirrored", "jax", "horovod", "single"]),
    help="Repeat for several: multiworker (tf_keras, TF_CONFIG on loopback), mirrored "
    "(one process, N devices), jax (N processes, gloo), horovod (horovodrun). "
    "Default: multiworker.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run every configuration this many times (spread of epoch times).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1),
    default=1800.0,
    show_default=True,
    help="Seconds before a configuration is stopped and marked failed.",
)
@click.option(
    "--launcher",
    type=click.Choice(["local", "slurm", "ray"]),
    default="local",
    show_default=True,
    help="local processes, sbatch jobs, or Ray actors (needs keras-advisor[ray]).",
)
@click.option(
    "--address",
    default=None,
    help="ray: the cluster to join (e.g. ray://head:10001, auto); default: a local one for the "
    "sweep.",
)
@click.option("--instance-type", default=None, help="Cloud instance type (price and samples/$).")
@click.option("--sweep-id", default=None, help="Name of the sweep (default: sweep-<time>-<hex>).")
@click.option(
    "--resume",
    is_flag=True,
    help="With --sweep-id: run again only the configurations of that sweep that did not finish "
    "(preempted, failed, never started), keeping the finished ones. Strategies, workers, repeats "
    "and the command default to the sweep's.",
)
@click.option(
    "--gpus-per-node",
    type=click.IntRange(min=0),
    default=None,
    help="slurm: GPUs per node; 0 for CPU tasks (default: from sinfo where it runs, else 4).",
)
@click.option(
    "--tasks-per-node",
    type=click.IntRange(min=1),
    default=None,
    help="slurm: tasks per node (default: one per GPU, or one per node without GPUs).",
)
@click.option(
    "--wait/--no-wait",
    "wait",
    default=None,
    help="slurm: follow the jobs until they end (default: on an interactive terminal).",
)
@click.option("--partition", default=None, help="slurm: partition.")
@click.option("--account", default=None, help="slurm: account.")
@click.option("--sbatch-arg", "sbatch_args", multiple=True, help="slurm: one more sbatch option.")
@click.option(
    "--report/--no-report",
    default=True,
    show_default=True,
    help="Print the scaling report when the sweep ends.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=False)
@click.pass_context
def command(
    ctx: click.Context,
    workers_text: str,
    strategies: tuple[str, ...],
    repeat: int,
    timeout_s: float,
    launcher: str,
    address: str | None,
    instance_type: str | None,
    sweep_id: str | None,
    resume: bool,
    gpus_per_node: int | None,
    tasks_per_node: int | None,
    wait: bool | None,
    partition: str | None,
    account: str | None,
    sbatch_args: tuple[str, ...],
    report: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND (after `--`) for every strategy × worker count and record a sweep.

    \b
    advisor scale --workers 1,2,4 --strategy multiworker --strategy jax -- python train.py
    """
    plan, runs_dir = _checked_plan(
        ctx, command, workers_text, strategies, repeat, sweep_id, launcher, address, resume
    )
    resumed = _resumed(ctx, plan, runs_dir, launcher, timeout_s) if resume else None
    if resumed is not None and not resumed.plan.configs:
        _summary(ctx, resumed.record, runs_dir, report)
        return
    if resumed is not None:
        plan = resumed.plan
    if launcher == "slurm":
        from advisor.launch.shared import check_runs_dir
        from advisor.launch.slurm import SlurmOptions, check_horovod, node_addresses, pmix_refusal

        if any(c.strategy == "horovod" for c in plan.configs):  # before anything is written
            check_horovod([c.strategy for c in plan.configs], pmix_refusal(partition))
        check_runs_dir(runs_dir, node_addresses(partition), lambda line: click.echo(line, err=True))
        options = SlurmOptions(
            gpus_per_node=gpus_per_node,
            tasks_per_node=tasks_per_node,
            partition=partition,
            account=account,
            extra=list(sbatch_args),
        )
        record = _slurm(plan, runs_dir, timeout_s, instance_type, options, wait, resumed)
    elif launcher == "ray":
        earlier = resumed.record if resumed is not None else None
        record, wedged = _ray(plan, runs_dir, timeout_s, instance_type, address, earlier)
        if wedged:
            _summary_then_exit(ctx, record, runs_dir, report)
    else:
        from advisor.launch.progress import Display
        from advisor.launch.sweep import new_record, run_sweep

        if resumed is not None:
            record = resumed.record
        else:
            record = new_record(plan, "local", timeout_s, instance_type)
        with Display(record, runs_dir, measured=measured_rate) as display:
            run_sweep(plan, runs_dir, timeout_s, instance_type, display=display, record=record)
    if record is not None:
        _summary(ctx, record, runs_dir, report)


def _checked_plan(
    ctx: click.Context,
    command: tuple[str, ...],
    workers_text: str,
    strategies: tuple[str, ...],
    repeat: int,
    sweep_id: str | None,
    launcher: str,
    address: str | None,
    resume: bool = False,
) -> tuple[Plan, Path]:
    """The sweep's plan and its local store, once every check before launching has passed (with
    ``resume``: the plan of the whole sweep, what the command line leaves out taken from it)."""
    from advisor.errors import UsageError
    from advisor.launch.plan import RUN_ID_SAFE, check_available, make_plan, parse_workers
    from advisor.store.paths import resolve_runs_dir

    if sweep_id is not None and not RUN_ID_SAFE.match(sweep_id):
        raise UsageError(f"--sweep-id {sweep_id!r}: use letters, digits, '.', '_' and '-' only")
    if resume:
        from advisor.launch.resume import recorded_inputs
        from advisor.store.paths import resolve_runs_dir as _runs

        given = click.core.ParameterSource.COMMANDLINE
        command, workers_text, strategies, repeat = recorded_inputs(
            _runs(runs_dir_option(ctx)),
            sweep_id,
            (command, workers_text, strategies, repeat),
            workers_given=ctx.get_parameter_source("workers_text") == given,
            repeat_given=ctx.get_parameter_source("repeat") == given,
        )
    plan = make_plan(
        list(command),
        parse_workers(workers_text),
        list(strategies) or ["multiworker"],
        repeat,
        sweep_id,
    )
    check_available([c.strategy for c in plan.configs], launcher)
    if address is not None and launcher != "ray":
        raise UsageError("--address is for --launcher ray")
    if launcher == "ray":
        from advisor.launch.ray_cluster import check_ray_plan

        check_ray_plan(plan)
    from advisor.store.paths import store_url

    if store_url(runs_dir_option(ctx)) is not None:
        raise UsageError(
            "advisor scale launches and watches its workers in a local store: give a local "
            "--runs-dir (an S3 store is for AdvisorCallback and the reading commands)"
        )
    runs_dir = resolve_runs_dir(runs_dir_option(ctx))
    from advisor.store.sweep import sweep_dir as _sweep_dir

    if _sweep_dir(runs_dir, plan.sweep_id).exists() and not resume:
        raise UsageError(
            f"sweep {plan.sweep_id} already exists in {runs_dir}; choose another --sweep-id, or "
            "add --resume to measure the configurations that did not finish"
        )
    return plan, runs_dir


def _resumed(
    ctx: click.Context, plan: Plan, runs_dir: Path, launcher: str, timeout_s: float
) -> Resume:
    """The resumed sweep (the finished configurations kept, the others set aside), said."""
    from advisor.launch.resume import resume
    from advisor.store.sweep import read_sweep, sweep_dir, write_sweep

    done = resume(read_sweep(sweep_dir(runs_dir, plan.sweep_id)), plan, runs_dir, launcher)
    done.record.command, done.record.timeout_s = list(plan.command), timeout_s
    write_sweep(runs_dir, done.record)
    for line in done.describe():
        click.echo(line, err=True)
    return done


def measured_rate(run_dir: Path) -> float | None:
    """An ended run's samples/s as ``report``, ``runs`` and the TUI give it (not its last
    window)."""
    from advisor.service import RunService

    value = RunService(run_dir.parent).analyse(run_dir).facts.get("throughput.samples_per_s")
    return float(value) if isinstance(value, (int, float)) else None


def _summary(ctx: click.Context, record: SweepRecord, runs_dir: Path, report: bool) -> None:
    """How every configuration ended, the failures' reasons, and the scaling report."""
    from advisor.store.sweep import sweep_dir

    failed = [c for c in record.configs if c.status == "failed"]
    click.echo(
        f"sweep {record.sweep_id}: {len(record.configs) - len(failed)} finished, "
        f"{len(failed)} failed; {sweep_dir(runs_dir.resolve(), record.sweep_id)}",
        err=True,
    )
    for rec in failed:
        click.echo(f"  {rec.strategy} ×{rec.workers}: {rec.reason}", err=True)
        if rec.log_tail:
            for line in rec.log_tail.splitlines()[-5:]:
                click.echo(f"    | {line}", err=True)
        if rec.hint:
            click.echo(f"    hint: {rec.hint}", err=True)
    if report and len(failed) < len(record.configs):
        from advisor.render.scaling import render_table
        from advisor.service import RunService

        table = RunService(runs_dir.resolve()).scaling_table(record.sweep_id)
        click.echo(render_table(table, "text"), nl=False)
    if failed:
        ctx.exit(1)


def _ray(
    plan: Plan,
    runs_dir: Path,
    timeout_s: float,
    instance_type: str | None,
    address: str | None,
    record: SweepRecord | None = None,
) -> tuple[SweepRecord, bool]:
    """Run the sweep on a Ray cluster (at ``address``, or a local one started for it); the record,
    and whether Ray was left wedged in this process (it did not shut down)."""
    from advisor.launch.progress import Display
    from advisor.launch.ray_cluster import (
        cluster_cpus,
        node_addresses,
        processes_of,
        ray_runner,
        ray_session,
    )
    from advisor.launch.shared import check_runs_dir
    from advisor.launch.sweep import new_record, run_sweep

    record = record or new_record(plan, "ray", timeout_s, instance_type)
    with ray_session(address, cluster_cpus(max(processes_of(c) for c in plan.configs))) as session:
        check_runs_dir(
            runs_dir, node_addresses(session.ray), lambda line: click.echo(line, err=True)
        )
        with Display(record, runs_dir, measured=measured_rate) as display:
            run_sweep(
                plan,
                runs_dir,
                timeout_s,
                instance_type,
                display=display,
                record=record,
                runner=ray_runner(session.ray),
            )
    return record, session.wedged


def _summary_then_exit(
    ctx: click.Context, record: SweepRecord, runs_dir: Path, report: bool
) -> NoReturn:
    """The summary, then the end of the process without Python's exit, which a Ray that did not
    shut down would crash (advisor/launch/ray_stop.py)."""
    from advisor.launch.ray_stop import ERROR_EXIT, exit_now

    code = 0
    try:
        _summary(ctx, record, runs_dir, report)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except Exception as exc:  # noqa: BLE001 (the process ends below: say why, in one line)
        click.echo(f"internal error ({type(exc).__name__}: {exc})", err=True)
        code = ERROR_EXIT
    exit_now(code)


def _slurm(
    plan: Plan,
    runs_dir: Path,
    timeout_s: float,
    instance_type: str | None,
    options: SlurmOptions,
    wait: bool | None,
    resumed: Resume | None = None,
) -> SweepRecord | None:
    """Submit the sweep; with ``wait``, follow its jobs and return the record to summarise."""
    import sys

    from advisor.launch.sweep import follow_sweep, submit_sweep

    earlier = resumed.record if resumed is not None else None
    record = submit_sweep(plan, runs_dir, timeout_s, options, instance_type, earlier)
    for rec in record.configs:
        if resumed is not None and any(rec.run_id == k.run_id for k in resumed.kept):
            continue
        where = f"{rec.layout}; {rec.script}"
        if rec.job_id:
            click.echo(f"{rec.strategy} ×{rec.workers}: submitted job {rec.job_id} ({where})")
        elif rec.status == "failed":
            click.echo(f"{rec.strategy} ×{rec.workers}: not submitted: {rec.reason}", err=True)
        else:
            click.echo(f"{rec.strategy} ×{rec.workers}: wrote {rec.script} ({rec.layout})")
    if not any(rec.job_id for rec in record.configs):
        if any(rec.status == "failed" for rec in record.configs):
            return record  # sbatch refused every script: each one's reason
        click.echo(
            "sbatch is not installed here: submit the scripts on the cluster "
            "(`sbatch FILE`), then `advisor report " + record.sweep_id + "`",
            err=True,
        )
        return None
    if wait is None:
        wait = sys.stdin.isatty() and sys.stderr.isatty()
    if not wait:
        click.echo(
            f"follow the jobs with squeue; when they have ended: advisor report {record.sweep_id}",
            err=True,
        )
        return None
    from advisor.launch.progress import Display

    try:
        with Display(record, runs_dir.resolve(), measured=measured_rate) as display:
            follow_sweep(record, runs_dir, timeout_s, display=display)
    except KeyboardInterrupt:
        jobs = " ".join(rec.job_id for rec in record.configs if rec.job_id)
        click.echo(f"stopped following; the jobs go on (scancel {jobs} to end them)", err=True)
        raise SystemExit(130) from None
    return record
