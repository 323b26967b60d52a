"""Fixture stores for the TUI tests, written through the real RunWriter with fixed timestamps.

- ``input-bound``: a run whose tf.data pipeline has no prefetch and two sequential maps, with a
  cached-input baseline (118 real vs 629 cached samples/s): its top finding is C401 with a fix
  and a measured gain;
- ``healthy``: the same model with a good pipeline (prefetch, parallel maps, baseline close);
- ``priced``: a run with an instance price (samples/$), tagged ``team=vision``;
- a sweep ``sweep-fixture`` (mirrored at 1, 2, 4 workers; jax at 1, 2) from the scaling tests;
- optionally a corrupt run (its manifest cut short: the run cannot be read; a damaged record line
  would only be skipped and reported).

Times: every run is created at a fixed instant (``T0`` + minutes), so dates, charts and
snapshots do not depend on when the test runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from advisor.store.schema import (
    BaselineRecord,
    EpochRecord,
    HostSample,
    PipelineRecord,
    WindowRecord,
)
from advisor.store.writer import RunWriter

T0 = 1_800_000_000.0  # 2027-01-15 08:00 UTC


def _pipeline(*stages: dict[str, Any]) -> dict[str, Any]:
    """A pipeline record's values: a tf.data graph summary, source first."""
    return {
        "input_kind": "tf.data",
        "summary": {
            "stages": [{"kind": "source", "op": "TensorSliceDataset"}, *stages],
            "options": {},
        },
    }


BAD_PIPELINE = _pipeline(
    {"kind": "map", "op": "MapDataset", "fn": "decode", "ordinal": 1},
    {"kind": "map", "op": "MapDataset", "fn": "augment", "ordinal": 2},
    {"kind": "batch", "op": "BatchDatasetV2", "batch_size": 64},
)
GOOD_PIPELINE = _pipeline(
    {
        "kind": "map",
        "op": "ParallelMapDatasetV2",
        "fn": "decode",
        "ordinal": 1,
        "parallel": True,
        "num_parallel_calls": -1,
    },
    {"kind": "batch", "op": "BatchDatasetV2", "batch_size": 64},
    {"kind": "prefetch", "op": "PrefetchDataset", "buffer_size": -1},
)


def write_run(
    runs_dir: Path,
    run_id: str,
    *,
    minute: int,
    samples_per_s: float,
    windows: int = 6,
    pipeline: dict[str, Any] | None = None,
    baseline: tuple[float, float] | None = None,
    manifest: dict[str, Any] | None = None,
    finish: bool = True,
    cpu: float = 35.0,
) -> Path:
    """A run of ``windows`` 10-s windows at ``samples_per_s``, one epoch per two windows."""
    created = T0 + 60.0 * minute
    writer = RunWriter(
        runs_dir,
        run_id,
        manifest={
            "created": created,
            "strategy": "default",
            "global_batch_size": 64,
            **(manifest or {}),
        },
    )
    if pipeline is not None:
        writer.write(PipelineRecord(t=created + 1, values=pipeline))
    steps = int(samples_per_s * 10 / 64)
    for i in range(windows):
        t = created + 10.0 * (i + 1)
        writer.write(
            WindowRecord(
                t=t,
                epoch=i // 2,
                seconds=10.0,
                steps=steps,
                samples=steps * 64,
                step_begin=i * steps,
                step_end=(i + 1) * steps,
                warmup=i == 0,
                step_count=steps,
                step_time_mean=10.0 / steps,
                step_time_std=0.0,
                step_time_max=10.0 / steps,
            )
        )
        writer.write(HostSample(t=t, cpu_percent=[cpu, cpu + 10.0], iowait=1.0))
        if i % 2 == 1:
            writer.write(
                EpochRecord(
                    t=t,
                    epoch=i // 2,
                    seconds=20.0,
                    train_seconds=20.0,
                    steps=2 * steps,
                    samples=2 * steps * 64,
                )
            )
    if baseline is not None:
        real, cached = baseline
        writer.write(
            BaselineRecord(
                t=created + 10.0 * windows + 1,
                steps=50,
                batch_size=64,
                real_samples_per_s=real,
                cached_samples_per_s=cached,
                mode="end",
                input_kind="tf.data",
            )
        )
    if finish:
        writer.close("finished")
        _fix_times(writer.path, created + 10.0 * windows + 5)
    return writer.path


def _fix_times(path: Path, end: float) -> None:
    """Pin the wall-clock fields the writer stamps itself (start/end records, manifest times)."""
    import json

    manifest = json.loads((path / "run.json").read_text())
    manifest.update(updated=end, ended=end, pid=None, hostname=None)
    (path / "run.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    for file in path.glob("worker-*.jsonl"):
        lines = []
        for line in file.read_text().splitlines():
            record = json.loads(line)
            if record["type"] in ("start", "end"):
                record["t"] = manifest["created"] if record["type"] == "start" else end
                record.pop("pid", None)
                record.pop("hostname", None)
            lines.append(json.dumps(record, separators=(",", ":")))
        file.write_text("\n".join(lines) + "\n")
    for item in (path / "run.json", *path.glob("worker-*.jsonl")):
        os.utime(item, (end, end))


def write_store(runs_dir: Path, *, sweep: bool = True, corrupt: bool = False) -> Path:
    write_run(
        runs_dir,
        "run-input-bound",
        minute=0,
        samples_per_s=118.0,
        pipeline=BAD_PIPELINE,
        baseline=(118.0, 629.0),
        manifest={"name": "input-bound"},
    )
    write_run(
        runs_dir,
        "run-healthy",
        minute=5,
        samples_per_s=610.0,
        pipeline=GOOD_PIPELINE,
        baseline=(610.0, 629.0),
        manifest={"name": "healthy"},
    )
    write_run(
        runs_dir,
        "run-priced",
        minute=10,
        samples_per_s=400.0,
        pipeline=GOOD_PIPELINE,
        manifest={
            "name": "priced",
            "instance_type": "g5.xlarge",
            "price_per_hour": 1.006,
            "tags": {"team": "vision"},
        },
    )
    if sweep:
        from scaling_fixtures import write_sweep_runs

        write_sweep_runs(runs_dir)
        for i, path in enumerate(
            sorted(p for p in runs_dir.iterdir() if p.name.startswith("sweep-fixture-"))
        ):
            _pin_sweep_run(path, T0 + 60.0 * (20 + i))
    if corrupt:
        path = write_run(runs_dir, "run-corrupt", minute=15, samples_per_s=200.0)
        manifest = (path / "run.json").read_text()
        (path / "run.json").write_text(manifest[: len(manifest) // 2])  # a manifest cut short
        os.utime(path / "run.json", (T0 + 60.0 * 15 + 65, T0 + 60.0 * 15 + 65))
    return runs_dir


def _pin_sweep_run(path: Path, created: float) -> None:
    """Shift a sweep fixture run (written at the real time) to a fixed creation time."""
    import json

    manifest = json.loads((path / "run.json").read_text())
    shift = created - manifest["created"]
    manifest["created"] = created
    for key in ("updated", "ended"):
        if manifest.get(key) is not None:
            manifest[key] += shift
    manifest.update(pid=None, hostname=None)
    (path / "run.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    for file in path.glob("worker-*.jsonl"):
        lines = []
        for line in file.read_text().splitlines():
            record = json.loads(line)
            record["t"] += shift
            record.pop("pid", None)
            record.pop("hostname", None)
            lines.append(json.dumps(record, separators=(",", ":")))
        file.write_text("\n".join(lines) + "\n")
    for item in (path / "run.json", *path.glob("worker-*.jsonl")):
        os.utime(item, (created + 100, created + 100))
