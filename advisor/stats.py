"""Order statistics, in one place: percentiles and medians (a leaf every layer may use).

``percentile`` interpolates linearly between order statistics, as numpy's default does (numpy is
imported on first use); ``median`` leaves out missing and non-finite values and is None when
nothing is left, so that unknown is never read as zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any


def percentile(values: Sequence[float] | Any, q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values`` (a sequence or an array), as a float."""
    if len(values) == 0:
        raise ValueError("percentile of nothing")
    import numpy as np

    return float(np.percentile(values, q))


def percentiles(values: Sequence[float] | Any, qs: Sequence[float]) -> list[float]:
    """Several percentiles of ``values`` at once (one sort)."""
    if len(values) == 0:
        raise ValueError("percentile of nothing")
    import numpy as np

    return [float(v) for v in np.percentile(values, list(qs))]


def median(values: Iterable[float | None]) -> float | None:
    """The median of the finite values, None when there is none."""
    data = sorted(float(v) for v in values if v is not None and math.isfinite(v))
    if not data:
        return None
    mid = len(data) // 2
    return data[mid] if len(data) % 2 else 0.5 * (data[mid - 1] + data[mid])
