"""Which rank the others wait for, from each rank's per-epoch time budgets (analysis/stragglers.py).

Runs written through the real RunWriter, one cumulative budget per rank and epoch end, as the
callback writes them; the real multi-worker case is tests/launch/test_stragglers_real.py.
"""

from __future__ import annotations

import socket
import time

import pytest

from advisor.analysis.stragglers import straggler_of
from advisor.store.reader import RunReader
from advisor.store.schema import BudgetRecord
from advisor.store.writer import RunWriter

STEPS = 20  # per epoch


def _run(tmp_path, in_step_ms: list[list[float]], callbacks_ms: list[list[float]] | None = None):
    """A run whose rank r spends ``in_step_ms[r][e]`` per step inside its steps in epoch e (and
    ``callbacks_ms[r][e]`` per step in callbacks)."""
    ranks = len(in_step_ms)
    manifest = {"strategy": "MultiWorkerMirroredStrategy", "num_workers": ranks, "replicas": ranks}
    writers = [
        RunWriter(tmp_path, "run", rank=r, manifest=manifest if r == 0 else None)
        for r in range(ranks)
    ]
    for rank, w in enumerate(writers):
        train = outside = 0.0
        for epoch, ms in enumerate(in_step_ms[rank]):
            train += ms / 1000 * STEPS
            outside += (callbacks_ms[rank][epoch] if callbacks_ms else 0.0) / 1000 * STEPS
            w.write(
                BudgetRecord(
                    t=time.time(),
                    wall_seconds=1.0 + train + outside,
                    steps=STEPS * (epoch + 1),
                    seconds={"startup": 1.0, "train_steps": train, "callbacks": outside},
                )
            )
        w.write(
            BudgetRecord(
                t=time.time(),
                final=True,
                wall_seconds=1.0 + train + outside,
                steps=STEPS * len(in_step_ms[rank]),
                seconds={"startup": 1.0, "train_steps": train, "callbacks": outside},
            )
        )
    for w in reversed(writers):
        w.close("finished")
    return RunReader(tmp_path / "run").read()


def test_a_rank_busy_outside_its_steps_is_the_one_the_others_wait_for(tmp_path):
    # rank 2 sleeps 30 ms per step in a callback: ranks 0, 1 and 3 wait for it inside their steps
    run = _run(
        tmp_path,
        [[40, 40, 41], [41, 41, 40], [10, 10, 10], [40, 40, 40]],
        callbacks_ms=[[0, 0, 0], [0, 0, 0], [30, 30, 30], [0, 0, 0]],
    )
    found = straggler_of(run)
    assert found is not None and found.rank == 2 and found.consistent and found.epochs == 2
    assert found.host == socket.gethostname()
    # epochs 1 and 2: the others' medians (40.5, 40.5, 40) → 40.5 ms, less rank 2's 10 ms
    assert found.wait_s == pytest.approx(0.0305, abs=1e-4)
    assert found.share == pytest.approx(0.0305 / 0.0405, rel=1e-3)
    assert found.seconds_per_epoch == pytest.approx(0.0305 * STEPS, rel=1e-3)


def test_the_start_up_skew_of_the_first_epoch_is_not_a_straggler(tmp_path):
    # rank 1 started 0.7 s before rank 0 and waited for it in its first steps (a real JAX run
    # here: 35 ms more per step in epoch 0), then both stepped together
    found = straggler_of(_run(tmp_path, [[28.0, 15.2], [63.0, 15.5]]))
    assert found is not None and found.epochs == 1
    assert found.share < 0.05  # only epoch 1 is judged: 0.3 ms of 15.5


def test_one_epoch_is_never_consistent(tmp_path):
    found = straggler_of(_run(tmp_path, [[40], [10]], callbacks_ms=[[0], [30]]))
    assert found is not None and found.rank == 1 and found.share > 0.5
    assert not found.consistent  # its wait may be the start-up skew


def test_noise_that_moves_between_ranks_is_not_consistent(tmp_path):
    found = straggler_of(_run(tmp_path, [[12.0, 10.0, 10.4], [12.0, 10.3, 10.0]]))
    assert found is not None and not found.consistent
    assert found.share < 0.05


@pytest.mark.parametrize("in_step_ms", [[[10, 10]], []])
def test_one_rank_or_no_budget_has_no_candidate(tmp_path, in_step_ms):
    if not in_step_ms:  # two ranks that kept no budget (AdvisorCallback(budget=False))
        writers = [
            RunWriter(tmp_path, "run", rank=r, manifest={"num_workers": 2} if r == 0 else None)
            for r in range(2)
        ]
        for w in reversed(writers):
            w.close("finished")
        run = RunReader(tmp_path / "run").read()
    else:
        run = _run(tmp_path, in_step_ms)
    assert straggler_of(run) is None
