"""Readable numbers: the one formatter behind every output (messages, tables, summaries).

Imports nothing of the package, so every layer may use it.
"""

from __future__ import annotations

import math
from typing import Any

MISSING = "—"


def readable(
    value: Any,
    digits: int | None = None,
    *,
    spec: str = "",
    compact: bool = False,
    missing: str = MISSING,
) -> str:
    """A value as text for people.

    - ``None`` / NaN → ``missing``; booleans → yes / no;
    - ``spec`` → Python's format spec (``",.0f"``, ``".1%"``), falling back to ``str``;
    - ``compact`` → 1.2M / 3.4G / 5.6T above a million, else as with ``digits`` (default 1);
    - ``digits`` → that many decimals with thousands separators (integers keep none);
    - otherwise adaptive: 1,234 · 12.3 · 0.123.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if spec:
        try:
            return format(value, spec)
        except (ValueError, TypeError):
            return str(value)
    if not isinstance(value, (int, float)):
        return str(value)
    if compact:
        digits = 1 if digits is None else digits
        for limit, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
            if abs(value) >= limit:
                return f"{value / limit:,.{digits}f}{suffix}"
    if isinstance(value, int):
        return f"{value:,}"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if digits is not None:
        return f"{value:,.{digits}f}"
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def count_text(value: Any) -> str:
    """A large count as list views write it (samples/$ in ``advisor runs`` and the TUI): compactly
    from a million (55.0M), whole below (983,040)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) >= 1e6:
        return readable(value, 1, compact=True)
    return readable(value, 0)


def percent(
    value: Any,
    digits: int = 1,
    *,
    fraction: bool = False,
    signed: bool = False,
    missing: str = MISSING,
) -> str:
    """A share as text, the one way every view writes it: ``12.5%`` (no space before the sign).

    ``value`` is in percent points, or a fraction of one with ``fraction=True``; ``signed`` writes
    ``+`` before a gain; ``None``/NaN → ``missing`` (unknown is never written as 0%)."""
    if (
        value is None
        or not isinstance(value, (int, float))
        or isinstance(value, bool)
        or math.isnan(value)
    ):
        return missing
    points = 100.0 * value if fraction else float(value)
    return f"{points:{'+' if signed else ''}.{digits}f}%"


# The one name of each distribution strategy in every view (the sweep's own names): manifests hold
# the class a run reported (tf_keras reports MultiWorkerMirroredStrategy's V1 name).
STRATEGY_LABELS = {
    "MultiWorkerMirroredStrategy": "multiworker",
    "CollectiveAllReduceStrategy": "multiworker",
    "MirroredStrategy": "mirrored",
    "DataParallel": "jax",
    "Horovod": "horovod",
    "OneDeviceStrategy": "single",
    "default": "single",
}


def strategy_label(strategy: str | None, tags: dict[str, str] | None = None) -> str:
    """A run's strategy as every view names it: the sweep configuration's name (``scale.strategy``)
    when ``advisor scale`` launched it, else the short name of the class its manifest holds."""
    if tags and tags.get("scale.strategy"):
        return tags["scale.strategy"]
    if not strategy:
        return "single"
    return STRATEGY_LABELS.get(strategy, strategy)


def workers_label(num_workers: int, tags: dict[str, str] | None = None) -> int:
    """A run's worker count as every view gives it: the sweep configuration's (``scale.workers``,
    the replicas of one mirrored process or the processes of a multi-worker job) when ``advisor
    scale`` launched it, else the processes its manifest counts."""
    label = (tags or {}).get("scale.workers", "")
    return int(label) if label.isdigit() else num_workers
