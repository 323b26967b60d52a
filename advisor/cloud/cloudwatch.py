"""CloudWatch custom metrics, batched and sent from a background thread.

:class:`MetricPublisher` takes values from anywhere (it only appends to a queue under a lock) and
a daemon thread sends them with ``PutMetricData`` every ``interval_s`` seconds, up to 150 values
a request. A failure is logged once and retried with backoff; values beyond ``max_queued`` are
dropped (oldest first) rather than growing without bound while CloudWatch is unreachable.
IAM: ``cloudwatch:PutMetricData``.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections import deque
from datetime import datetime, timezone
from typing import Any

from advisor.cloud.aws import client, cloud_error

log = logging.getLogger("advisor")

BATCH = 150
MAX_BACKOFF_S = 300.0
FINAL_WAIT_S = 10.0


class MetricPublisher:
    """Publishes metric values to one namespace with fixed dimensions."""

    def __init__(
        self,
        namespace: str,
        dimensions: dict[str, str],
        *,
        interval_s: float = 60.0,
        cloudwatch: Any = None,
        max_queued: int = 10_000,
    ) -> None:
        self.namespace = namespace
        self.dimensions = [{"Name": k, "Value": str(v)} for k, v in dimensions.items() if v]
        self.interval_s = interval_s
        self._cloudwatch = cloudwatch
        self._queue: deque[dict[str, Any]] = deque(maxlen=max_queued)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = False
        self.sent = 0
        self.failures = 0
        self.last_error: str | None = None
        self.finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name="advisor-cloudwatch", daemon=True)
        self._thread.start()
        _ACTIVE.add(self)

    def put(self, name: str, value: float, unit: str = "None", t: float | None = None) -> None:
        """Queue one value (never blocks, never raises)."""
        stamp = datetime.fromtimestamp(time.time() if t is None else t, tz=timezone.utc)
        with self._lock:
            self._queue.append(
                {
                    "MetricName": name,
                    "Dimensions": self.dimensions,
                    "Timestamp": stamp,
                    "Value": float(value),
                    "Unit": unit,
                }
            )

    def close(self) -> None:
        """Send what is queued, then stop (in the background: returns at once)."""
        self._closing = True
        self._wake.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)

    def _take(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]

    def _requeue(self, batch: list[dict[str, Any]]) -> None:
        with self._lock:
            self._queue.extendleft(reversed(batch))

    def _run(self) -> None:
        backoff = 0.0
        try:
            # The client first, while training runs: making one reads botocore's endpoint and
            # service files (0.05-0.13 s quiet), and in a loaded test process it once took over
            # 30 s; left to the first send, a short job's final values waited for it at its end.
            try:
                self._connect()
            except Exception:  # noqa: BLE001 — the first send tries again and says why
                pass
            while True:
                self._wake.wait(backoff or self.interval_s)
                self._wake.clear()
                closing = self._closing
                ok = True
                while ok:
                    batch = self._take()
                    if not batch:
                        break
                    ok = self._send(batch)
                backoff = 0.0 if ok else min(MAX_BACKOFF_S, max(2.0, backoff * 2))
                if closing and (ok or self.failures >= 3):
                    return
        finally:
            self.finished.set()

    def _connect(self) -> Any:
        if self._cloudwatch is None:
            self._cloudwatch = client("cloudwatch", budget="training")
        return self._cloudwatch

    def _send(self, batch: list[dict[str, Any]]) -> bool:
        try:
            self._connect().put_metric_data(Namespace=self.namespace, MetricData=batch)
        except Exception as exc:  # logged once; the values wait for the next try
            self._requeue(batch)
            self.failures += 1
            message = str(
                cloud_error(exc, f"CloudWatch {self.namespace}", "cloudwatch:PutMetricData")
            )
            if message != self.last_error:
                self.last_error = message
                log.warning("advisor: %s; metrics are kept and sent later", message)
            return False
        if self.failures:
            log.info("advisor: CloudWatch publishing works again")
        self.failures = 0
        self.sent += len(batch)
        return True


_ACTIVE: weakref.WeakSet[MetricPublisher] = weakref.WeakSet()


def _at_exit() -> None:
    deadline = time.monotonic() + FINAL_WAIT_S
    for publisher in list(_ACTIVE):
        if publisher._closing:
            publisher.wait(max(0.0, deadline - time.monotonic()))


atexit.register(_at_exit)
