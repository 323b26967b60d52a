"""Facts of a run within its sweep (several worker counts / strategies of one training job).

The sweep's other runs come in the derivation context as points (the service finds the runs with
the same ``sweep_id`` in the store, and the sweep file of ``advisor scale`` that labels them).
The run's own configuration (strategy × N) is compared with the smallest N of the same strategy.
A run outside a sweep, or alone in it, has only the facts that need no comparison.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("scaling.points", "", "configurations in the sweep this run belongs to", "scaling"),
    Fact("scaling.speedup", "", "epoch-time speedup versus the smallest worker count", "scaling"),
    Fact("scaling.efficiency", "fraction", "speedup ÷ (N ÷ N₀)", "scaling"),
    Fact(
        "scaling.samples_per_dollar_ratio",
        "",
        "samples/$ at this size ÷ samples/$ at the smallest",
        "scaling",
    ),
    Fact("scaling.strategies", "", "distinct strategies tried in the sweep", "scaling"),
    Fact(
        "scaling.communication_growth",
        "%",
        "rise in communication share from the smallest to this size, in points",
        "scaling",
    ),
    Fact(
        "scaling.per_replica_batch_shrinks",
        "",
        "the global batch is fixed, so the per-replica batch shrinks with N",
        "scaling",
        "bool",
    ),
    Fact("cluster.instances", "", "instances (hosts) in the job", "scaling"),
    Fact("cluster.gpus_per_instance", "", "accelerators per instance", "scaling"),
    Fact(
        "workers.step_time_spread",
        "fraction",
        "(slowest − fastest) ÷ fastest per-worker step time",
        "scaling",
    ),
    Fact(
        "workers.straggler_rank",
        "",
        "the rank the other workers wait for (the least time inside its steps)",
        "scaling",
    ),
    Fact("workers.straggler_host", "", "the host of that rank", "scaling", "str"),
    Fact(
        "workers.straggler_wait_ms",
        "ms",
        "per step, the time the other workers wait for that rank",
        "scaling",
    ),
    Fact(
        "workers.straggler_share",
        "fraction",
        "that wait ÷ the other workers' step time: the share of every step lost to it",
        "scaling",
    ),
    Fact("workers.straggler_s_per_epoch", "s", "that wait over one epoch's steps", "scaling"),
    Fact(
        "workers.straggler_consistent",
        "",
        "the same rank was waited for in every epoch",
        "scaling",
        "bool",
    ),
    Fact(
        "scaling.workers", "", "worker count N of this run's configuration in the sweep", "scaling"
    ),
    Fact(
        "scaling.baseline_workers",
        "",
        "the smallest worker count N₀ of the same strategy in the sweep",
        "scaling",
    ),
    Fact(
        "scaling.step_time_ratio",
        "",
        "mean step time at this size ÷ at the smallest (1 = no synchronisation cost)",
        "scaling",
    ),
    Fact(
        "scaling.keras3_multiworker",
        "",
        "Keras 3 trains under MultiWorkerMirroredStrategy (fails with more than one worker: "
        "keras#20585)",
        "context",
        "bool",
    ),
    Fact(
        "scaling.val_fraction_growth",
        "%",
        "rise in the validation share of epoch time from the smallest to this size, in points",
        "scaling",
    ),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.analysis.scaling import build_table
    from advisor.analysis.scaling_points import instances_for, point_of

    out: dict[str, Any] = {}
    m = run.manifest
    if m.strategy:
        out["scaling.keras3_multiworker"] = bool(
            m.strategy in ("MultiWorkerMirroredStrategy", "CollectiveAllReduceStrategy")
            and not m.framework.legacy_keras
            and m.framework.backend == "tensorflow"
        )
    me = point_of(run, ctx.sweep, facts)
    if me.step_time_spread is not None:
        out["workers.step_time_spread"] = me.step_time_spread
    if me.straggler_share is not None:
        out["workers.straggler_rank"] = me.straggler_rank
        out["workers.straggler_wait_ms"] = (me.straggler_wait_s or 0.0) * 1000.0
        out["workers.straggler_share"] = me.straggler_share
        out["workers.straggler_s_per_epoch"] = me.straggler_s_per_epoch
        out["workers.straggler_consistent"] = bool(me.straggler_consistent)
        if me.straggler_host:
            out["workers.straggler_host"] = me.straggler_host
    out["cluster.instances"], per = instances_for(me)
    if per:
        out["cluster.gpus_per_instance"] = per
    elif me.gpu_count:
        out["cluster.gpus_per_instance"] = me.gpu_count
    if not m.sweep_id:
        return out
    points = [me] if run.status == "finished" else []
    points += [p for p in ctx.siblings if p.run_id != me.run_id and p.status == "finished"]
    table = build_table(points)
    out["scaling.points"] = len(table.rows)
    out["scaling.strategies"] = len(table.strategies)
    out["scaling.workers"] = me.workers
    row = table.row(me.strategy, me.workers)
    mine = [r for r in table.rows if r.strategy == me.strategy and r.epoch_s is not None]
    if row is None or not mine or len(table.rows) < 2:
        return out
    base = min(mine, key=lambda r: r.workers)
    out["scaling.baseline_workers"] = base.workers
    if row.speedup is not None and row.efficiency is not None:
        out["scaling.speedup"] = row.speedup
        out["scaling.efficiency"] = row.efficiency
    if row.samples_per_dollar and base.samples_per_dollar:
        out["scaling.samples_per_dollar_ratio"] = row.samples_per_dollar / base.samples_per_dollar
    if row.communication_percent is not None and base.communication_percent is not None:
        out["scaling.communication_growth"] = row.communication_percent - base.communication_percent
    if row.per_replica_batch and base.per_replica_batch and row.workers != base.workers:
        out["scaling.per_replica_batch_shrinks"] = (
            row.per_replica_batch < 0.9 * base.per_replica_batch
        )
    if row.step_ms and base.step_ms:
        out["scaling.step_time_ratio"] = row.step_ms / base.step_ms
    if row.val_fraction is not None and base.val_fraction is not None:
        out["scaling.val_fraction_growth"] = 100.0 * (row.val_fraction - base.val_fraction)
    return out
