"""Slurm: one sbatch script per configuration (srun, one task per GPU), submitted when possible.

Multi-process strategies get N tasks with one GPU each, spread over ⌈N / gpus-per-node⌉ nodes;
``mirrored`` gets one task with N GPUs on one node. Each task runs through
``python -m advisor.launch.task`` which turns Slurm's variables into the worker's role.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import UsageError
from advisor.launch.plan import Config, base_env

SUBMIT_TIMEOUT_S = 60


@dataclass
class SlurmOptions:
    gpus_per_node: int = 4
    partition: str | None = None
    account: str | None = None
    extra: list[str] = field(default_factory=list)  # more sbatch options, e.g. "--qos=normal"
    port_base: int = 29400


def _python_of(command: Sequence[str]) -> str:
    first = Path(command[0]).name if command else ""
    return command[0] if first.startswith("python") else "python"


def sbatch_script(
    config: Config, command: Sequence[str], sweep_id: str, runs_dir: Path, log_dir: Path,
    timeout_s: float | None = None, options: SlurmOptions | None = None,
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
        if n > opts.gpus_per_node:
            raise UsageError(f"{config.label}: mirrored runs on one node, which has only "
                             f"{opts.gpus_per_node} GPUs (--gpus-per-node)")
        lines += ["#SBATCH --nodes=1", "#SBATCH --ntasks=1", f"#SBATCH --gpus-per-task={n}"]
    else:
        nodes = -(-n // opts.gpus_per_node)
        lines += [f"#SBATCH --nodes={nodes}", f"#SBATCH --ntasks={n}",
                  f"#SBATCH --ntasks-per-node={min(n, opts.gpus_per_node)}", "#SBATCH --gpus-per-task=1"]
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
    env["ADVISOR_PORT_BASE"] = str(opts.port_base)
    if config.strategy not in ("mirrored", "single"):
        env["ADVISOR_TASKS_PER_NODE"] = str(min(n, opts.gpus_per_node))
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    lines.append('export ADVISOR_SLURM_HOSTS="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd, -)"')
    srun = ["srun", "--kill-on-bad-exit=1"]
    if config.strategy == "horovod":
        srun.append("--mpi=pmix")
    wrapper = [_python_of(command), "-m", "advisor.launch.task", "--"]
    lines.append(shlex.join(srun + wrapper + list(command)))
    return "\n".join(lines) + "\n"


def submit(script: Path) -> str | None:
    """``sbatch --parsable script`` → the job id; None where sbatch is not installed."""
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        return None
    try:
        done = subprocess.run([sbatch, "--parsable", str(script)], capture_output=True, text=True,
                              timeout=SUBMIT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError(f"sbatch did not answer within {SUBMIT_TIMEOUT_S} s ({script})") from None
    if done.returncode != 0:
        raise UsageError(f"sbatch refused {script}: {(done.stderr or done.stdout).strip()[:200]}")
    return done.stdout.strip().split(";")[0]
