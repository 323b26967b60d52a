"""Which worker am I? Rank and world size from the launcher's environment, without imports.

Order: ``ADVISOR_RANK``/``ADVISOR_WORLD_SIZE`` (set by ``advisor scale``), Horovod / MPI / Slurm
variables, ``TF_CONFIG`` (tf.distribute multi-worker), else a single worker.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping


def detect_rank_world(env: Mapping[str, str] | None = None) -> tuple[int, int]:
    env = os.environ if env is None else env
    pairs = (
        ("ADVISOR_RANK", "ADVISOR_WORLD_SIZE"),
        ("HOROVOD_RANK", "HOROVOD_SIZE"),
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI_RANK", "PMI_SIZE"),
        ("SLURM_PROCID", "SLURM_NTASKS"),
    )
    for rank_var, size_var in pairs:
        if rank_var in env:
            try:
                return int(env[rank_var]), int(env.get(size_var, "1"))
            except ValueError:
                continue
    tf_config = env.get("TF_CONFIG")
    if tf_config:
        try:
            cfg = json.loads(tf_config)
            task = cfg.get("task", {})
            cluster = cfg.get("cluster", {})
            workers = len(cluster.get("worker", [])) + len(cluster.get("chief", []))
            index = int(task.get("index", 0))
            if task.get("type") == "worker" and cluster.get("chief"):
                index += 1
            return index, max(1, workers)
        except (ValueError, TypeError, AttributeError):
            pass
    return 0, 1
