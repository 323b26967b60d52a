"""Facts about the store a run lives in (its runs and their bytes), from the derivation context.

An area of its own after ``scaling``: the base areas are derived from the run alone (a sweep's
points are made of them), while the store's size comes from the caller's context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("store.runs", "", "runs in the store this run belongs to", "store"),
    Fact("store.bytes", "bytes", "disk space used by the runs in this store", "store"),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if ctx.store_runs is not None:
        out["store.runs"] = ctx.store_runs
    if ctx.store_bytes is not None:
        out["store.bytes"] = ctx.store_bytes
    return out
