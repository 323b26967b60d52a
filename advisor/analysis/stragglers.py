"""Stragglers: which worker of a synchronous multi-worker run the others wait for, and what it
costs.

In synchronous data-parallel training every worker finishes its steps at the same pace, so the
time between step ends is the same on every rank and says nothing about who is slow. What differs
is where each rank spends that time. A worker that does extra work outside the training step
(a callback, a checkpoint, logging, a busier host's Python) arrives late at the step's collective,
and the others wait for it *inside* their steps. So the straggler is the rank with the least time
inside its steps, and the wait it imposes is the other ranks' extra time inside theirs.

Each rank's time budget (``BudgetRecord``, written at every epoch end) holds its time in training
steps and its steps so far; per-epoch differences give one verdict per epoch. The first epoch is
left out when there are more: it holds the ranks' start-up skew (the rank that starts first waits,
once, in its first steps for the last). A straggler is *consistent* when the same rank waits least
in every epoch after the first; a run of one epoch is never consistent (its wait may be that skew).
A worker slowed inside the step itself (a slower device) makes the others wait inside the
collective too, but leaves no trace in these budgets: the per-worker profiles show that one.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.store.reader import Run
    from advisor.store.schema import BudgetRecord

# The budget's categories that are a rank's own work outside its training steps.
OWN_OUTSIDE = ("callbacks", "checkpoint")


@dataclass(frozen=True)
class Straggler:
    """The rank the others wait for in a run (the candidate: the rule decides whether it counts)."""

    rank: int
    host: str | None  # its cluster node where a launcher said (Slurm, Ray), else its hostname
    wait_s: float  # per step: the median other rank's time in the step − this rank's
    step_s: float  # per step: the median other rank's time in the step and its own work outside it
    share: float  # wait_s ÷ step_s: the part of every step the configuration loses to this rank
    seconds_per_epoch: float  # wait_s × training steps per epoch
    consistent: bool  # the same rank waited least in every epoch after the first (needs two epochs)
    epochs: int  # epochs judged (the first is left out when there are more)


@dataclass(frozen=True)
class _Span:
    steps: int
    in_step_s: float
    outside_s: float


def straggler_of(run: Run) -> Straggler | None:
    """The straggler candidate of a run with two ranks or more that kept time budgets; else None."""
    from advisor.store.schema import BudgetRecord, StartRecord

    per_rank = {rank: _epochs(list(run.of_type(BudgetRecord, rank=rank))) for rank in run.ranks}
    per_rank = {rank: spans for rank, spans in per_rank.items() if spans}
    if len(per_rank) < 2:
        return None
    epochs = min(len(spans) for spans in per_rank.values())
    # The first epoch holds the ranks' start-up skew: the first to start waits in its first steps
    # for the last, once. With two epochs or more it is left out, as the epoch times leave it out.
    first = 1 if epochs >= 2 else 0
    named = [_least_in_step({r: s[e] for r, s in per_rank.items()}) for e in range(first, epochs)]
    total = {rank: _sum(spans[first:epochs]) for rank, spans in per_rank.items()}
    rank = _least_in_step(total)
    others = [span for r, span in total.items() if r != rank]
    mine = total[rank]
    other_in = statistics.median(s.in_step_s / s.steps for s in others)
    other_step = statistics.median((s.in_step_s + s.outside_s) / s.steps for s in others)
    wait = max(0.0, other_in - mine.in_step_s / mine.steps)
    hosts = {s.rank: s.node or s.hostname for s in run.of_type(StartRecord) if s.node or s.hostname}
    steps_per_epoch = mine.steps / len(named)
    return Straggler(
        rank=rank,
        host=hosts.get(rank),
        wait_s=wait,
        step_s=other_step,
        share=wait / other_step if other_step > 0 else 0.0,
        seconds_per_epoch=wait * steps_per_epoch,
        consistent=first == 1 and all(r == rank for r in named),
        epochs=len(named),
    )


def _epochs(budgets: list[BudgetRecord]) -> list[_Span]:
    """Per-epoch spans from the cumulative budgets written at epoch ends (the final one repeats
    the last epoch's and is left out)."""
    spans: list[_Span] = []
    before = (0, 0.0, 0.0)
    for b in (b for b in budgets if not b.final and b.steps):
        now = (
            b.steps or 0,
            b.seconds.get("train_steps", 0.0),
            sum(b.seconds.get(k, 0.0) for k in OWN_OUTSIDE),
        )
        steps = now[0] - before[0]
        if steps > 0 and now[1] > before[1]:
            spans.append(_Span(steps, now[1] - before[1], max(0.0, now[2] - before[2])))
        before = now
    return spans


def _sum(spans: list[_Span]) -> _Span:
    return _Span(
        sum(s.steps for s in spans),
        sum(s.in_step_s for s in spans),
        sum(s.outside_s for s in spans),
    )


def _least_in_step(spans: dict[int, _Span]) -> int:
    return min(spans, key=lambda r: (spans[r].in_step_s / spans[r].steps, r))
