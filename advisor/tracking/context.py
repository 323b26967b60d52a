"""What a custom training loop is run with: its framework, device and the context record.

:mod:`advisor.tracking.run` records loops without ``model.fit``; with no Keras model to
introspect, the context comes from the modules already imported and the arguments of ``track``.
Imports no framework itself.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from advisor.probes.framework import device_kind

BACKENDS = ("jax", "torch", "tensorflow")


def check_loop_args(batch_size: Any, backend: Any) -> None:
    """A usage error for a batch size that is not a positive integer or an unknown backend."""
    from advisor.errors import UsageError

    if batch_size is not None and (
        isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
    ):
        raise UsageError(f"batch_size must be a positive integer, got {batch_size!r}")
    if backend is not None and backend not in BACKENDS:
        raise UsageError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")


def loop_context(
    backend: str | None, world: int, batch_size: int | None, logging: bool
) -> dict[str, Any]:
    """The ``context.*`` values of a custom loop (absent where unknown)."""
    device, count = device_kind(backend)
    values: dict[str, Any] = {
        "context.backend": backend,
        "context.framework": "custom",
        "context.legacy_keras": False,
        "context.device": device,
        "context.device_count": count,
        "context.strategy": "default" if world == 1 else "custom",
        "context.replicas": world,
        "context.num_workers": world,
        "context.per_replica_batch_size": batch_size,
        "context.global_batch_size": batch_size * world if batch_size else None,
        "context.steps_per_execution": 1,
        "context.input_kind": "custom",
        "context.callbacks": [],
        "context.host_cpu_count": os.cpu_count(),
        "context.profiling_configured": False,
        "throughput.logging": logging,
    }
    return {k: v for k, v in values.items() if v is not None}


def detect_backend(modules: Any = None) -> str | None:
    """The loop's framework from what is imported: torch or jax when only one of them is (tf.data
    beside either is common), else tensorflow; None when torch and jax both are (pass
    ``backend=``)."""
    modules = sys.modules if modules is None else modules
    found = [name for name in ("torch", "jax") if name in modules]
    if len(found) == 1:
        return found[0]
    return "tensorflow" if not found and "tensorflow" in modules else None
