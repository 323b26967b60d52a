"""The repeated observations of one run that a comparison sets side by side.

- **samples/s**: one value per steady window of the chief (warm-up and profiled windows left
  out; the baseline and the what-if train outside the windows), from the time the window spent
  stepping (an epoch's start is the ``epoch_boundary`` part's). A run with fewer than
  ``MIN_WINDOWS`` full windows is read from its half-second slices instead.
- **parts**: one value per epoch, in milliseconds per training step, for each category of the
  time budget (docs/goodput.md) and each callback hook, from the differences between
  consecutive ``budget`` records (each holds the fit so far). The first epoch, which holds the
  warm-up, is left out when there are four or more. Categories are read as the records name
  them, so a category added later (``compile``) is compared like the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from advisor.analysis.comparison_model import part_label

if TYPE_CHECKING:
    from advisor.store.reader import Run
    from advisor.store.schema import BudgetRecord

MIN_WINDOWS = 5
# Budget categories that are not parts of the user's fit (the advisor's own), or are broken out
# (callbacks: per class and hook), or hold one moment rather than a share of every epoch.
NOT_PARTS = frozenset(
    {"advisor_hooks", "advisor_measure", "profile", "unaccounted", "callbacks", "startup"}
)
WHOLE_RUN = ("startup",)  # compared once: one value per run


@dataclass
class RunSamples:
    run_id: str
    rates: list[float] = field(default_factory=list)  # samples/s per steady window
    price_per_hour: float | None = None
    parts: dict[str, list[float]] = field(default_factory=dict)  # key → ms/step per epoch
    labels: dict[str, str] = field(default_factory=dict)  # key → label
    wall_ms_per_step: list[float] = field(default_factory=list)  # per epoch
    whole: dict[str, float] = field(default_factory=dict)  # key → seconds, once per run
    setup: dict[str, str] = field(default_factory=dict)  # what ran: backend, batch size, …


def setup_of(run: Run) -> dict[str, str]:
    """What the run ran, as its manifest says: what a comparison sets side by side to say when
    two runs did not run the same thing (a field unknown on a run is left out)."""
    m = run.manifest
    values = {
        "backend": m.framework.backend,
        "global batch size": m.global_batch_size,
        "strategy": m.strategy,
        "workers": m.num_workers,
        "dtype policy": m.dtype_policy,
        "jit_compile": m.jit_compile,
        "steps per execution": m.steps_per_execution,
        "instance type": m.instance_type,
        "CPU count": m.host.cpu_count,
    }
    return {key: str(value) for key, value in values.items() if value is not None}


def samples_of(run: Run) -> RunSamples:
    """The comparison's observations of ``run`` (its chief worker)."""
    out = RunSamples(run.run_id, price_per_hour=run.manifest.price_per_hour, setup=setup_of(run))
    out.rates = window_rates(run)
    _parts(run, out)
    return out


def window_rates(run: Run) -> list[float]:
    """samples/s of each steady full window, or of the slices of a short run."""
    from advisor.store.schema import WindowRecord

    if not run.ranks:
        return []
    chief = [
        w
        for w in run.of_type(WindowRecord, rank=run.ranks[0])
        if not (w.warmup or w.profiled) and w.seconds > 0 and w.steps > 0 and w.samples
    ]
    if not chief:
        return []
    stepping = [(w, w.seconds - (w.epoch_start_seconds or 0.0)) for w in chief]
    longest = max(s for _, s in stepping)
    most = max(w.steps for w in chief)
    full = [(w, s) for w, s in stepping if s > 0 and (s >= 0.5 * longest or w.steps >= 0.5 * most)]
    if len(full) >= MIN_WINDOWS:
        return [(w.samples or 0) / s for w, s in full]
    per_step = sum(w.samples or 0 for w in chief) / sum(w.steps for w in chief)
    slices = [(a, b) for w in chief for a, b in (w.slices or []) if a > 0 and b > 0]
    if len(slices) >= MIN_WINDOWS:
        return [steps * per_step / seconds for steps, seconds in slices]
    return [(w.samples or 0) / s for w, s in full]


def _parts(run: Run, out: RunSamples) -> None:
    from advisor.store.schema import BudgetRecord

    if not run.ranks:
        return
    records = sorted(run.of_type(BudgetRecord, rank=run.ranks[0]), key=lambda r: r.t)
    if not records:
        return
    last = records[-1]
    for key in WHOLE_RUN:
        if key in last.seconds:
            out.whole[f"part.{key}"] = last.seconds[key]
            out.labels[f"part.{key}"] = key
    epochs = _epoch_deltas(records)
    if len(epochs) >= 4:
        epochs = epochs[1:]
    for steps, wall, seconds in epochs:
        out.wall_ms_per_step.append(wall / steps * 1000.0)
        for key, value in seconds.items():
            out.parts.setdefault(key, []).append(value / steps * 1000.0)
    for key in list(out.parts):  # a part absent from an epoch cost nothing there
        out.parts[key] += [0.0] * (len(out.wall_ms_per_step) - len(out.parts[key]))
    for key in out.parts:
        out.labels.setdefault(key, part_label(key))


def _epoch_deltas(records: list[BudgetRecord]) -> list[tuple[int, float, dict[str, float]]]:
    """(steps, wall seconds, seconds by part key) between consecutive budget records."""
    deltas = []
    prev_steps, prev_wall = 0, 0.0
    prev: dict[str, float] = {}
    for record in records:
        now = _cumulative(record)
        steps = (record.steps or 0) - prev_steps
        if steps > 0:
            wall = record.wall_seconds - prev_wall - (now.get("part.startup", 0.0))
            wall += prev.get("part.startup", 0.0)
            diff = {k: max(0.0, v - prev.get(k, 0.0)) for k, v in now.items()}
            diff = {k: v for k, v in diff.items() if k.removeprefix("part.") not in WHOLE_RUN}
            deltas.append((steps, max(wall, 1e-9), diff))
            prev_steps, prev_wall, prev = record.steps or 0, record.wall_seconds, now
    return deltas


def _cumulative(record: BudgetRecord) -> dict[str, float]:
    values = {
        f"part.{name}": seconds
        for name, seconds in record.seconds.items()
        if name not in NOT_PARTS or name in WHOLE_RUN
    }
    for cb in record.callbacks:
        key = f"part.callback.{cb.name}.{cb.hook}"
        values[key] = values.get(key, 0.0) + cb.seconds
    return values
