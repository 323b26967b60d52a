"""Facts of a run within a sweep (several worker counts / strategies). Derivations: issue 8."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("scaling.points", "", "configurations in the sweep this run belongs to", "scaling"),
    Fact("scaling.speedup", "", "epoch-time speedup versus the smallest worker count", "scaling"),
    Fact("scaling.efficiency", "fraction", "speedup ÷ (N ÷ N₀)", "scaling"),
    Fact("scaling.samples_per_dollar_ratio", "", "samples/$ at this size ÷ samples/$ at the smallest", "scaling"),
    Fact("scaling.strategies", "", "distinct strategies tried in the sweep", "scaling"),
    Fact("scaling.communication_growth", "%", "rise in communication share from the smallest to this size, in points", "scaling"),
    Fact("scaling.per_replica_batch_shrinks", "", "the global batch is fixed, so the per-replica batch shrinks with N", "scaling", "bool"),
    Fact("cluster.instances", "", "instances (hosts) in the job", "scaling"),
    Fact("cluster.gpus_per_instance", "", "accelerators per instance", "scaling"),
    Fact("workers.step_time_spread", "fraction", "(slowest − fastest) ÷ fastest per-worker step time", "scaling"),
)


def derive(run: Run, facts: dict[str, Any]) -> dict[str, Any]:
    return {}
