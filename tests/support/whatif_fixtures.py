"""Hand-written runs with a what-if record (the shapes the what-if writes); no training."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from advisor.store.schema import (
    BaselineRecord,
    PipelineRecord,
    WhatIfCandidate,
    WhatIfRecord,
    WindowRecord,
)
from advisor.store.writer import RunWriter

UNCHANGED = [100.0, 102.0, 98.0, 101.0, 99.0, 100.0]


def whatif_record(**extra: object) -> WhatIfRecord:
    """parallel_map 2.4× in every round, cache_map 40×, prefetch 1.0×; two not measured."""
    candidates = [
        WhatIfCandidate(
            name="parallel_map",
            status="measured",
            label="map #1 ('decode') with AUTOTUNE",
            batch_size=32,
            rounds=[r * 2.4 for r in UNCHANGED],
            steps=120,
            seconds=3.1,
        ),
        WhatIfCandidate(
            name="cache_map",
            status="measured",
            label="ds.cache() after map #1 ('decode')",
            batch_size=32,
            rounds=[r * 40.0 for r in UNCHANGED],
            steps=900,
            seconds=4.2,
        ),
        WhatIfCandidate(
            name="prefetch",
            status="measured",
            label="ds.prefetch(tf.data.AUTOTUNE)",
            batch_size=32,
            rounds=[101.0, 99.0, 100.0, 103.0, 97.0, 100.0],
            steps=60,
            seconds=2.0,
        ),
        WhatIfCandidate(
            name="jit_compile", status="not_relevant", reason="the input costs 98% of step time"
        ),
        WhatIfCandidate(
            name="batch_x2",
            status="failed",
            reason="ResourceExhaustedError: out of memory",
            seconds=0.7,
        ),
        WhatIfCandidate(name="from_the_future", status="measured", rounds=[1.0] * 6),
    ]
    values = {
        "t": time.time(),
        "mode": "end",
        "input_kind": "tf.data",
        "batch_size": 32,
        "requested": "auto",
        "rounds": 6,
        "unchanged_rounds": UNCHANGED,
        "candidates": candidates,
        "seconds": 12.5,
        "budget_seconds": 20.0,
        "fit_seconds": 250.0,
    }
    values.update(extra)
    return WhatIfRecord(**values)  # type: ignore[arg-type]


def write_windows(writer: RunWriter, steps: int, samples: int, count: int = 4) -> None:
    """``count`` measured windows of epoch 0, 10 s each, one after another."""
    for i in range(count):
        writer.write(
            WindowRecord(
                t=time.time() + i,
                epoch=0,
                seconds=10.0,
                steps=steps,
                samples=samples,
                step_begin=steps * i,
                step_end=steps * (i + 1),
            )
        )


def input_bound_run(
    runs_dir: Path, record: WhatIfRecord | None = None, name: str = "whatif"
) -> Path:
    """A finished run: input-bound by its baseline, a sequential uncached map, and a what-if."""
    writer = RunWriter(runs_dir, manifest={"global_batch_size": 32}, name=name)
    write_windows(writer, steps=32, samples=1000)
    cached = [4000.0 + i for i in range(12)]
    real = [100.0 + i for i in range(12)]
    writer.write(
        BaselineRecord(
            t=time.time(),
            steps=100,
            batch_size=32,
            input_kind="tf.data",
            rounds=12,
            real_rounds=real,
            cached_rounds=cached,
            real_samples_per_s=105.5,
            cached_samples_per_s=4005.5,
        )
    )
    stages = [
        {"op": "TensorSliceDataset", "kind": "source", "node": "s"},
        {
            "op": "MapDataset",
            "kind": "map",
            "node": "m",
            "fn": "decode",
            "ordinal": 1,
            "parallel": False,
            "num_parallel_calls": 1,
            "py_function": True,
            "random": False,
            "heavy": False,
            "fn_ops": 3,
        },
        {"op": "BatchDatasetV2", "kind": "batch", "node": "b", "batch_size": 32, "parallel": False},
    ]
    writer.write(
        PipelineRecord(
            t=time.time(),
            values={
                "input_kind": "tf.data",
                "summary": {
                    "stages": stages,
                    "options": {},
                    "files": [],
                    "file_candidates": [],
                    "compression": None,
                },
            },
        )
    )
    writer.write(record if record is not None else whatif_record())
    writer.close()
    return writer.path


def backends_run(runs_dir: Path, result: Any, name: str = "backends") -> Path:
    """A finished run of four measured windows and the backend what-if's record of ``result``
    (a ``BackendsResult``), written as the what-if writes it."""
    writer = RunWriter(runs_dir, manifest={"global_batch_size": 64}, name=name)
    write_windows(writer, steps=31, samples=1984)
    writer.write(result.to_record())
    writer.close()
    return writer.path


def backends_facts(runs_dir: Path, result: Any) -> dict[str, Any]:
    """The facts of :func:`backends_run`'s run (no fact may fail to derive)."""
    from advisor.analysis.registry import registry
    from advisor.store.reader import RunReader

    facts, errors = registry().derive(RunReader(backends_run(runs_dir, result)).read())
    assert errors == []
    return facts
