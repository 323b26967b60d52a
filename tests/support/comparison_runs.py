"""Runs written by the real writer for the comparison and history tests: steady windows at a
given rate (with a fixed, deterministic spread), budget records per epoch with a callback's
hook, and host samples with other processes' CPU. No training: the figures are exact."""

from __future__ import annotations

import time
from pathlib import Path

from advisor.store.schema import (
    BudgetRecord,
    CallbackTime,
    EpochRecord,
    HostSample,
    WindowRecord,
)
from advisor.store.writer import RunWriter

SPREAD = (1.0, 0.97, 1.03, 0.99, 1.02, 0.98, 1.01, 1.0, 0.96, 1.04)  # ±4 %, no trend
BATCH = 64


def write_run(
    store: Path,
    run_id: str,
    *,
    step_ms: float = 10.0,
    callback_ms: float = 0.1,
    epochs: int = 6,
    steps_per_epoch: int = 100,
    others_cpu: float = 0.05,
    name: str | None = "gate",
    tags: dict[str, str] | None = None,
    t0: float | None = None,
    batch: int = BATCH,
    backend: str | None = None,
    spread: tuple[float, ...] = SPREAD,
) -> Path:
    """A finished run whose steps take ``step_ms`` and whose ``Logger.on_train_batch_end``
    takes ``callback_ms`` per step; other processes took ``others_cpu`` of a 2-core host."""
    t = time.time() if t0 is None else t0
    # created just before its first record: records outside a run's life are not read
    manifest = {"global_batch_size": batch, "name": name, "tags": tags or {}, "created": t - 1}
    if backend is not None:
        manifest["framework"] = {"backend": backend}
    writer = RunWriter(store, run_id=run_id, manifest=manifest)
    per_step = (step_ms + callback_ms) / 1000.0
    half = steps_per_epoch // 2
    wall = 0.5  # start-up
    for e in range(epochs):
        for w in range(2):  # two windows per epoch
            i = 2 * e + w
            seconds = half * per_step * spread[i % len(spread)]
            t += seconds
            writer.write(
                WindowRecord(
                    t=t,
                    epoch=e,
                    seconds=seconds,
                    steps=half,
                    samples=half * batch,
                    step_begin=i * half,
                    step_end=(i + 1) * half,
                )
            )
            # the training process takes one core; others take ``others_cpu`` of the host
            cores = [100.0, 200.0 * others_cpu]
            writer.write(HostSample(t=t, cpu_percent=cores, proc_cpu_percent=100.0))
        steps = (e + 1) * steps_per_epoch
        train = steps * step_ms / 1000.0
        cb = sum(
            steps_per_epoch * callback_ms / 1000.0 * SPREAD[(k + 3) % len(SPREAD)]
            for k in range(e + 1)
        )
        epoch_s = steps_per_epoch * per_step
        wall += epoch_s
        writer.write(
            EpochRecord(t=t, epoch=e, seconds=epoch_s, train_seconds=epoch_s, steps=steps_per_epoch)
        )
        writer.write(
            BudgetRecord(
                t=t,
                final=e == epochs - 1,
                wall_seconds=wall,
                seconds={"startup": 0.5, "train_steps": train, "callbacks": cb},
                steps=steps,
                callbacks=[
                    CallbackTime(name="Logger", hook="on_train_batch_end", seconds=cb, calls=steps)
                ],
            )
        )
    writer.close()
    return writer.path
