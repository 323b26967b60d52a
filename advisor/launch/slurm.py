"""Slurm: one sbatch script per configuration (srun, one task per GPU or per node), submitted
one after the other (each job starts when the previous one has ended: ``--dependency=afterany``).

Multi-process strategies get N tasks, ``tasks_per_node`` on each of ⌈N / tasks_per_node⌉ nodes
(packed onto fewer where the partition has fewer: ``slurm_partition``), with one GPU each where
the partition has GPUs; ``mirrored`` gets one task with N GPUs (or N
logical CPU devices) on one node. Each task runs through ``python -m advisor.launch.task``, which
turns Slurm's variables into the worker's role. The script resolves the job's node names to their
addresses (``NodeAddr``) and records how its job step ended in ``exit-<job id>`` beside its log;
the step's output reaches that log through ``advisor.launch.logpipe`` (redacted). The script is
kept in the store: secrets of the command line are read from ``ADVISOR_SECRET_<n>`` variables,
which ``submit`` gives sbatch (export them before submitting such a script by hand).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import UsageError
from advisor.launch.plan import Config, base_env
from advisor.launch.slurm_partition import Layout, Partition, layout_for, time_minutes
from advisor.launch.slurm_text import QUERY_TIMEOUT_S

SUBMIT_TIMEOUT_S = 60
_NODES_OPTION = re.compile(r"^(?:--nodes=|-N\s*)(\S+)$")
# GPUs per node assumed when a script is written for a cluster this machine cannot ask (no sinfo).
DEFAULT_GPUS_PER_NODE = 4

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
    gpus_per_node: int | None = None  # None: the partition's (sinfo), else DEFAULT_GPUS_PER_NODE
    tasks_per_node: int | None = None  # None: one per GPU, or one per node without GPUs
    partition: str | None = None
    account: str | None = None
    extra: list[str] = field(default_factory=list)  # more sbatch options, e.g. "--qos=normal"
    port_base: int | None = None  # None: the task derives its port from the job id
    cluster: Partition | None = None  # what the partition has, read before submitting

    @property
    def gpus(self) -> int:
        return DEFAULT_GPUS_PER_NODE if self.gpus_per_node is None else self.gpus_per_node

    @property
    def per_node(self) -> int:
        return self.tasks_per_node or self.gpus or 1

    @property
    def user_nodes(self) -> str | None:
        """The node count the user gave among the sbatch options (``--nodes=5``, ``-N 5``)."""
        found = [m[1] for x in self.extra if (m := _NODES_OPTION.match(x.strip()))]
        return found[-1] if found else None

    def layout(self, config: Config) -> Layout:
        """Where the configuration's tasks go, fitted to the partition (slurm_partition)."""
        given = self.user_nodes
        if given and given.isdigit():
            tasks = 1 if config.strategy in ("mirrored", "single") else config.workers
            per = max(-(-tasks // max(1, int(given))), min(tasks, self.per_node))
            return Layout(tasks, int(given), per, f"--nodes={given} from --sbatch-arg")
        if config.strategy in ("mirrored", "single"):
            return Layout(1, 1, 1)
        explicit = self.tasks_per_node is not None
        return layout_for(config.workers, self.per_node, explicit, self.cluster)


def _resource_lines(config: Config, opts: SlurmOptions, layout: Layout) -> list[str]:
    """The ``#SBATCH`` lines of the tasks, nodes and GPUs of one configuration.

    A ``--nodes`` among the user's sbatch options is kept as their node count: the script then
    asks for tasks per node, not a task count (with one, sbatch shrinks ``--nodes`` to it)."""
    n = config.workers
    nodes = [] if opts.user_nodes else [f"#SBATCH --nodes={layout.nodes}"]
    tasks = [] if opts.user_nodes else [f"#SBATCH --ntasks={layout.tasks}"]
    if config.strategy in ("mirrored", "single"):
        if opts.gpus and n > opts.gpus:
            raise UsageError(
                f"{config.label}: mirrored runs on one node, which has only "
                f"{opts.gpus} GPUs (--gpus-per-node)"
            )
        per_node = ["#SBATCH --ntasks-per-node=1"] if opts.user_nodes else []
        gpus = [f"#SBATCH --gpus-per-task={n}"] if opts.gpus else []
        return nodes + tasks + per_node + gpus
    per_node = [f"#SBATCH --ntasks-per-node={layout.tasks_per_node}"]
    return nodes + tasks + per_node + (["#SBATCH --gpus-per-task=1"] if opts.gpus else [])


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
    layout = opts.layout(config)
    lines += _resource_lines(config, opts, layout)
    lines.append(f"#SBATCH --output={log_dir}/slurm-%j.log")
    minutes = time_minutes(timeout_s, opts.cluster)
    if minutes:
        lines.append(f"#SBATCH --time={minutes}")
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
        env["ADVISOR_TASKS_PER_NODE"] = str(layout.tasks_per_node)
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    lines += HOSTS_LINES.splitlines()
    srun = ["srun", "--kill-on-bad-exit=1"]
    if opts.user_nodes:  # the allocation is the user's nodes: the step has the sweep's tasks
        srun.append(f"--ntasks={layout.tasks}")
    if config.strategy == "horovod":  # needs Slurm with PMIx and Horovod built with MPI
        srun.append("--mpi=pmix")
    wrapper = [_python_of(command), "-m", "advisor.launch.task", "--"]
    # the job's log is kept in the store: its lines are redacted before they reach it (logpipe)
    redact = [_python_of(command), "-m", "advisor.launch.logpipe", "--"]
    refs = secret_refs(command)
    step, piped = shlex.join(srun + wrapper), shell_join(redact + list(command), refs)
    lines += [
        "code=0",
        f"{step} {shell_join(command, refs)} 2>&1 | {piped} || code=$?",
        f'echo "$code" > {shlex.quote(str(log_dir))}/exit-"$SLURM_JOB_ID"',
        'exit "$code"',
    ]
    return "\n".join(lines) + "\n"


def secret_refs(command: Sequence[str]) -> dict[str, str]:
    """Each secret of the command line (``secret_values``) → the variable the script reads it
    from: the script is kept in the store, the secret is not (``submit`` passes it to sbatch in
    its environment, which the job inherits)."""
    from advisor.store.redact import secret_values

    return {value: f"ADVISOR_SECRET_{i}" for i, value in enumerate(secret_values(command, {}))}


def shell_join(argv: Sequence[str], refs: dict[str, str]) -> str:
    """``shlex.join`` with each secret written as a reference to its variable (``secret_refs``)."""
    if not refs:
        return shlex.join(argv)
    pattern = re.compile("(" + "|".join(re.escape(v) for v in refs) + ")")
    words = []
    for arg in argv:
        parts = [p for p in pattern.split(arg) if p]
        words.append(
            "".join(f'"${{{refs[p]}}}"' if p in refs else shlex.quote(p) for p in parts) or "''"
        )
    return " ".join(words)


def submit(
    script: Path, after: str | None = None, secrets: dict[str, str] | None = None
) -> str | None:
    """``sbatch --parsable script`` → the job id; None where sbatch is not installed.

    ``after``: a job id this one waits for (``--dependency=afterany``), so that configurations
    never share nodes while they are measured. ``secrets``: ``secret_refs`` of the command, given
    to sbatch (and so to the job) as environment variables."""
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        return None
    argv = [sbatch, "--parsable"]
    if after:
        argv.append(f"--dependency=afterany:{after}")
    try:
        done = subprocess.run(
            argv + [str(script)],
            env={**os.environ, **{name: value for value, name in (secrets or {}).items()}},
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
