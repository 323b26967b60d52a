"""Facts about the run as a whole: status, length, the advisor's own overhead."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("run.status", "", "running, finished, failed or killed (inferred)", "store", "str"),
    Fact("run.workers", "", "number of workers that wrote records", "store"),
    Fact("run.epochs", "", "epochs completed", "epochs"),
    Fact("run.train_seconds", "s", "wall time from train begin to the last record", "epochs"),
    Fact("run.errors", "", "collector errors recorded during the run", "guard"),
    Fact(
        "advisor.overhead_fraction",
        "fraction",
        "time spent in the advisor's hooks ÷ training time",
        "guard",
    ),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import EndRecord, EpochRecord, EventRecord, StartRecord

    out: dict[str, Any] = {"run.status": run.status, "run.workers": len(run.ranks)}
    epochs = run.of_type(EpochRecord, rank=run.ranks[0]) if run.ranks else []
    out["run.epochs"] = len(epochs)
    starts = run.of_type(StartRecord)
    ends = run.of_type(EndRecord)
    last_t = max((r.t for _, r in run.all_records()), default=None)
    if starts and last_t is not None:
        out["run.train_seconds"] = round(last_t - min(s.t for s in starts), 3)
    out["run.errors"] = sum(1 for e in run.of_type(EventRecord) if e.level == "error")
    own = [e.advisor_seconds for e in ends if e.advisor_seconds is not None]
    trained = [e.train_seconds for e in ends if e.train_seconds]
    if own and trained:
        out["advisor.overhead_fraction"] = sum(own) / sum(trained)
    return out
