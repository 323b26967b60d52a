"""The worker's side of ``advisor scale``: its role, read from the environment.

The launcher starts the same training script for every strategy and worker count and tells each
process what it is through environment variables, so the script needs no arguments of its own:

    from advisor.launch import setup_devices
    role = setup_devices()          # before any model is built
    strategy = role.tf_strategy()   # tf.distribute strategy (None for jax / horovod)

Variables (all optional; without them the role is a single plain worker):

``ADVISOR_SCALE_STRATEGY``  multiworker | mirrored | jax | horovod | single
``ADVISOR_SCALE_WORKERS``   the configuration's size N (processes or devices)
``ADVISOR_RANK`` / ``ADVISOR_WORLD_SIZE``  this process among the processes of the configuration
``ADVISOR_LOGICAL_DEVICES`` devices for ``mirrored`` (logical CPU devices when there is no GPU)
``ADVISOR_COORDINATOR``     ``host:port`` of process 0 for ``jax`` multi-process
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

STRATEGIES = ("multiworker", "mirrored", "jax", "horovod", "single")


@dataclass(frozen=True)
class Role:
    """What this process is within one configuration of a sweep."""

    strategy: str = "single"
    workers: int = 1  # the configuration's N
    rank: int = 0  # this process
    processes: int = 1  # processes in the configuration (N for multi-process strategies, else 1)
    logical_devices: int | None = None
    coordinator: str | None = None
    sweep_id: str | None = None
    job_id: str | None = None  # the Slurm job (SLURM_JOB_ID), when run by one
    nodes: str | None = None  # the job's node names, comma-separated
    ray_job_id: str | None = None  # the Ray job (the sweep's driver), when run as Ray actors
    ray_nodes: str | None = None  # each rank's node, "address (node id)", comma-separated
    ray_actors: str | None = None  # each rank's actor id, comma-separated

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    @property
    def legacy_keras(self) -> bool:
        """The strategy needs tf_keras (Keras 3 cannot ``fit`` under MultiWorkerMirrored)."""
        return self.strategy in ("multiworker", "horovod")

    def tags(self) -> dict[str, str]:
        """Labels for ``AdvisorCallback(tags=...)``: the configuration this run belongs to (and the
        Slurm job and nodes, or the Ray job, nodes and actors, that ran it)."""
        tags = {"scale.strategy": self.strategy, "scale.workers": str(self.workers)}
        if self.job_id:
            tags["slurm.job_id"] = self.job_id
        if self.nodes:
            tags["slurm.nodes"] = self.nodes
        for key, value in (
            ("ray.job_id", self.ray_job_id),
            ("ray.nodes", self.ray_nodes),
            ("ray.actors", self.ray_actors),
        ):
            if value:
                tags[key] = value
        return tags

    def shard(self, n: int) -> slice:
        """This process's share of ``n`` samples when every process feeds its own data (jax,
        horovod)."""
        if self.strategy in ("jax", "horovod") and self.processes > 1:
            return slice(self.rank, n, self.processes)
        return slice(0, n)

    def tf_strategy(self) -> Any:
        """The ``tf.distribute`` strategy of this role; None where the strategy is not
        tf.distribute."""
        import tensorflow as tf

        if self.strategy == "mirrored":
            n = self.logical_devices or self.workers
            gpus = tf.config.list_logical_devices("GPU")
            pool = gpus if gpus else tf.config.list_logical_devices("CPU")
            return tf.distribute.MirroredStrategy(devices=[d.name for d in pool[:n]])
        if self.strategy == "multiworker":
            return tf.distribute.MultiWorkerMirroredStrategy()
        if self.strategy in ("jax", "horovod"):
            return None
        return tf.distribute.get_strategy()


def role(env: Mapping[str, str] | None = None) -> Role:
    """The role described by the environment (see the module docstring)."""
    env = os.environ if env is None else env
    strategy = env.get("ADVISOR_SCALE_STRATEGY", "single") or "single"
    if strategy not in STRATEGIES:
        strategy = "single"
    rank, processes = _rank_world(env)
    workers = _int(env.get("ADVISOR_SCALE_WORKERS")) or (processes if strategy != "mirrored" else 1)
    logical = _int(env.get("ADVISOR_LOGICAL_DEVICES"))
    if strategy == "mirrored" and logical is None:
        logical = workers
    return Role(
        strategy=strategy,
        workers=workers,
        rank=rank,
        processes=processes,
        logical_devices=logical,
        coordinator=env.get("ADVISOR_COORDINATOR") or None,
        sweep_id=env.get("ADVISOR_SWEEP_ID") or None,
        job_id=env.get("SLURM_JOB_ID") or None,
        nodes=env.get("ADVISOR_SLURM_NODES") or env.get("SLURMD_NODENAME") or None,
        ray_job_id=env.get("ADVISOR_RAY_JOB_ID") or None,
        ray_nodes=env.get("ADVISOR_RAY_NODES") or None,
        ray_actors=env.get("ADVISOR_RAY_ACTORS") or None,
    )


def setup_devices(env: Mapping[str, str] | None = None, data_parallel: bool = True) -> Role:
    """Prepare the devices and process group of this role; call it before building a model.

    ``mirrored`` without a GPU splits the CPU into N logical devices. ``jax`` joins the N
    processes with gloo CPU collectives (``keras.distribution.initialize``) and, when
    ``data_parallel``, sets a ``keras.distribution.DataParallel`` over all devices, fed with each
    process's own numpy shard. Other strategies need nothing here.
    """
    r = role(env)
    if r.strategy == "mirrored" and (r.logical_devices or 1) > 1:
        _split_cpu(r.logical_devices or 1)
    elif r.strategy == "jax":
        _join_jax(r, data_parallel)
    return r


def _split_cpu(n: int) -> None:
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        return  # MirroredStrategy uses the GPUs themselves
    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(n)]
        )
    except RuntimeError:  # the runtime was initialised already: keep what is there
        pass


def _join_jax(r: Role, data_parallel: bool) -> None:
    import jax
    import keras

    if r.processes > 1:
        # Only the CPU client uses it; checking for GPUs here would start the backend too early.
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        keras.distribution.initialize(
            job_addresses=r.coordinator, num_processes=r.processes, process_id=r.rank
        )
    if data_parallel:
        keras.distribution.set_distribution(
            keras.distribution.DataParallel(devices=jax.devices(), auto_shard_dataset=False)
        )


def _rank_world(env: Mapping[str, str]) -> tuple[int, int]:
    from advisor.probes.distributed import detect_rank_world

    rank, world = detect_rank_world(env)
    if "SLURM_PROCID" in env and "ADVISOR_RANK" not in env:
        rank, world = _int(env.get("SLURM_PROCID")) or 0, _int(env.get("SLURM_NTASKS")) or 1
    return rank, world


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


def tf_config(rank: int, addresses: list[str]) -> str:
    """``TF_CONFIG`` for worker ``rank`` of a MultiWorkerMirrored cluster at ``addresses``."""
    return json.dumps({"cluster": {"worker": addresses}, "task": {"type": "worker", "index": rank}})
