"""The run manifest (``run.json``) as the callback and custom loops (``advisor.track``) both write it."""

from __future__ import annotations

import os
import platform
import socket
from typing import TYPE_CHECKING, Any

from advisor._version import __version__

if TYPE_CHECKING:
    from advisor.reference.prices import PriceResolution

PRICE_WAIT_S = 3.0  # pricing="aws": the longest a run's start waits for AWS before using the table


def memory_bytes() -> int | None:
    """The host's memory, if psutil can tell."""
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:
        return None


def host_facts() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": memory_bytes(),
    }


def run_manifest(
    *,
    framework: dict[str, Any],
    num_workers: int,
    steps_per_execution: int,
    instance: tuple[str | None, str | None],
    price: tuple[float | None, str | None],
    options: Any,
    config: dict[str, Any],
    **extra: Any,
) -> dict[str, Any]:
    """The manifest fields a run begins with: versions, world, instance and price with their
    sources, the host, the user's tags, the sweep it belongs to and the recorded options;
    ``extra`` adds what the writer cannot find itself (a custom loop's strategy and batch)."""
    return {
        "advisor_version": __version__,
        "framework": framework,
        "num_workers": num_workers,
        "steps_per_execution": steps_per_execution,
        "instance_type": instance[0],
        "instance_source": instance[1],
        "price_per_hour": price[0],
        "price_source": price[1],
        "host": host_facts(),
        "tags": options.tags,
        "sweep_id": os.environ.get("ADVISOR_SWEEP_ID"),
        "config": config,
        **extra,
    }


def instance_and_price(options: Any) -> tuple[tuple[str | None, str | None], PriceResolution]:
    """((instance type, how it was found), its price and the price's source) for a run's options:
    an explicit price wins, then AWS with ``pricing="aws"`` (waiting at most ``PRICE_WAIT_S``),
    then the embedded table."""
    from advisor.probes.instance import detect_instance_type
    from advisor.reference.prices import resolve

    instance = detect_instance_type(options.instance_type, metadata=options.instance_metadata)
    instance_type, source = instance if instance else (None, None)
    found = resolve(
        instance_type,
        options.price_per_hour,
        live=options.pricing == "aws",
        region=options.region,
        spot=options.spot,
        wait_s=PRICE_WAIT_S,
    )
    return (instance_type, source), found
