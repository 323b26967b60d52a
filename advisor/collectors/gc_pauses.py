"""Python's full (generation-2) garbage collections during a fit, from ``gc.callbacks``: when
each began and how long it took, so that step outliers can be matched with them
(docs/goodput.md, "Stalls and their causes").

Cheap by construction: the interpreter calls the hook at a collection's start and stop only;
younger generations return at once, and a bounded list keeps the first ``MAX_PAUSES`` full
collections (the count and total go on).
"""

from __future__ import annotations

import gc
import time
from typing import Any

MAX_PAUSES = 400


class GcPauses:
    """Times the full collections between :meth:`start` and :meth:`stop`."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self.pauses: list[list[float]] = []  # [wall clock at its start, seconds]
        self._began = 0.0
        self._on = False
        # (perf_counter at its end, seconds) of the recent ones, for the epoch-start attribution
        self.spans: list[tuple[float, float]] = []

    def start(self) -> None:
        if not self._on:
            gc.callbacks.append(self._hook)
            self._on = True

    def stop(self) -> None:
        if self._on:
            self._on = False
            try:
                gc.callbacks.remove(self._hook)
            except ValueError:
                pass

    def _hook(self, phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._began = time.perf_counter()
            return
        end = time.perf_counter()
        seconds = end - self._began
        self.spans.append((end, seconds))
        if len(self.spans) > 64:
            del self.spans[:32]
        self.count += 1
        self.seconds += seconds
        if len(self.pauses) < MAX_PAUSES:
            began = time.time() - seconds
            self.pauses.append([round(began, 4), round(seconds, 4)])
