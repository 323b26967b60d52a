"""The precision what-if as a collector: at train end, after the speed of light, the model at
float32, mixed_bfloat16 and mixed_float16 on the run's own backend and device, each in a fresh
process (``advisor.experiments.precision``), recorded as ``precision.*`` values.

When: ``whatif=["precision", ...]`` asks for it; with ``whatif="needed"`` or ``"auto"`` it runs by
itself when the run computes in another dtype than float32, or when training reached under
``LOW_FRACTION`` of its speed of light and the what-if's share of the fit (10%) holds
``MIN_ALLOWANCE`` seconds (a fit of five minutes): three fresh processes cost tens of seconds,
which a short fit of a small model — far below its speed of light by nature — should not pay.
Chief only, single worker only. Its time counts as the
advisor's measuring (``notes.whatif_seconds``), not the user's training.
"""

from __future__ import annotations

import logging
import time

from advisor.collectors.collector import Collector
from advisor.collectors.session import Session
from advisor.experiments.settings import WhatIfPlan
from advisor.store.schema import ContextRecord

log = logging.getLogger("advisor")
LOW_FRACTION = 0.02  # training under this share of its speed of light: the what-if runs
MIN_ALLOWANCE = 30.0  # ... when the fit's what-if share holds this many seconds


def why_needed(session: Session, plan: WhatIfPlan) -> str | None:
    """Why the precision what-if runs after this fit, or None."""
    if plan.precision:
        return "asked for"
    if plan.mode == "listed" or session.num_workers > 1:
        return None
    policy = session.notes.context.get("context.dtype_policy")
    if policy and policy != "float32":
        return f"the run computes under {policy}"
    from advisor.experiments.settings import WHATIF_FIT_SHARE

    fraction = session.notes.speed_of_light_fraction
    fit_seconds = time.perf_counter() - session.train_begin_t - session.notes.measuring_seconds
    if (
        fraction is not None
        and fraction < LOW_FRACTION
        and WHATIF_FIT_SHARE * fit_seconds >= MIN_ALLOWANCE
    ):
        return f"training reached {fraction:.1%} of this device's speed of light"
    return None


class PrecisionCollector(Collector):
    """Runs the precision what-if at train end when asked or needed, and records it."""

    name = "precision"

    def __init__(self, plan: WhatIfPlan, max_seconds: float | None = None) -> None:
        super().__init__()
        self.plan = plan
        self.max_seconds = max_seconds

    def on_train_end(self) -> None:
        from advisor.errors import AdvisorError
        from advisor.experiments.backends import data_from_session
        from advisor.experiments.precision import MAX_SECONDS, measure_precision

        s = self.session
        if s.rank != 0 or s.backend not in ("tensorflow", "jax", "torch"):
            return
        why = why_needed(s, self.plan)
        if why is None:
            return
        allowance = self.max_seconds if self.max_seconds is not None else MAX_SECONDS
        log.info(
            "advisor: precision what-if (%s): this model at each dtype policy, each in a fresh "
            "process, for up to %.0f s",
            why,
            allowance,
        )
        now = time.perf_counter()
        try:
            data, batch_size = data_from_session(s.data)
            result = measure_precision(
                s.model,
                data,
                batch_size=batch_size or s.data.batch_size,
                device=s.notes.context.get("context.device"),
                max_seconds=allowance,
            )
        except (AdvisorError, OSError) as exc:
            s.event("precision", f"precision what-if skipped: {exc}", level="info")
            return
        finally:
            s.notes.whatif_seconds += time.perf_counter() - now
        values = result.values()
        values["precision.why"] = why
        s.writer.write(ContextRecord(t=time.time(), values=values))
        log.info("advisor: precision what-if (%.1f s): %s", result.seconds, result.summary())
