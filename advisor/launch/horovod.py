"""Horovod: the ``horovodrun`` command line, and how a worker learns its rank without importing it.

Horovod is optional and hard to build (see docs/scaling.md): everything here works without it.
``horovodrun`` sets ``HOROVOD_RANK`` / ``HOROVOD_SIZE`` (Gloo) or the MPI variables in each worker;
``advisor.probes.distributed.detect_rank_world`` reads either.
"""

from __future__ import annotations

from collections.abc import Sequence


def horovodrun_argv(
    workers: int,
    command: Sequence[str],
    hosts: str | None = None,
    gloo: bool = True,
    timeline: str | None = None,
) -> list[str]:
    """``horovodrun -np N -H localhost:N --gloo CMD...`` (``hosts``: e.g. ``"a:4,b:4"``)."""
    argv = ["horovodrun", "-np", str(workers), "-H", hosts or f"localhost:{workers}"]
    if gloo:
        argv.append("--gloo")
    if timeline:
        argv += ["--timeline-filename", timeline]
    return argv + list(command)
