"""The memory what-if's collector: after the last epoch, measures the model's peak memory at the
fit's batch, twice and four times it (``advisor.experiments.memory``), and records the line
through them and the largest batch that fits, with its check. Off by default
(``batch_memory=True``): it trains a few steps at each size, and each new size compiles the step.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.option_spec import Option

log = logging.getLogger("advisor")

OPTIONS = (
    Option(
        "batch_memory",
        "bool",
        False,
        "after the last epoch, measure peak memory at the batch, 2× and 4× it and predict the "
        "largest batch that fits (docs/memory.md).",
    ),
)


class BatchMemoryCollector(Collector):
    name = "batch_memory"

    def on_train_end(self) -> None:
        from advisor.experiments.memory import measure_fit_batch_memory
        from advisor.store.schema import ContextRecord

        s = self.session
        if s.rank != 0 or s.num_workers > 1:  # one process's memory: a single worker's fit
            return
        t0 = time.perf_counter()
        try:
            result = measure_fit_batch_memory(s.model, s.data, s.backend)
            values: dict[str, Any] = asdict(result)
        except Exception as exc:  # the input cannot be replayed, the model cannot train a batch
            values = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        values["seconds"] = round(time.perf_counter() - t0, 3)
        values["batch_size"] = s.data.batch_size
        s.writer.write(ContextRecord(t=time.time(), values={"memory.batch": values}))
        if values.get("largest_batch"):
            log.info(
                "advisor: memory what-if: up to %s samples per batch fit in %s memory "
                "(%d%% margin; the fit's batch is %s)",
                f"{values['largest_batch']:,}",
                values["where"],
                round(100 * values["margin"]),
                s.data.batch_size,
            )
