"""Stalls attributed to their cause: the wait of an epoch's first step for its input (epoch-start
time, with what fills at each start), and the step outliers that were compiles.

An epoch's first step that takes several usual steps is waiting for its new iterator's first batch
(a shuffle buffer filling, a prefetch warming): the throughput collector moves that wait
into the window's epoch start (``epoch_first_wait_seconds``), so M154 sees it and the step
statistics do not. What fills is read from the input pipeline's stages. Step outliers that
coincide with mid-fit compile events (a retrace makes its step long) are counted apart, so that
M150 speaks of the stalls nothing else explains and C451–C454 of the compiles. So are the
outliers that overlap a save, a full garbage collection, validation or an epoch's end (matched
by time: the windows record when each outlier began); the cause that recurs with most of
the outliers' time is the periodic stall M172 names, with its fix.
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
        "what the step outliers coincide with (saves, garbage collections, compiles, …)",
        "stalls",
        "str",
    ),
    Fact("steps.outliers_timed", "", "step outliers recorded with their time", "goodput"),
    Fact(
        "stalls.periodic_cause",
        "",
        "what the most costly recurring stalls coincide with (a save, a garbage collection, …)",
        "goodput",
        "str",
    ),
    Fact("stalls.periodic_kind", "", "checkpoint, gc, validation or epoch_end", "goodput", "str"),
    Fact("stalls.periodic_outliers", "", "step outliers that coincide with it", "goodput"),
    Fact(
        "stalls.periodic_fraction",
        "fraction",
        "those outliers' time beyond the mean step ÷ measured training time",
        "goodput",
    ),
    Fact("stalls.periodic_fix", "", "the fix for that cause", "goodput", "str"),
    Fact("stalls.gc_pauses", "", "full (generation-2) garbage collections in the fits", "goodput"),
    Fact("stalls.gc_pause_s.mean", "s", "mean length of a full garbage collection", "goodput"),
)

# What a periodic stall's cause is called in a message, and its fix.
FIXES = {
    "checkpoint": (
        "Save less often (`ModelCheckpoint(save_freq=...)` in more batches, or at epoch ends), "
        "save the weights only, or save asynchronously (Orbax's async checkpointing)"
    ),
    "gc": (
        "Call `gc.freeze()` once the model and the data are built (the full collections then "
        "skip those objects), allocate fewer long-lived Python objects per batch, or raise the "
        "collector's thresholds (`gc.set_threshold`)"
    ),
    "validation": (
        "Validate less often (`validation_freq`), on fewer batches (`validation_steps`), or "
        "outside the training loop"
    ),
    "epoch_end": (
        "Make the work between epochs cheaper: a custom loop's new iterator at every epoch "
        "(a DataLoader's workers starting: `persistent_workers=True`; a shuffle buffer filling), "
        "its epoch-end logging and saving"
    ),
}


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
    out.update(_gc_facts(run))
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
        spans = [s for w in windows for s in (w.step_outlier_spans or []) if len(s) >= 3]
        named = _match(spans, inside, _events(run))
        periodic = sum(excess for _n, excess, _d in named.values()) / seconds
        out["steps.unexplained_outlier_fraction"] = max(0.0, float(fraction) - compiled - periodic)
        parts = _describe(named, run)
        if spans:
            out["steps.outliers_timed"] = len(spans)
        if named:
            kind = max(named, key=lambda k: named[k][1])
            out["stalls.periodic_kind"] = kind
            out["stalls.periodic_cause"] = parts[kind]
            out["stalls.periodic_outliers"] = named[kind][0]
            out["stalls.periodic_fraction"] = named[kind][1] / seconds
            out["stalls.periodic_fix"] = FIXES[kind]
        elif "stalls.gc_pauses" in out:  # the writer timed saves and collections: none matched
            out["stalls.periodic_outliers"] = 0
            out["stalls.periodic_fraction"] = 0.0
        said = [
            f"{named[k][0]} of {len(spans)} outliers {parts[k]}"
            for k in sorted(named, key=lambda k: -named[k][1])
        ]
        if inside and compiled > 0:
            counts: dict[str, int] = {}
            for e in inside:
                counts[e.function] = counts.get(e.function, 0) + 1
            top = max(counts, key=lambda f: counts[f])
            said.append(f"compiles of {top} ×{counts[top]}")
        if said:
            out["steps.outliers_explained_by"] = "; ".join(said)
    return out


def _gc_facts(run: Run) -> dict[str, Any]:
    pauses = _gc_pauses(run)
    if pauses is None:
        return {}
    out: dict[str, Any] = {"stalls.gc_pauses": len(pauses)}
    if pauses:
        out["stalls.gc_pause_s.mean"] = statistics.fmean(p[1] for p in pauses)
    return out


def _gc_pauses(run: Run) -> list[tuple[float, float]] | None:
    """The full garbage collections of the run's fits (the last budget record of each fit holds
    all of its own), or None when no budget record kept them (older writers)."""
    from advisor.store.schema import BudgetRecord

    records = [r for r in run.chief_of_type(BudgetRecord) if r.gc is not None]
    if not records:
        return None
    return sorted({(float(p[0]), float(p[1])) for r in records for p in r.gc.pauses if len(p) == 2})


def _events(run: Run) -> dict[str, list[tuple[float, float]]]:
    """What may stall a step, by cause: [begin, end] on the wall clock of each save, full garbage
    collection, validation and epoch end."""
    from advisor.store.schema import BudgetRecord, EpochRecord

    budgets = run.chief_of_type(BudgetRecord)
    saves = {(float(t[0]), float(t[1])) for r in budgets for t in r.checkpoint.times if len(t) == 2}
    epochs = run.chief_of_type(EpochRecord)
    return {
        "checkpoint": [(b, b + s) for b, s in sorted(saves)],
        "gc": [(b, b + s) for b, s in _gc_pauses(run) or []],
        "validation": [(e.t - e.val_seconds, e.t) for e in epochs if e.val_seconds > 0],
        "epoch_end": [(e.t, e.t) for e in epochs],
    }


def _match(
    spans: list[list[float]], compiles: list[Any], events: dict[str, list[tuple[float, float]]]
) -> dict[str, tuple[int, float, list[float]]]:
    """The outliers each cause overlaps most (a compile's are left to the compile rules): cause
    → (outliers, their seconds beyond the mean, the lengths of the events they overlap)."""
    compiled = [(e.t - e.seconds, e.t) for e in compiles]
    out: dict[str, tuple[int, float, list[float]]] = {}
    for begin, length, excess in (s[:3] for s in spans):
        end = begin + length
        if any(b < end and e > begin for b, e in compiled):
            continue
        best, overlap, took = None, -1.0, 0.0
        for kind, found in events.items():
            for b, e in found:
                if b <= end and e >= begin and min(e, end) - max(b, begin) > overlap:
                    best, overlap, took = kind, min(e, end) - max(b, begin), e - b
        if best is not None:
            n, seconds, lengths = out.get(best, (0, 0.0, []))
            out[best] = (n + 1, seconds + max(0.0, excess), [*lengths, took])
    return out


def _describe(named: dict[str, tuple[int, float, list[float]]], run: Run) -> dict[str, str]:
    """How a message names each cause: "follow a save by ModelCheckpoint.on_train_batch_end"."""
    from advisor.store.schema import BudgetRecord

    out = {}
    for kind, (_n, _s, lengths) in named.items():
        took = statistics.fmean(lengths) if lengths else 0.0
        if kind == "checkpoint":
            by: dict[str, int] = {}
            for record in run.chief_of_type(BudgetRecord)[-1:]:
                by = record.checkpoint.by
            who = f" by {max(by, key=lambda k: by[k])}" if by else ""
            out[kind] = f"coincide with a save{who} of {took:.2f} s"
        elif kind == "gc":
            out[kind] = f"coincide with a full (gen-2) garbage collection of {took:.2f} s"
        elif kind == "validation":
            out[kind] = f"coincide with validation of {took:.2f} s"
        else:
            out[kind] = "follow an epoch's end"
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
