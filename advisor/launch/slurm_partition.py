"""The partition a sweep is submitted to, read before anything is submitted, and the layout of
each configuration's tasks that fits it.

``sinfo -N`` gives the partition's nodes (those that can run jobs: not down, drained or failing),
their CPUs and GPUs; ``scontrol show partition`` its node and time limits. A multi-process
configuration gets ``tasks_per_node`` tasks on each of ⌈N / tasks_per_node⌉ nodes; where that is
more nodes than the partition has, the tasks are packed onto the nodes it has (a 2-worker job on a
one-node partition runs as 2 tasks on 1 node, not as a 2-node job Slurm would keep pending for
ever). An explicit ``--tasks-per-node`` is kept as given. ``--time`` is capped at the partition's
time limit. Where Slurm cannot be asked (scripts written for another cluster) the layout is the
default one.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.launch.slurm_text import Runner, gpus_in_gres, parse_scontrol, run_seconds

# Node states (sinfo %t, without its * ~ # ! % $ @ ^ - suffixes) of nodes that cannot run a job.
UNUSABLE = ("down", "drain", "drng", "fail", "failg", "maint", "inval", "futr", "npc")


@dataclass(frozen=True)
class Partition:
    """What a job of the partition can have."""

    name: str
    nodes: int  # nodes that can run a job now
    cpus_per_node: int  # the smallest count among them
    gpus_per_node: int  # the largest count among them
    max_nodes: int | None = None  # per job; None: unlimited
    max_time_s: float | None = None  # None: unlimited

    @property
    def node_limit(self) -> int:
        """The most nodes one job of this partition can get."""
        return min(self.nodes, self.max_nodes) if self.max_nodes else self.nodes


@dataclass(frozen=True)
class Layout:
    """Where one configuration's tasks go: ``nodes`` × ``tasks_per_node`` (the last node may hold
    fewer), and why it is not the default (``packed``)."""

    tasks: int
    nodes: int
    tasks_per_node: int
    packed: str | None = None

    def describe(self) -> str:
        text = (
            f"{self.tasks} task{'s' if self.tasks != 1 else ''} on {self.nodes} "
            f"node{'s' if self.nodes != 1 else ''}"
        )
        return f"{text} ({self.packed})" if self.packed else text


def _stripped_state(state: str) -> str:
    return state.rstrip("*~#!%$@^-+")


def read_partition(name: str | None, run: Runner) -> Partition | None:
    """The partition ``name`` (None: the default one) as Slurm describes it now; None where
    sinfo cannot be asked or does not know it."""
    out = run(["sinfo", "-h", "-N", "-o", "%N|%c|%G|%t|%P"] + (["-p", name] if name else []))
    if not out:
        return None
    nodes: dict[str, tuple[int, int]] = {}
    partition = name
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 5 or not (
            parts[4].rstrip("*") == name if name else parts[4].endswith("*")
        ):
            continue
        partition = parts[4].rstrip("*")
        if _stripped_state(parts[3]) in UNUSABLE:
            continue
        cpus = int(parts[1]) if parts[1].isdigit() else 1
        nodes[parts[0]] = (cpus, gpus_in_gres(parts[2]))
    if partition is None:
        return None
    limits = parse_scontrol(run(["scontrol", "-o", "show", "partition", partition]) or "")
    max_nodes = limits.get("MaxNodes", "UNLIMITED")
    max_time = limits.get("MaxTime", "UNLIMITED")
    return Partition(
        partition,
        len(nodes),
        min((c for c, _ in nodes.values()), default=0),
        max((g for _, g in nodes.values()), default=0),
        int(max_nodes) if max_nodes.isdigit() else None,
        None if max_time in ("UNLIMITED", "INFINITE", "") else run_seconds(max_time),
    )


def layout_for(workers: int, per_node: int, explicit: bool, partition: Partition | None) -> Layout:
    """The layout of a multi-process configuration of ``workers`` tasks, ``per_node`` on each
    node by default (``explicit``: the user's ``--tasks-per-node``, kept as given)."""
    per = max(1, min(workers, per_node))
    nodes = -(-workers // per)
    if explicit or partition is None or partition.node_limit < 1:
        return Layout(workers, nodes, per)
    limit = partition.node_limit
    if nodes <= limit:
        return Layout(workers, nodes, per)
    per = -(-workers // limit)
    why = f"packed: partition {partition.name} has {limit} node{'s' if limit != 1 else ''}"
    if partition.cpus_per_node and per > partition.cpus_per_node:
        why += f" of {partition.cpus_per_node} CPUs"
    return Layout(workers, -(-workers // per), per, why)


def time_minutes(timeout_s: float | None, partition: Partition | None) -> int | None:
    """``--time`` in whole minutes: the timeout's, at most the partition's limit."""
    if not timeout_s:
        return None
    minutes = max(1, -(-int(timeout_s) // 60))
    if partition is not None and partition.max_time_s:
        minutes = min(minutes, max(1, int(partition.max_time_s // 60)))
    return minutes
