"""Slurm: one sbatch script per configuration (srun, one task per GPU or per node), submitted
one after the other (each job starts when the previous one has ended: ``--dependency=afterany``).

Multi-process strategies get N tasks, ``tasks_per_node`` on each of ⌈N / tasks_per_node⌉ nodes,
with one GPU each where the partition has GPUs; ``mirrored`` gets one task with N GPUs (or N
logical CPU devices) on one node. Each task runs through ``python -m advisor.launch.task``, which
turns Slurm's variables into the worker's role. The script resolves the job's node names to their
addresses (``NodeAddr``) and records how its job step ended in ``exit-<job id>`` beside its log;
the step's output reaches that log through ``advisor.launch.logpipe`` (redacted).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import UsageError
from advisor.launch.plan import Config, base_env

SUBMIT_TIMEOUT_S = 60
QUERY_TIMEOUT_S = 20
# GPUs per node assumed when a script is written for a cluster this machine cannot ask (no sinfo).
DEFAULT_GPUS_PER_NODE = 4
_GPU_GRES = re.compile(r"\bgpu(?::[^:,(\s]+)?:(\d+)")

# The job's node addresses in job order: srun's block distribution puts consecutive ranks on
# one node, in this order. A node without an address keeps its name.
HOSTS_LINES = """\
hosts=()
for node in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
  addr="$(scontrol -o show node "$node" | sed -n 's/.*NodeAddr=\\([^ ]*\\).*/\\1/p')"
  hosts+=("${addr:-$node}")
done
export ADVISOR_SLURM_HOSTS="$(IFS=,; echo "${hosts[*]}")"
export ADVISOR_SLURM_NODES="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd, -)"
"""


@dataclass
class SlurmOptions:
    gpus_per_node: int | None = None  # None: ask sinfo where it runs, else DEFAULT_GPUS_PER_NODE
    tasks_per_node: int | None = None  # None: one per GPU, or one per node without GPUs
    partition: str | None = None
    account: str | None = None
    extra: list[str] = field(default_factory=list)  # more sbatch options, e.g. "--qos=normal"
    port_base: int | None = None  # None: the task derives its port from the job id

    @property
    def gpus(self) -> int:
        return DEFAULT_GPUS_PER_NODE if self.gpus_per_node is None else self.gpus_per_node

    @property
    def per_node(self) -> int:
        return self.tasks_per_node or self.gpus or 1


def _python_of(command: Sequence[str]) -> str:
    first = Path(command[0]).name if command else ""
    return command[0] if first.startswith("python") else "python"


def exit_file(log_dir: Path, job_id: str) -> Path:
    """Where the batch script writes its job step's exit code."""
    return log_dir / f"exit-{job_id}"


def sbatch_script(
    config: Config,
    command: Sequence[str],
    sweep_id: str,
    runs_dir: Path,
    log_dir: Path,
    timeout_s: float | None = None,
    options: SlurmOptions | None = None,
    instance_type: str | None = None,
) -> str:
    """The text of the sbatch script of one configuration."""
    opts = options or SlurmOptions()
    n = config.workers
    lines = [
        "#!/bin/bash",
        f"# advisor scale: sweep {sweep_id}, configuration {config.label} (generated; edit freely)",
        f"#SBATCH --job-name=advisor-{config.label}",
    ]
    if config.strategy in ("mirrored", "single"):
        if opts.gpus and n > opts.gpus:
            raise UsageError(
                f"{config.label}: mirrored runs on one node, which has only "
                f"{opts.gpus} GPUs (--gpus-per-node)"
            )
        lines += ["#SBATCH --nodes=1", "#SBATCH --ntasks=1"]
        if opts.gpus:
            lines.append(f"#SBATCH --gpus-per-task={n}")
    else:
        per_node = min(n, opts.per_node)
        lines += [
            f"#SBATCH --nodes={-(-n // per_node)}",
            f"#SBATCH --ntasks={n}",
            f"#SBATCH --ntasks-per-node={per_node}",
        ]
        if opts.gpus:
            lines.append("#SBATCH --gpus-per-task=1")
    lines.append(f"#SBATCH --output={log_dir}/slurm-%j.log")
    if timeout_s:
        lines.append(f"#SBATCH --time={max(1, -(-int(timeout_s) // 60))}")
    if opts.partition:
        lines.append(f"#SBATCH --partition={opts.partition}")
    if opts.account:
        lines.append(f"#SBATCH --account={opts.account}")
    lines += [f"#SBATCH {shlex.quote(x)}" for x in opts.extra]
    lines += ["", "set -euo pipefail"]
    env = base_env(config, sweep_id, runs_dir)
    if config.strategy == "mirrored":
        env["ADVISOR_LOGICAL_DEVICES"] = str(n)
    if instance_type:
        env["ADVISOR_INSTANCE_TYPE"] = instance_type
    if opts.port_base is not None:
        env["ADVISOR_PORT_BASE"] = str(opts.port_base)
    if config.strategy not in ("mirrored", "single"):
        env["ADVISOR_TASKS_PER_NODE"] = str(min(n, opts.per_node))
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    lines += HOSTS_LINES.splitlines()
    srun = ["srun", "--kill-on-bad-exit=1"]
    if config.strategy == "horovod":  # needs Slurm with PMIx and Horovod built with MPI
        srun.append("--mpi=pmix")
    wrapper = [_python_of(command), "-m", "advisor.launch.task", "--"]
    # the job's log is kept in the store: its lines are redacted before they reach it (logpipe)
    redact = [_python_of(command), "-m", "advisor.launch.logpipe", "--"]
    lines += [
        "code=0",
        f"{shlex.join(srun + wrapper + list(command))} 2>&1 | {shlex.join(redact + list(command))}"
        " || code=$?",
        f'echo "$code" > {shlex.quote(str(log_dir))}/exit-"$SLURM_JOB_ID"',
        'exit "$code"',
    ]
    return "\n".join(lines) + "\n"


def submit(script: Path, after: str | None = None) -> str | None:
    """``sbatch --parsable script`` → the job id; None where sbatch is not installed.

    ``after``: a job id this one waits for (``--dependency=afterany``), so that configurations
    never share nodes while they are measured."""
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        return None
    argv = [sbatch, "--parsable"]
    if after:
        argv.append(f"--dependency=afterany:{after}")
    try:
        done = subprocess.run(
            argv + [str(script)],
            capture_output=True,
            text=True,
            timeout=SUBMIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise UsageError(f"sbatch did not answer within {SUBMIT_TIMEOUT_S} s ({script})") from None
    if done.returncode != 0:
        raise UsageError(f"sbatch refused {script}: {(done.stderr or done.stdout).strip()[:200]}")
    return done.stdout.strip().split(";")[0]


def pmix_refusal(partition: str | None = None) -> str | None:
    """Slurm's reason why ``srun --mpi=pmix`` cannot start here (its error line), or None when it
    can or srun cannot be asked at all (scripts written for another cluster).

    ``srun --mpi=list`` is not enough: Debian's Slurm 22.05 lists pmix but fails to load its
    library when a step starts. ``srun --test-only`` loads the MPI plugin without running a job."""
    srun = shutil.which("srun")
    if srun is None:
        return None
    argv = [srun, "--mpi=pmix", "--test-only", "-n", "1"] + (["-p", partition] if partition else [])
    try:
        done = subprocess.run(
            argv + ["true"], capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=False
        )
    except (subprocess.TimeoutExpired, OSError):
        return None
    errors = [line.strip() for line in done.stderr.splitlines() if "MPI" in line or "pmix" in line]
    if done.returncode == 0 or not errors:
        return None
    reason = errors[-1].removeprefix("srun: error:").strip()
    if any("load PMIx library" in line for line in errors):
        reason += "; its PMIx library does not load"
    return reason


def check_horovod(strategies: Sequence[str], refusal: str | None) -> None:
    """Refuse ``horovod`` before anything is submitted where this Slurm cannot start it.

    Under srun, Horovod learns its ranks from MPI over PMIx (``srun --mpi=pmix``), which needs a
    Slurm with a working PMIx and a Horovod built with MPI (a Gloo-only Horovod would start N
    separate one-process jobs instead)."""
    if "horovod" not in strategies or refusal is None:
        return
    raise UsageError(
        f"strategy horovod under --launcher slurm needs srun --mpi=pmix, which this Slurm refuses "
        f"({refusal}): sweep horovod with --launcher local (horovodrun --gloo) or choose another "
        "strategy"
    )


def node_addresses(partition: str | None = None) -> list[str]:
    """The partition's node addresses (``sinfo -N -o %o``); empty where sinfo cannot be asked."""
    sinfo = shutil.which("sinfo")
    if sinfo is None:
        return []
    argv = [sinfo, "-h", "-N", "-o", "%o"] + (["-p", partition] if partition else [])
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=False
        )
    except (subprocess.TimeoutExpired, OSError):
        return []
    return (
        sorted({line.strip() for line in done.stdout.splitlines() if line.strip()})
        if done.returncode == 0
        else []
    )


def gpus_in_gres(text: str) -> int:
    """The most GPUs any node has, from ``sinfo -o %G`` lines (``(null)``, ``gpu:4``,
    ``gpu:a100:8(S:0-1)``); 0 where no line names GPUs."""
    return max((int(m) for m in _GPU_GRES.findall(text)), default=0)


def detect_gpus_per_node(partition: str | None = None) -> int | None:
    """GPUs per node of the partition by ``sinfo``; None where sinfo is absent or fails."""
    sinfo = shutil.which("sinfo")
    if sinfo is None:
        return None
    argv = [sinfo, "-h", "-o", "%G"] + (["-p", partition] if partition else [])
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=False
        )
    except (subprocess.TimeoutExpired, OSError):
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return gpus_in_gres(done.stdout)
