"""Known failure signatures in worker logs, and what to do about each (one line)."""

from __future__ import annotations

import re

HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"PerReplica.*unsupported type|unsupported type.*PerReplica", re.DOTALL),
        (
            "Keras 3 cannot fit under MultiWorkerMirroredStrategy (keras-team/keras#20585): train "
            "with tf_keras (`import tf_keras as keras`; `advisor scale` sets "
            "TF_USE_LEGACY_KERAS=1) or sweep the `jax` strategy instead"
        ),
    ),
    (
        re.compile(r"advisor: could not start the run"),
        "the advisor's callback could not start in this worker (its log says why); training ran "
        "unmeasured",
    ),
    (
        re.compile(r"must be called before any JAX calls"),
        "call advisor.launch.setup_devices() at the top of the script, before anything touches JAX",
    ),
    (
        re.compile(r"Address already in use|Failed to bind|bind\(\) failed", re.IGNORECASE),
        "a port chosen for the workers was taken meanwhile; run the sweep again",
    ),
    (
        re.compile(r"Invalid MPI type '?pmix|can not load PMIx library"),
        "this cluster's srun cannot load PMIx (`srun --mpi=pmix`), which Horovod on Slurm is "
        "started with: install the PMIx library on the nodes (Debian: libpmix2) with an MPI "
        "build of Horovod, or sweep multiworker or jax on this cluster",
    ),
    (
        re.compile(r"No module named '?horovod"),
        "Horovod is not importable in the workers' Python; see docs/scaling.md, 'Horovod'",
    ),
    (
        re.compile(r"No module named '?tf_keras"),
        "pip install tf_keras (the multiworker strategy trains with tf_keras)",
    ),
    (
        re.compile(
            r"UnavailableError|Socket closed|failed to connect to all addresses|heartbeat",
            re.IGNORECASE,
        ),
        "a peer worker stopped answering; look for the first worker that failed in the logs",
    ),
)


def hint_for(text: str) -> str | None:
    """The hint of the first signature found in ``text``, else None."""
    for pattern, hint in HINTS:
        if pattern.search(text):
            return hint
    return None
