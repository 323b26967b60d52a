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

DEFAULT_PORT_BASE = 29400


def task_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables to add for this task.

    Tasks are laid out in blocks of ``ADVISOR_TASKS_PER_NODE`` over the hosts (srun's default
    block distribution); task i listens on port base + its index on the node.
    """
    rank = int(env.get("SLURM_PROCID", "0"))
    ntasks = int(env.get("SLURM_NTASKS", "1"))
    hosts = [h for h in env.get("ADVISOR_SLURM_HOSTS", "").split(",") if h] or [
        env.get("SLURMD_NODENAME", "127.0.0.1")]
    per_node = int(env.get("ADVISOR_TASKS_PER_NODE", "0")) or max(1, -(-ntasks // len(hosts)))
    base = int(env.get("ADVISOR_PORT_BASE", str(DEFAULT_PORT_BASE)))
    addresses = [f"{hosts[min(i // per_node, len(hosts) - 1)]}:{base + i % per_node}" for i in range(ntasks)]
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
