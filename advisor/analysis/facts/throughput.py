"""Throughput, stability, step-time outliers, epoch and validation time, cost per sample."""

from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact, written_values
from advisor.analysis.telemetry_math import percentile

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact(
        "throughput.samples_per_s",
        "samples/s",
        "training samples per second after warm-up (all workers)",
        "throughput",
    ),
    Fact(
        "throughput.steps_per_s",
        "steps/s",
        "optimizer steps per second after warm-up",
        "throughput",
    ),
    Fact(
        "throughput.samples_per_s.p10",
        "samples/s",
        "10th percentile over measurement windows",
        "throughput",
    ),
    Fact(
        "throughput.samples_per_s.p50", "samples/s", "median over measurement windows", "throughput"
    ),
    Fact(
        "throughput.samples_per_s.p90",
        "samples/s",
        "90th percentile over measurement windows",
        "throughput",
    ),
    Fact(
        "throughput.cv",
        "fraction",
        "spread of samples/s over the stability windows: (p90 − p10) ÷ (2.563 × median), σ ÷ μ for "
        "normal noise",
        "throughput",
    ),
    Fact(
        "throughput.stability_windows",
        "",
        "windows the stability (throughput.cv) was judged on",
        "throughput",
    ),
    Fact(
        "throughput.stability_window_s",
        "s",
        "mean length of those windows (shorter on a short run: they adapt to its length)",
        "throughput",
    ),
    Fact("throughput.windows", "", "measurement windows after warm-up", "throughput"),
    Fact(
        "throughput.measured_steps", "steps", "optimizer steps measured after warm-up", "throughput"
    ),
    Fact(
        "throughput.logging",
        "",
        "the advisor logs average samples/s periodically",
        "throughput",
        "bool",
    ),
    Fact(
        "throughput.log_lines",
        "",
        "throughput lines the advisor logged during training",
        "throughput",
    ),
    Fact(
        "throughput.log_gap_s",
        "s",
        "longest stretch of training without a throughput line (train begin and end included)",
        "throughput",
    ),
    Fact("steps.time_ms.mean", "ms", "mean time between batch ends (per step)", "throughput"),
    Fact("steps.time_ms.std", "ms", "standard deviation of the per-step time", "throughput"),
    Fact("steps.outliers", "", "steps slower than mean + 3σ", "throughput"),
    Fact("steps.outlier_max_ms", "ms", "slowest step", "throughput"),
    Fact(
        "steps.outlier_fraction",
        "fraction",
        "time the outlier steps took beyond the mean step ÷ measured training time",
        "throughput",
    ),
    Fact(
        "time.first_step_s",
        "s",
        "train begin to the end of the first step (tracing, compilation, first batch)",
        "epochs",
    ),
    Fact(
        "time.epoch_s.mean",
        "s",
        "mean epoch wall time (training + validation) after the first epoch, which "
        "carries start-up (every epoch when there is one); the scaling table's epoch time",
        "epochs",
    ),
    Fact(
        "time.first_epoch_s",
        "s",
        "the first epoch's wall time (start-up, tracing and compiling included)",
        "epochs",
    ),
    Fact(
        "time.epoch_starts",
        "",
        "epoch starts measured after warm-up (epoch begin to its first step)",
        "throughput",
    ),
    Fact(
        "time.epoch_start_s.mean",
        "s",
        "mean time from an epoch's begin to its first step (input iterator built and filled, "
        "epoch-begin callbacks)",
        "throughput",
    ),
    Fact(
        "time.epoch_start_s.max",
        "s",
        "longest time from an epoch's begin to its first step",
        "throughput",
    ),
    Fact(
        "time.epoch_start_fraction",
        "fraction",
        "time between epoch begins and their first steps ÷ measured training time",
        "throughput",
    ),
    Fact("time.val_fraction", "fraction", "share of epoch time spent in validation", "epochs"),
    Fact("cost.price_per_hour", "USD/h", "price of the instances per hour", "prices"),
    Fact("cost.price_source", "", "where the price came from", "prices", "str"),
    Fact(
        "cost.missing_price",
        "",
        "why no price is known (no instance type, or one the price table does not list)",
        "prices",
        "str",
    ),
    Fact("cost.samples_per_dollar", "samples/$", "samples/s × 3600 ÷ USD/h", "prices"),
    Fact("cost.usd_per_epoch", "USD", "price of one mean epoch", "prices"),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _rates(run, out)
    _logging(run, out)
    _epoch_times(run, out)
    _cost(run, out)
    return out


def _rates(run: Run, out: dict[str, Any]) -> None:
    """Samples and steps per second over the measured windows, and how steady they are."""
    from advisor.analysis.scaling_points import counts_global_batch
    from advisor.store.schema import WindowRecord

    windows = {
        rank: [
            w
            for w in run.of_type(WindowRecord, rank=rank)
            if not (w.warmup or w.profiled) and w.seconds > 0
        ]
        for rank in run.ranks
    }  # each worker's measured windows, filtered once: every step below is linear in them

    def measured(rank: int) -> list[WindowRecord]:
        return windows[rank]

    if not (run.ranks and measured(run.ranks[0])):
        return
    # Job throughput. Usually each worker records its own samples and they add up; under
    # tf.distribute multi-worker strategies every worker records the global batch, so the
    # chief's windows alone hold the job's samples.
    global_batch = counts_global_batch(run)
    ranks = run.ranks[:1] if global_batch else run.ranks
    scale = 1 if global_batch else max(1, len(run.ranks))
    seconds = max(sum(w.seconds for w in measured(rank)) for rank in run.ranks)
    chief = measured(run.ranks[0])
    steps_total = sum(w.steps for w in chief)
    if all(w.samples is not None for rank in ranks for w in measured(rank)) and seconds > 0:
        samples = sum(w.samples or 0 for rank in ranks for w in measured(rank))
        out["throughput.samples_per_s"] = samples / seconds
        rates = [(w.samples or 0) / w.seconds * scale for w in chief]
    else:
        rates = []
    if seconds > 0:
        out["throughput.steps_per_s"] = steps_total / seconds
    out["throughput.windows"] = len(chief)
    out["throughput.measured_steps"] = steps_total
    if rates:
        out["throughput.samples_per_s.p10"] = percentile(rates, 10)
        out["throughput.samples_per_s.p50"] = percentile(rates, 50)
        out["throughput.samples_per_s.p90"] = percentile(rates, 90)
    _stability(chief, out)
    _step_stats(chief, out)
    _epoch_starts(chief, out)


def _logging(run: Run, out: dict[str, Any]) -> None:
    """Whether the fit logged progress, and how often (the chief's context)."""
    from advisor.store.schema import ContextRecord

    # as written: a value of the wrong kind is left out and said by the registry, never
    # coerced (``[]`` read as False made M101 fail without a word)
    names = ("throughput.logging", "throughput.log_lines", "throughput.log_gap_s")
    chief = run.of_type(ContextRecord, rank=run.ranks[0] if run.ranks else None)
    out.update(
        written_values((r.values for r in chief), {f.name: f for f in FACTS if f.name in names})
    )
    if "throughput.logging" not in out and "log_every_s" in run.manifest.config:
        out["throughput.logging"] = run.manifest.config["log_every_s"] is not None


def _epoch_times(run: Run, out: dict[str, Any]) -> None:
    """The first step, the first and the mean epoch, and the share spent validating."""
    from advisor.store.schema import EpochRecord, FirstStepRecord

    first = run.of_type(FirstStepRecord)
    if first:
        out["time.first_step_s"] = max(r.seconds for r in first)
    epochs = run.of_type(EpochRecord, rank=run.ranks[0]) if run.ranks else []
    if epochs:
        total = sum(e.seconds for e in epochs)
        steady = epochs[1:] if len(epochs) >= 2 else epochs  # as the scaling table counts it
        out["time.epoch_s.mean"] = sum(e.seconds for e in steady) / len(steady)
        out["time.first_epoch_s"] = epochs[0].seconds
        if total > 0:
            out["time.val_fraction"] = sum(e.val_seconds for e in epochs) / total


def _cost(run: Run, out: dict[str, Any]) -> None:
    """Price per hour, samples per dollar and the price of an epoch; why not, without a price."""
    m = run.manifest
    if m.price_per_hour:
        # A multi-instance job pays for every instance: the manifest price is per instance.
        instances = int(m.config.get("instances", 1) or 1)
        price = m.price_per_hour * instances
        out["cost.price_per_hour"] = price
        out["cost.price_source"] = m.price_source or "unknown"
        sps = out.get("throughput.samples_per_s")
        if sps:
            out["cost.samples_per_dollar"] = sps * 3600.0 / price
        if "time.epoch_s.mean" in out:
            out["cost.usd_per_epoch"] = out["time.epoch_s.mean"] / 3600.0 * price
    elif m.instance_type:
        out["cost.missing_price"] = (
            f"the price table does not list {m.instance_type} and no price_per_hour was given"
        )
    else:
        out["cost.missing_price"] = (
            "no instance_type or price_per_hour was given and the machine is not a recognised "
            "cloud instance"
        )


def _stability(chief: list[Any], out: dict[str, Any]) -> None:
    """throughput.cv over full windows, or over windows joined from slices on a short run
    (``advisor.analysis.stability``). Records without slices (older writers) keep the plain
    coefficient of variation over three or more full windows."""
    from advisor.analysis.stability import stability

    # Full windows only: the window cut at an epoch end is short in both time and steps. A window
    # with a stall is long and holds the usual steps; one of slow steps is long and holds fewer:
    # both are full. (The longest window is found once: inside the loop it made this quadratic.)
    # A window that opens an epoch holds the time before its first step (the input iterator's
    # creation): that is M154's, not a change of throughput, and the slices never held it either.
    stepping = [(w, w.seconds - (w.epoch_start_seconds or 0.0)) for w in chief]
    longest = max(seconds for _, seconds in stepping)
    most = max(w.steps for w in chief)
    full = [
        (w, seconds)
        for w, seconds in stepping
        if w.steps > 0 and seconds > 0 and (seconds >= 0.5 * longest or w.steps >= 0.5 * most)
    ]
    slices = [(float(a), float(b)) for w in chief for a, b in (w.slices or []) if b > 0]
    if slices:
        judged = stability([(w.steps, seconds) for w, seconds in full], slices)
        if judged is not None:
            out["throughput.cv"] = judged.cv
            out["throughput.stability_windows"] = judged.windows
            out["throughput.stability_window_s"] = judged.window_s
        return
    sampled = [(w.samples, seconds) for w, seconds in full if w.samples is not None]
    rates = [samples / seconds for samples, seconds in sampled]
    if len(rates) >= 3 and statistics.fmean(rates) > 0:
        out["throughput.cv"] = statistics.pstdev(rates) / statistics.fmean(rates)
        out["throughput.stability_windows"] = len(rates)
        out["throughput.stability_window_s"] = statistics.fmean(seconds for _, seconds in sampled)


def _epoch_starts(windows: list[Any], out: dict[str, Any]) -> None:
    """How long measured epochs took to reach their first step (M154). The first epoch's start
    is in the warm-up window, with the first step's tracing: it is M151's. A full garbage
    collection that ran meanwhile is not the input's: it is left out."""
    starts = [
        max(0.0, w.epoch_start_seconds - (w.epoch_start_gc_seconds or 0.0))
        for w in windows
        if w.epoch_start_seconds is not None
    ]
    seconds = sum(w.seconds for w in windows)
    if seconds <= 0 or (not starts and len({w.epoch for w in windows}) > 1):
        return  # no epoch start recorded across epochs: an older writer
    if not starts:  # measured inside one epoch: no epoch began after warm-up
        out["time.epoch_starts"] = 0
        out["time.epoch_start_fraction"] = 0.0
        return
    out["time.epoch_starts"] = len(starts)
    out["time.epoch_start_s.mean"] = statistics.fmean(starts)
    out["time.epoch_start_s.max"] = max(starts)
    out["time.epoch_start_fraction"] = min(1.0, sum(starts) / seconds)


def _step_stats(windows: list[Any], out: dict[str, Any]) -> None:
    """Pool the per-window step statistics recorded by the throughput collector."""
    n = sum(getattr(w, "step_count", 0) or 0 for w in windows)
    if n < 2:
        return
    total = sum((w.step_time_mean or 0.0) * (w.step_count or 0) for w in windows)
    mean = total / n
    sq = sum(
        ((w.step_time_std or 0.0) ** 2 + (w.step_time_mean or 0.0) ** 2) * (w.step_count or 0)
        for w in windows
    )
    var = max(0.0, sq / n - mean**2)
    out["steps.time_ms.mean"] = mean * 1000.0
    out["steps.time_ms.std"] = math.sqrt(var) * 1000.0
    out["steps.outliers"] = sum(w.step_outliers or 0 for w in windows)
    out["steps.outlier_max_ms"] = max((w.step_time_max or 0.0) for w in windows) * 1000.0
    seconds = sum(w.seconds for w in windows)
    if seconds > 0 and all(w.step_outlier_seconds is not None for w in windows):
        out["steps.outlier_fraction"] = min(
            1.0, sum(w.step_outlier_seconds for w in windows) / seconds
        )
