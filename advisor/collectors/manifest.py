"""The run manifest (``run.json``) as the callback and custom loops (``advisor.track``) both
write it, and the options that price the run."""

from __future__ import annotations

import os
import platform
import socket
from typing import TYPE_CHECKING, Any, Literal

from advisor._version import __version__
from advisor.collectors.option_spec import Option, from_env, positive
from advisor.errors import UsageError

if TYPE_CHECKING:
    from advisor.reference.prices import PriceResolution

# pricing="aws": the longest a run's start waits for AWS before using the table
PRICE_WAIT_S = 3.0
PRICING_SOURCES = ("table", "aws")
Pricing = Literal["table", "aws"]
_TRUE = ("1", "true", "yes", "on")


def pricing_source(name: str, value: Any) -> str:
    """``"table"`` or ``"aws"``; None: ``$ADVISOR_PRICING``, else ``"table"``."""
    if value is None:  # an explicit argument beats the environment
        value = (os.environ.get("ADVISOR_PRICING") or "table").strip().lower()
    if value not in PRICING_SOURCES:
        raise UsageError(f"{name} must be 'table' or 'aws' (got {value!r})")
    return str(value)


def store_path(name: str, value: Any) -> str | None:
    return None if value is None else os.fspath(value)


def string_tags(name: str, value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in (value or {}).items()}


RUN_OPTIONS = (
    Option(
        "runs_dir",
        "str | os.PathLike[str] | None",
        None,
        "the store (default ``$ADVISOR_RUNS_DIR`` or ``./advisor-runs``).",
        store_path,
        stored="str | None",
        env="ADVISOR_RUNS_DIR",
    ),
    Option("name", "str | None", None, "a human name that becomes part of the run id."),
    Option(
        "tags",
        "dict[str, str] | None",
        None,
        "free-form labels stored in the manifest.",
        string_tags,
        record=dict,
    ),
)


# Pricing: what the run's samples per dollar are computed from.
PRICING_OPTIONS = (
    Option(
        "instance_type",
        "str | None",
        None,
        "cloud instance type, e.g. ``g5.xlarge`` (also ``$ADVISOR_INSTANCE_TYPE``; found from "
        "the machine's DMI data on AWS when not given).",
        from_env("ADVISOR_INSTANCE_TYPE"),
        env="ADVISOR_INSTANCE_TYPE",
    ),
    Option(
        "price_per_hour",
        "float | None",
        None,
        "USD per hour per instance; overrides the embedded price table.",
        positive(optional=True),
    ),
    Option(
        "pricing",
        "Pricing | None",
        None,
        '``"table"`` or ``"aws"`` (the AWS price, cached; at most 3 s, else the table); '
        'None: ``$ADVISOR_PRICING``, else ``"table"``.',
        pricing_source,
        stored="str | None",
        env="ADVISOR_PRICING",
    ),
    Option(
        "spot",
        "bool",
        False,
        'price the instance at the current spot price (with ``pricing="aws"``).',
    ),
    Option(
        "region",
        "str | None",
        None,
        "AWS region of the instance for prices (default: boto3's region).",
    ),
    Option(
        "instance_metadata",
        "bool | None",
        None,
        "ask the cloud metadata service for the instance type (≤ 0.5 s).",
        from_env("ADVISOR_INSTANCE_METADATA", parse=lambda v: v.strip().lower() in _TRUE),
        env="ADVISOR_INSTANCE_METADATA",
    ),
)


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
