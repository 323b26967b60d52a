"""Keep TensorFlow's notices about the advisor's own work out of the user's log.

TensorFlow warns "N out of the last N calls to <function …> triggered tf.function retracing" when
functions built from the same Python code are traced again and again. The advisor traces its own
small functions (the FLOPs probe's gradient step, the measurement feeds' pulls) and, in its
experiments, the user's train step on other input: each is deliberate, and the notice would read
as a problem of the user's code. :func:`quiet_tracing` drops that one notice while the advisor's
hooks run; every other TensorFlow message, and every message outside the hooks, passes.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

RETRACING_NOTICE = "triggered tf.function retracing"


class _DropRetracing(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            return RETRACING_NOTICE not in record.getMessage()
        except Exception:  # noqa: BLE001 — a record that cannot be formatted is not ours
            return True


_FILTER = _DropRetracing()


@contextmanager
def quiet_tracing() -> Iterator[None]:
    """Drop TensorFlow's retracing notice inside the block (nothing to do before TF is imported:
    whatever imports it inside the block is covered from the next block on)."""
    if "tensorflow" not in sys.modules:
        yield
        return
    logger = logging.getLogger("tensorflow")
    logger.addFilter(_FILTER)
    try:
        yield
    finally:
        logger.removeFilter(_FILTER)
