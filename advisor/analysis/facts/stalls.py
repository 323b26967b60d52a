"""Stalls attributed to their cause: the wait of an epoch's first step for its input (epoch-start
time, with what fills at each start), and the step outliers that were compiles.

An epoch's first step that takes several usual steps is waiting for its new iterator's first batch
(a shuffle buffer filling, a prefetch warming): the throughput collector moves that wait
into the window's epoch start (``epoch_first_wait_seconds``), so M154 sees it and the step
statistics do not. What fills is read from the input pipeline's stages. Step outliers that
coincide with mid-fit compile events (a retrace makes its step long) are counted apart, so that
M150 speaks of the stalls nothing else explains and C451–C454 of the compiles.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact(
        "time.epoch_first_waits",
        "",
        "measured epochs whose first step waited for its input",
        "stalls",
    ),
    Fact(
        "time.epoch_first_wait_s.mean",
        "s",
        "mean wait of those first steps beyond a usual step (counted as epoch-start time)",
        "stalls",
    ),
    Fact(
        "time.epoch_start_fills",
        "",
        "what a new input iterator fills before its first batch (a shuffle buffer, a prefetch)",
        "stalls",
        "str",
    ),
    Fact(
        "steps.compile_outlier_fraction",
        "fraction",
        "the step outliers' time that mid-fit compiles explain ÷ measured training time",
        "stalls",
    ),
    Fact(
        "steps.unexplained_outlier_fraction",
        "fraction",
        "step outliers' time beyond the mean, less what compiles explain ÷ measured training time",
        "stalls",
    ),
    Fact(
        "steps.outliers_explained_by",
        "",
        "what the step outliers coincide with (compiles of a function)",
        "stalls",
        "str",
    ),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import CompileRecord, WindowRecord

    out: dict[str, Any] = {}
    windows = [w for w in run.chief_of_type(WindowRecord) if not w.warmup and not w.profiled]
    waits = [w.epoch_first_wait_seconds for w in windows if w.epoch_first_wait_seconds]
    if any(w.epoch_start_seconds is not None for w in windows):
        out["time.epoch_first_waits"] = len(waits)
        if waits:
            out["time.epoch_first_wait_s.mean"] = statistics.fmean(waits)
    fills = _fills(facts.get("pipeline.stages"))
    if fills:
        out["time.epoch_start_fills"] = fills
    seconds = sum(w.seconds for w in windows)
    fraction = facts.get("steps.outlier_fraction")
    if seconds > 0 and isinstance(fraction, (int, float)):
        events = [e for r in run.chief_of_type(CompileRecord) for e in r.events]
        begin = min((w.t - w.seconds for w in windows), default=None)
        inside = [
            e
            for e in events
            if e.phase == "train_steps"
            and e.kind != "graph_break"
            and begin is not None
            and e.t >= begin
        ]
        compiled = min(float(fraction), sum(e.seconds for e in inside) / seconds)
        out["steps.compile_outlier_fraction"] = compiled
        out["steps.unexplained_outlier_fraction"] = max(0.0, float(fraction) - compiled)
        if inside and compiled > 0:
            counts: dict[str, int] = {}
            for e in inside:
                counts[e.function] = counts.get(e.function, 0) + 1
            top = max(counts, key=lambda f: counts[f])
            out["steps.outliers_explained_by"] = f"compiles of {top} ×{counts[top]}"
    return out


def _fills(stages: Any) -> str | None:
    """What a new iterator fills before its first batch, from the tf.data stages ("shuffle(16384)",
    "prefetch(AUTOTUNE)", …, as the pipeline facts list them)."""
    if not isinstance(stages, list):
        return None
    parts = []
    for stage in (str(s) for s in stages):
        if stage.startswith("shuffle"):
            size = stage[len("shuffle(") : -1] if stage.endswith(")") else ""
            parts.append(
                f"shuffle buffer of {int(size):,} elements" if size.isdigit() else "shuffle buffer"
            )
        elif stage.startswith("prefetch"):
            parts.append("prefetch buffer")
    if not parts:
        return "a new input iterator"
    return "a new iterator's " + " and ".join(dict.fromkeys(parts))
