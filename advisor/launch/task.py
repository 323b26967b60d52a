"""The per-task wrapper of Slurm jobs: ``python -m advisor.launch.task -- python train.py ARGS``.

``srun`` starts one copy per task; this wrapper turns Slurm's variables into the role variables of
``advisor.launch.role`` (rank, world size, ``TF_CONFIG`` for multiworker, the coordinator address
for jax) and then replaces itself with the training command.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from advisor.launch.role import tf_config

# Ports derived from the job id: 16 per job (or one per task, if more) from 10000 up, below
# Linux's ephemeral range (32768+), so that jobs sharing a node do not take each other's. One per
# rank, not per task on a node: two node daemons of one host (a test cluster) share its address.
PORT_FLOOR, PORT_SLOTS, PORTS_PER_JOB = 10000, 1400, 16


def port_base(env: Mapping[str, str], ntasks: int = 1) -> int:
    """The first port of this job's tasks: ``ADVISOR_PORT_BASE`` if set, else from the job id."""
    if env.get("ADVISOR_PORT_BASE"):
        return int(env["ADVISOR_PORT_BASE"])
    job = int(env.get("SLURM_JOB_ID", "0") or 0)
    stride = max(PORTS_PER_JOB, ntasks)
    return PORT_FLOOR + (job % (PORT_SLOTS * PORTS_PER_JOB // stride)) * stride


def tasks_per_node(text: str) -> list[int]:
    """Slurm's task counts per node, ``"2(x3),1"`` → [2, 2, 2, 1]."""
    counts: list[int] = []
    for part in text.split(","):
        count, _, times = part.strip().partition("(x")
        if count.strip().isdigit():
            counts += [int(count)] * (int(times.rstrip(")")) if times else 1)
    return counts


def task_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables to add for this task.

    Ranks fill the hosts in order (srun's default block distribution), by the step's own task
    counts per node (``SLURM_STEP_TASKS_PER_NODE``) or else blocks of ``ADVISOR_TASKS_PER_NODE``;
    task i listens on the job's port base + i.
    """
    rank = int(env.get("SLURM_PROCID", "0"))
    ntasks = int(env.get("SLURM_NTASKS", "1"))
    hosts = [h for h in env.get("ADVISOR_SLURM_HOSTS", "").split(",") if h] or [
        env.get("SLURMD_NODENAME", "127.0.0.1")
    ]
    counts = tasks_per_node(env.get("SLURM_STEP_TASKS_PER_NODE", ""))
    if sum(counts) != ntasks or len(counts) > len(hosts):
        per = int(env.get("ADVISOR_TASKS_PER_NODE", "0")) or max(1, -(-ntasks // len(hosts)))
        counts = [min(per, ntasks - i) for i in range(0, ntasks, per)]
    base = port_base(env, ntasks)
    nodes = [node for node, count in enumerate(counts) for _ in range(count)]
    addresses = [f"{hosts[min(node, len(hosts) - 1)]}:{base + i}" for i, node in enumerate(nodes)]
    out = {"ADVISOR_RANK": str(rank), "ADVISOR_WORLD_SIZE": str(ntasks)}
    strategy = env.get("ADVISOR_SCALE_STRATEGY", "single")
    if strategy == "multiworker":
        out["TF_CONFIG"] = tf_config(rank, addresses)
    elif strategy == "jax":
        out["ADVISOR_COORDINATOR"] = addresses[0]
    return out


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        print("usage: python -m advisor.launch.task -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    os.environ.update(task_env(os.environ))
    os.execvp(args[0], args)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
