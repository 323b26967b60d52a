"""Hand-made run directories of a sweep, with numbers chosen so the table can be checked by hand.

Written through the real RunWriter (so they follow the run-directory contract), with records of
known values instead of a training job: the report's arithmetic is what these tests check.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from advisor.store.schema import BudgetRecord, EpochRecord, WindowRecord
from advisor.store.sweep import ConfigRecord, SweepRecord, write_sweep
from advisor.store.writer import RunWriter


def write_run(
    runs_dir: Path,
    run_id: str,
    *,
    sweep_id: str | None,
    strategy: str,
    workers: int,
    epochs: list[float],
    samples_per_epoch: int,
    steps_per_epoch: int,
    ranks: int = 1,
    manifest_strategy: str = "MirroredStrategy",
    price_per_hour: float | None = None,
    instance_type: str | None = None,
    tags: bool = True,
    step_time: list[float] | None = None,
    status: str = "finished",
    extra: list[Any] | None = None,
    manifest_extra: dict[str, Any] | None = None,
) -> Path:
    """A run whose every rank records the given epochs, one measured window per epoch.

    ``samples_per_epoch`` is what *each rank* records (the global batch for tf.distribute
    multi-worker, its own share for jax / horovod); ``step_time``: mean step time per rank.
    """
    manifest = {
        "sweep_id": sweep_id,
        "strategy": manifest_strategy,
        "num_workers": ranks,
        "replicas": workers,
        "price_per_hour": price_per_hour,
        "instance_type": instance_type,
        "tags": {"scale.strategy": strategy, "scale.workers": str(workers)} if tags else {},
        **(manifest_extra or {}),
    }
    writers = [
        RunWriter(runs_dir, run_id, rank=r, manifest=manifest if r == 0 else None)
        for r in range(ranks)
    ]
    t = time.time() - 100.0
    for epoch, seconds in enumerate(epochs):
        t += seconds
        for rank, w in enumerate(writers):
            st = (step_time or [seconds / steps_per_epoch] * ranks)[rank]
            w.write(
                WindowRecord(
                    t=t,
                    epoch=epoch,
                    seconds=seconds,
                    steps=steps_per_epoch,
                    samples=samples_per_epoch,
                    step_begin=epoch * steps_per_epoch,
                    step_end=(epoch + 1) * steps_per_epoch,
                    step_count=steps_per_epoch,
                    step_time_mean=st,
                    step_time_std=0.0,
                    step_time_max=st,
                )
            )
            w.write(
                EpochRecord(
                    t=t,
                    epoch=epoch,
                    seconds=seconds,
                    train_seconds=seconds,
                    steps=steps_per_epoch,
                    samples=samples_per_epoch,
                )
            )
    for w in writers:
        for record in extra or []:
            w.write(record)
    for w in reversed(writers):
        if status == "finished":
            w.close("finished")
    return runs_dir / run_id


def budget(goodput: float, wall_seconds: float = 10.0) -> BudgetRecord:
    """A final time budget whose training steps take ``goodput`` of the wall clock; start-up takes
    a tenth and callbacks the rest (goodput = training steps ÷ wall clock)."""
    startup = 0.1 * wall_seconds
    steps = goodput * wall_seconds
    return BudgetRecord(
        t=time.time(),
        final=True,
        wall_seconds=wall_seconds,
        steps=10,
        seconds={
            "startup": startup,
            "train_steps": steps,
            "callbacks": wall_seconds - startup - steps,
        },
    )


def write_sweep_runs(
    runs_dir: Path, sweep_id: str = "sweep-fixture", price: float | None = 2.0
) -> None:
    """Two strategies × {1, 2, 4} workers, mirrored repeated twice at N=1.

    mirrored (global batch 64 per replica; steady epochs after a slow first one):
      N=1: epochs [9, 4.0] and [9, 6.0] → 5.0 s (repeats 4 and 6), 4096 samples/epoch
      N=2: [9, 2.5] → 2.5 s;  N=4: [9, 1.6] → 1.6 s
    jax (one process per worker, each records its share of 4096 samples):
      N=1: [9, 8.0] → 8 s;  N=2: [9, 5.0] → 5 s
    """
    common = {"sweep_id": sweep_id, "price_per_hour": price}
    write_run(
        runs_dir,
        f"{sweep_id}-mirrored-n1-r0",
        strategy="mirrored",
        workers=1,
        epochs=[9.0, 4.0],
        samples_per_epoch=4096,
        steps_per_epoch=64,
        **common,
    )
    write_run(
        runs_dir,
        f"{sweep_id}-mirrored-n1-r1",
        strategy="mirrored",
        workers=1,
        epochs=[9.0, 6.0],
        samples_per_epoch=4096,
        steps_per_epoch=64,
        **common,
    )
    write_run(
        runs_dir,
        f"{sweep_id}-mirrored-n2-r0",
        strategy="mirrored",
        workers=2,
        epochs=[9.0, 2.5],
        samples_per_epoch=4096,
        steps_per_epoch=32,
        **common,
    )
    write_run(
        runs_dir,
        f"{sweep_id}-mirrored-n4-r0",
        strategy="mirrored",
        workers=4,
        epochs=[9.0, 1.6],
        samples_per_epoch=4096,
        steps_per_epoch=16,
        **common,
    )
    write_run(
        runs_dir,
        f"{sweep_id}-jax-n1-r0",
        strategy="jax",
        workers=1,
        manifest_strategy="DataParallel",
        epochs=[9.0, 8.0],
        samples_per_epoch=4096,
        steps_per_epoch=64,
        **common,
    )
    write_run(
        runs_dir,
        f"{sweep_id}-jax-n2-r0",
        strategy="jax",
        workers=2,
        manifest_strategy="DataParallel",
        epochs=[9.0, 5.0],
        samples_per_epoch=2048,
        steps_per_epoch=32,
        ranks=2,
        step_time=[0.15, 0.18],
        **common,
    )
    configs = [
        ("mirrored", 1, 0),
        ("mirrored", 1, 1),
        ("mirrored", 2, 0),
        ("mirrored", 4, 0),
        ("jax", 1, 0),
        ("jax", 2, 0),
    ]
    write_sweep(
        runs_dir,
        SweepRecord(
            sweep_id=sweep_id,
            strategies=["mirrored", "jax"],
            workers=[1, 2, 4],
            repeat=2,
            configs=[
                ConfigRecord(
                    strategy=s,
                    workers=n,
                    repeat=r,
                    run_id=f"{sweep_id}-{s}-n{n}-r{r}",
                    status="finished",
                )
                for s, n, r in configs
            ],
        ),
    )
