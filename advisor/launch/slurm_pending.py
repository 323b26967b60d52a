"""Pending reasons that waiting cannot clear, and the option that clears each.

Slurm keeps a job it can never start pending, with a reason, until someone cancels it: a job that
asks for more nodes than its partition has (``PartitionNodeLimit``), more CPUs, GPUs or memory
per node than any node has (``PartitionConfig``), more time than the partition allows
(``PartitionTimeLimit``), more than a per-job limit of its account or QOS allows
(``AssocMax…PerJob…``, ``QOSMax…PerJob…``), nodes that are down or drained (``ReqNodeNotAvail``),
features no node has (``BadConstraints``), or an account or QOS that is not valid. The follower
cancels such a job at once and fails its configuration with Slurm's reason and the fix; the rest
of the sweep goes on. Reasons that clear by waiting (``Resources``, ``Priority``, ``Dependency``,
the group limits ``AssocGrp…`` / ``QOSGrp…`` and per-user limits, which free up as other jobs end)
are waited for, up to the sweep's timeout.
"""

from __future__ import annotations

import re

from advisor.launch.slurm_text import Runner, run_slurm

# Each reason that cannot clear, and what to change.
FIXES = {
    "PartitionNodeLimit": "the job asks for more nodes than its partition allows: raise "
    "--tasks-per-node (more tasks on each node), sweep fewer --workers, or choose a larger "
    "--partition (a --nodes among --sbatch-arg is kept as given)",
    "PartitionConfig": "the partition has no nodes like the job asks for (as many nodes, or "
    "as many CPUs, GPUs or memory on each; compare the layout with `sinfo -N -p PARTITION -o "
    "'%N %c %G %m'`): fewer nodes (a higher --tasks-per-node), fewer tasks or GPUs per node (a "
    "lower --tasks-per-node or --gpus-per-node), drop the --sbatch-arg that asks for more, or "
    "choose another --partition",
    "PartitionTimeLimit": "the job asks for more time than its partition allows: lower --timeout "
    "or choose another --partition",
    "PartitionDown": "the partition is down: choose another --partition",
    "PartitionInactive": "the partition is inactive: choose another --partition",
    "BadConstraints": "no node has the features the job asks for: change the --constraint "
    "given with --sbatch-arg",
    "InvalidAccount": "the account is not valid: give a valid --account",
    "InvalidQOS": "the QOS is not valid for this account: give a valid --sbatch-arg=--qos=…",
    "QOSJobLimit": "the QOS does not allow this job: choose another --sbatch-arg=--qos=…",
    "DependencyNeverSatisfied": "the job it waits for can never end the way it needs",
    "ReqNodeNotAvail": "nodes the job needs are down or drained: choose another --partition, or "
    "exclude them with --sbatch-arg=--exclude=…",
}
# Per-job limits of an association or QOS (QOSMaxNodePerJobLimit, AssocMaxWallDurationPerJobLimit,
# QOSMinGRES): this job exceeds them whatever else runs.
_PER_JOB_LIMIT = re.compile(r"^(?:Assoc|QOS)(?:Max\w*PerJob\w*|Max\w*Wall\w*|Min\w*)$")
PER_JOB_FIX = (
    "the job exceeds a per-job limit of its account or QOS: ask for less (fewer nodes or "
    "tasks per job, a shorter --timeout), or use another --account or --sbatch-arg=--qos=…"
)
# Node states (sinfo %t, suffixes stripped) that do not clear without an administrator.
_GONE = frozenset({"down", "drain", "drng", "drained", "fail", "failg", "inval", "futr"})


def reason_word(reason: str | None) -> str:
    """Slurm's reason without its detail: ``ReqNodeNotAvail,_UnavailableNodes:n1`` →
    ``ReqNodeNotAvail``."""
    return re.split(r"[,\s(]", (reason or "").strip(), maxsplit=1)[0]


def unavailable_nodes(reason: str) -> list[str]:
    """The nodes a ``ReqNodeNotAvail`` reason names (``…UnavailableNodes:n[1-2],n5``)."""
    _, sep, nodes = reason.partition("UnavailableNodes:")
    return [n for n in re.split(r",(?![^\[]*\])", nodes.strip()) if n] if sep else []


def nodes_gone(nodes: list[str], run: Runner) -> bool:
    """Every one of ``nodes`` is down, drained or failed (sinfo), not merely busy or reserved."""
    if not nodes:
        return False
    out = run(["sinfo", "-h", "-N", "-n", ",".join(nodes), "-o", "%t"])
    states = {s.strip().rstrip("*~#!%$@^-+") for s in (out or "").split() if s.strip()}
    return bool(states) and states <= _GONE


def cannot_start(reason: str | None, run: Runner = run_slurm) -> str | None:
    """The fix when a pending job's ``reason`` cannot clear by waiting; None when it can (or
    nothing says it cannot)."""
    word = reason_word(reason)
    if word == "ReqNodeNotAvail":
        return FIXES[word] if nodes_gone(unavailable_nodes(reason or ""), run) else None
    if word in FIXES:
        return FIXES[word]
    if _PER_JOB_LIMIT.match(word):
        return PER_JOB_FIX
    return None
