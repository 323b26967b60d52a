"""Where the fit's wall clock went: the time budget and goodput, from the ``budget`` record.

The collector charges every second of the fit to one category (docs/goodput.md); the last
record of the chief's file is read. ``goodput`` is the share of the wall clock spent in training
steps (the input wait inside them included: ``time.input_wait`` says how much of it, from the
cached-input baseline, when its cost is outside the noise band). A record that is not the final
one (the job was killed or failed mid-epoch) covers the fit up to its last epoch end: the time
the run went on after it is ``unaccounted``.

Callbacks: each (callback, hook) row with its own time, calls and cost per training step;
``callbacks.slowest*`` name the costliest non-checkpoint hook, and
``callbacks.<name>.ms_per_step`` gives each callback's cost per step. The ceiling "without the
slow callbacks' batch hooks" is ``callbacks.removed_speedup``: the baseline's cached input
trained with those hooks called, beside the same input without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor import noise
from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run
    from advisor.store.schema import BaselineRecord, BudgetRecord

# Categories in the order the views list them; input_wait is a part of train_steps, and the two
# compile_* parts of compile, not beside them.
PARTS = {"input_wait": "train_steps", "compile_startup": "compile", "compile_midfit": "compile"}
CATEGORIES = (
    "startup",
    "compile",
    "compile_startup",
    "compile_midfit",
    "train_steps",
    "input_wait",
    "callbacks",
    "validation",
    "checkpoint",
    "epoch_boundary",
    "advisor_hooks",
    "advisor_measure",
    "profile",
    "unaccounted",
)
LABELS = {
    "startup": "start-up to the first step (compiling apart)",
    "compile": "compiling (traces and compilations of functions)",
    "compile_startup": "compiling at start-up",
    "compile_midfit": "compiling mid-fit (retraces, new functions)",
    "train_steps": "training steps",
    "input_wait": "waiting for input, inside the training steps (baseline)",
    "callbacks": "callbacks (other than checkpoints)",
    "validation": "validation",
    "checkpoint": "checkpoint saves",
    "epoch_boundary": "epoch boundaries",
    "advisor_hooks": "the advisor's own hooks",
    "advisor_measure": "the advisor's measurements (baseline, what-if)",
    "profile": "the advisor's profile (capture and summary)",
    "unaccounted": "unaccounted",
}
BATCH_HOOKS = ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end")


def _category_facts(name: str) -> tuple[Fact, ...]:
    what = LABELS[name]
    return (
        Fact(
            f"time.{name}.seconds",
            "s",
            f"wall-clock seconds of the fit spent in: {what}",
            "goodput",
        ),
        Fact(
            f"time.{name}.share",
            "fraction",
            f"share of the fit's wall clock spent in: {what}",
            "goodput",
        ),
    )


FACTS = (
    Fact(
        "time.wall_seconds",
        "s",
        "the fit's wall clock, from the advisor's train begin to its end",
        "goodput",
    ),
    Fact(
        "time.final",
        "",
        "the budget covers the whole fit (False: it ends at the last epoch end before the "
        "job stopped)",
        "goodput",
        "bool",
    ),
    Fact(
        "time.table",
        "",
        "every category: seconds, share and what it holds, for the views",
        "goodput",
        "list",
    ),
    Fact("goodput", "fraction", "share of the fit's wall clock spent in training steps", "goodput"),
    Fact(
        "goodput.without_advisor",
        "fraction",
        "training steps ÷ the wall clock less the advisor's own time "
        "(its hooks, measurements and profile): the fit's goodput had the advisor not been there",
        "goodput",
    ),
    Fact(
        "time.largest_loss",
        "",
        "the category, other than training steps, that took the most time",
        "goodput",
        "str",
    ),
    Fact("time.largest_loss_share", "fraction", "its share of the wall clock", "goodput"),
    Fact(
        "callbacks.table",
        "",
        "every timed callback hook: seconds, calls, cost per step, share",
        "goodput",
        "list",
    ),
    Fact(
        "callbacks.<name>.ms_per_step",
        "ms",
        "one callback's cost per training step, all its hooks",
        "goodput",
    ),
    Fact(
        "callbacks.seconds",
        "s",
        "time in the fit's other callbacks (checkpoint callbacks apart)",
        "goodput",
    ),
    Fact(
        "callbacks.batch_ms_per_step",
        "ms",
        "time per training step in other callbacks' batch hooks",
        "goodput",
    ),
    Fact(
        "callbacks.slowest",
        "",
        "the costliest callback hook (not a checkpoint): Class.hook",
        "goodput",
        "str",
    ),
    Fact("callbacks.slowest_name", "", "the costliest callback hook's class", "goodput", "str"),
    Fact(
        "callbacks.slowest_hook",
        "",
        "the costliest callback hook's name (on_train_batch_end, …)",
        "goodput",
        "str",
    ),
    Fact(
        "callbacks.slowest_batch_hook",
        "",
        "the costliest hook runs at every batch",
        "goodput",
        "bool",
    ),
    Fact(
        "callbacks.slowest_ms_per_step",
        "ms",
        "the costliest callback hook's time per training step",
        "goodput",
    ),
    Fact(
        "callbacks.slowest_step_share",
        "fraction",
        "the costliest callback hook's time ÷ the training loop's "
        "time (the steps and the other callbacks' hooks)",
        "goodput",
    ),
    Fact(
        "callbacks.slowest_share",
        "fraction",
        "the costliest callback hook's time ÷ the fit's wall clock",
        "goodput",
    ),
    Fact("callbacks.step_ms", "ms", "one training step without other callbacks' hooks", "goodput"),
    Fact(
        "callbacks.removed_speedup",
        "×",
        "samples/s without the slow callbacks' batch hooks ÷ with them "
        "(cached input, paired rounds of the baseline)",
        "goodput",
    ),
    Fact(
        "callbacks.removed_speedup_band",
        "fraction",
        "± noise band of callbacks.removed_speedup, as a share of it",
        "goodput",
    ),
    Fact(
        "callbacks.removed_outside_band",
        "",
        "the slow callbacks' cost is larger than its noise band",
        "goodput",
        "bool",
    ),
    Fact("callbacks.removed_of", "", "the hooks the ceiling left out", "goodput", "str"),
    Fact(
        "checkpoint.count",
        "",
        "saves during the fit (model.save, save_weights, checkpoint callbacks)",
        "goodput",
    ),
    Fact("checkpoint.seconds", "s", "time the fit spent saving checkpoints", "goodput"),
    Fact("checkpoint.share", "fraction", "checkpoint saves ÷ the fit's wall clock", "goodput"),
    Fact(
        "checkpoint.bytes", "bytes", "bytes the saves wrote (the files each save left)", "goodput"
    ),
    Fact("checkpoint.seconds_per_save", "s", "mean time of one save", "goodput"),
    Fact(
        "checkpoint.mb_per_s",
        "MB/s",
        "bytes written ÷ time saving (the storage's speed for saves)",
        "goodput",
    ),
    Fact("checkpoint.by", "", "who saved, and how often (Class.hook ×N)", "goodput", "str"),
) + tuple(f for name in CATEGORIES for f in _category_facts(name))


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import BaselineRecord, BudgetRecord

    ranks = run.ranks
    records = run.chief_of_type(BudgetRecord)
    out: dict[str, Any] = {}
    if records:
        chief = ranks[0] if ranks else 0
        # The run's last sign of work: its end record (and the events of its closing) may come much
        # later, when a failed fit is closed by the next one or at exit.
        last_t = max(
            (
                r.t
                for rank, r in run.all_records()
                if rank == chief and r.type not in ("end", "event")
            ),
            default=None,
        )
        out.update(_budget(records[-1], facts, last_t))
    baselines = run.chief_of_type(BaselineRecord)
    if baselines and baselines[-1].hooks_rounds:
        out.update(_ceiling(baselines[-1]))
    return out


def _budget(record: BudgetRecord, facts: dict[str, Any], last_t: float | None) -> dict[str, Any]:
    seconds = {
        k: max(0.0, float(v))
        for k, v in record.seconds.items()
        if k in LABELS and k != "unaccounted"
    }
    wall = float(record.wall_seconds)
    unaccounted = float(record.seconds.get("unaccounted", 0.0))
    if not record.final and last_t is not None and last_t > record.t:
        # The job went on after its last epoch end (killed or failed mid-epoch): not accounted.
        unaccounted += last_t - record.t
        wall += last_t - record.t
    if wall <= 0:
        return {}
    seconds["unaccounted"] = max(0.0, unaccounted)
    if "compile" in seconds and record.compile_startup_seconds is not None:
        part = min(seconds["compile"], max(0.0, record.compile_startup_seconds))
        seconds["compile_startup"], seconds["compile_midfit"] = part, seconds["compile"] - part
    bound, outside = facts.get("input.bound_fraction"), facts.get("input.bound_outside_band")
    if bound is not None and outside is not None:
        seconds["input_wait"] = seconds.get("train_steps", 0.0) * (float(bound) if outside else 0.0)
    out: dict[str, Any] = {"time.wall_seconds": round(wall, 3), "time.final": record.final}
    table = []
    for name in CATEGORIES:
        if name not in seconds:
            continue
        value = seconds[name]
        out[f"time.{name}.seconds"] = round(value, 4)
        out[f"time.{name}.share"] = value / wall
        table.append(
            {
                "category": name,
                "label": LABELS[name],
                "seconds": round(value, 4),
                "share": value / wall,
                "part_of": PARTS.get(name),
            }
        )
    out["time.table"] = table
    train = seconds.get("train_steps", 0.0)
    out["goodput"] = train / wall
    own = sum(seconds.get(k, 0.0) for k in ("advisor_hooks", "advisor_measure", "profile"))
    if wall - own > 0:
        out["goodput.without_advisor"] = min(1.0, train / (wall - own))
    losses = {k: v for k, v in seconds.items() if k != "train_steps" and k not in PARTS}
    if losses:
        worst = max(losses, key=lambda k: losses[k])
        out["time.largest_loss"] = LABELS[worst]
        out["time.largest_loss_share"] = losses[worst] / wall
    if record.source != "track":  # a custom loop's markers know no callbacks and no saves
        out.update(_callbacks(record, seconds, wall))
        out.update(_checkpoints(record, wall))
    return out


def _callbacks(record: BudgetRecord, seconds: dict[str, float], wall: float) -> dict[str, Any]:
    steps = record.steps or 0
    rows = record.callbacks
    out: dict[str, Any] = {"callbacks.seconds": round(seconds.get("callbacks", 0.0), 4)}
    batch = sum(r.seconds for r in rows if r.hook in BATCH_HOOKS)
    # The training loop: its steps and the other callbacks' hooks (per batch or per epoch), so a
    # hook's share of it is at most 1 whichever hook it is.
    loop = seconds.get("train_steps", 0.0) + sum(r.seconds for r in rows if r.kind != "checkpoint")
    if steps:
        out["callbacks.step_ms"] = seconds.get("train_steps", 0.0) / steps * 1000.0
        out["callbacks.batch_ms_per_step"] = batch / steps * 1000.0
    table = []
    per_callback: dict[str, float] = {}
    for row in rows:
        item = {
            "name": row.name,
            "hook": row.hook,
            "kind": row.kind,
            "seconds": row.seconds,
            "calls": row.calls,
            "share": row.seconds / wall,
            "overlapped_seconds": row.overlapped_seconds,
        }
        if steps:
            item["ms_per_step"] = row.seconds / steps * 1000.0
            per_callback[row.name] = per_callback.get(row.name, 0.0) + row.seconds
        if loop > 0:
            item["step_share"] = row.seconds / loop
        table.append(item)
    out["callbacks.table"] = table
    for name, value in per_callback.items():
        out[f"callbacks.{_fact_part(name)}.ms_per_step"] = value / steps * 1000.0
    costly = [r for r in rows if r.kind != "checkpoint"]
    if costly:
        top = max(costly, key=lambda r: r.seconds)
        out.update(
            {
                "callbacks.slowest": f"{top.name}.{top.hook}",
                "callbacks.slowest_name": top.name,
                "callbacks.slowest_hook": top.hook,
                "callbacks.slowest_batch_hook": top.hook in BATCH_HOOKS,
                "callbacks.slowest_share": top.seconds / wall,
            }
        )
        if steps:
            out["callbacks.slowest_ms_per_step"] = top.seconds / steps * 1000.0
        if loop > 0:
            out["callbacks.slowest_step_share"] = top.seconds / loop
    return out


def _checkpoints(record: BudgetRecord, wall: float) -> dict[str, Any]:
    saved = record.checkpoint
    out: dict[str, Any] = {
        "checkpoint.count": saved.count,
        "checkpoint.seconds": round(saved.seconds, 4),
        "checkpoint.share": saved.seconds / wall,
    }
    if saved.bytes is not None:
        out["checkpoint.bytes"] = saved.bytes
        if saved.seconds > 0:
            out["checkpoint.mb_per_s"] = saved.bytes / saved.seconds / 1e6
    if saved.count:
        out["checkpoint.seconds_per_save"] = saved.seconds / saved.count
        out["checkpoint.by"] = ", ".join(
            f"{who} ×{n}" for who, n in sorted(saved.by.items(), key=lambda kv: -kv[1])
        )
    return out


def _ceiling(record: BaselineRecord) -> dict[str, Any]:
    """Cached input without ÷ with the slow hooks, paired by round (the baseline's "hooks" arm)."""
    band = noise.band(
        noise.paired(record.cached_rounds or [], record.hooks_rounds or [], noise.ratio)
    )
    out: dict[str, Any] = {}
    if record.hooks_of:
        out["callbacks.removed_of"] = ", ".join(record.hooks_of)
    if band is not None and band.value > 0:
        out["callbacks.removed_speedup"] = band.value
        out["callbacks.removed_speedup_band"] = band.half_width / band.value
        out["callbacks.removed_outside_band"] = band.value - band.half_width > 1.0
    return out


def _fact_part(name: str) -> str:
    """A callback's name as one part of a fact name ("Logger#2" → "Logger_2")."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)
