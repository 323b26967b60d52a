"""One sweep point per run: what the scaling table needs from a run directory.

A point is measured from the run's own records (epoch times, windows) and its base facts (the
areas derived before scaling: telemetry, traces, prices). Two subtleties are settled here once:

- Under tf.distribute multi-worker strategies every worker feeds (and counts) the *global* batch,
  so the job's samples are one worker's; under JAX multi-process and Horovod each process feeds
  its own share, so the job's samples are the sum over workers.
- The first epoch carries tracing, compilation and collective set-up; with two epochs or more the
  epoch time is the mean of the others, and the first is reported apart.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from advisor.numbers import strategy_label  # the one name of each strategy, in every view

if TYPE_CHECKING:
    from advisor.store.reader import Run
    from advisor.store.sweep import SweepRecord

# tf.distribute strategies whose workers each see the global batch (tf_keras reports the V1 name).
GLOBAL_BATCH_MULTIWORKER = (
    "MultiWorkerMirroredStrategy",
    "CollectiveAllReduceStrategy",
    "ParameterServerStrategy",
    "ParameterServerStrategyV2",
)


@dataclass
class Point:
    """The measurements of one run, as one point of a sweep."""

    run_id: str
    strategy: str
    workers: int
    status: str
    sweep_id: str | None = None
    repeat: int | None = None
    ranks: int = 1
    hosts: int = 1
    epochs: int = 0
    epoch_s: float | None = None
    first_epoch_s: float | None = None
    samples_per_s: float | None = None
    step_s: float | None = None
    global_batch: float | None = None
    per_replica_batch: float | None = None
    replicas: int | None = None
    price_per_hour: float | None = None  # per instance
    instance_type: str | None = None
    gpu_present: bool | None = None
    gpu_count: int | None = None
    gpu_util: float | None = None
    energy_wh: float | None = None
    energy_j_per_sample: float | None = None
    compute_percent: float | None = None
    compute_includes_communication: bool = (
        False  # a host (CPU) compute share counts collectives too
    )
    communication_percent: float | None = None
    communication_overlap: float | None = None
    val_fraction: float | None = None
    step_time_spread: float | None = None
    # The worker the others wait for (``analysis.stragglers``): the candidate, judged by D651.
    straggler_rank: int | None = None
    straggler_host: str | None = None
    straggler_wait_s: float | None = None  # per step
    straggler_share: float | None = None  # of the step time
    straggler_s_per_epoch: float | None = None
    straggler_consistent: bool | None = None  # the same rank in every epoch
    goodput: float | None = None  # share of the fit's wall clock in training steps (the budget)
    speed_of_light: float | None = None  # the chief's speed_of_light.fraction
    # Memory peaks over the fit (MemoryRecord), the largest over the run's processes.
    host_peak_bytes: int | None = None  # resident memory (RSS) of one training process
    device_peak_bytes: int | None = (
        None  # one device's allocator peak, where the backend reports it
    )
    memory_peak_fraction: float | None = None  # the chief's peak ÷ its limit (memory.peak_fraction)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def label_of(run: Run, sweep: SweepRecord | None = None) -> tuple[str, int, int | None]:
    """(strategy, workers, repeat) of a run: the sweep file's, else the tags, else the
    manifest's."""
    m = run.manifest
    if sweep is not None:
        cfg = sweep.config(m.run_id)
        if cfg is not None:
            return cfg.strategy, cfg.workers, cfg.repeat
    tags = m.tags or {}
    if "scale.strategy" in tags and "scale.workers" in tags:
        try:
            return tags["scale.strategy"], int(tags["scale.workers"]), None
        except ValueError:
            pass
    return strategy_label(m.strategy), int(m.replicas or m.num_workers or 1), None


def point_of(run: Run, sweep: SweepRecord | None, facts: dict[str, Any]) -> Point:
    """The point of one run, from its records and its base facts (``FactRegistry.derive_base``)."""
    from advisor.store.schema import EpochRecord, StartRecord

    strategy, workers, repeat = label_of(run, sweep)
    m = run.manifest
    p = Point(
        run_id=m.run_id,
        strategy=strategy,
        workers=workers,
        status=run.status,
        sweep_id=m.sweep_id,
        repeat=repeat,
        ranks=max(1, len(run.ranks)),
        price_per_hour=m.price_per_hour,
        instance_type=m.instance_type,
        replicas=m.replicas,
    )
    p.hosts = max(1, len({s.hostname for s in run.of_type(StartRecord) if s.hostname}))
    chief = run.ranks[0] if run.ranks else 0
    epochs = [e.seconds for e in run.of_type(EpochRecord, rank=chief)]
    p.epochs = len(epochs)
    if epochs:
        p.first_epoch_s = epochs[0]
        steady = epochs[1:] if len(epochs) >= 2 else epochs
        p.epoch_s = statistics.fmean(steady)
    _throughput(run, p)
    p.gpu_present = facts.get("gpu.present")
    p.gpu_count = facts.get("gpu.count")
    p.gpu_util = facts.get("gpu.util.mean")
    p.energy_wh = facts.get("energy.wh")
    p.energy_j_per_sample = facts.get("energy.j_per_sample")
    p.communication_percent = facts.get("trace.communication_percent")
    p.communication_overlap = facts.get("trace.communication_overlap")
    compute = facts.get("trace.device_compute_percent")
    if compute is None and not p.gpu_present:
        # On CPU, XProf's host compute is the time of all ops, the collectives among them.
        compute = facts.get("trace.host_compute_percent")
        p.compute_includes_communication = compute is not None
    p.compute_percent = compute
    p.val_fraction = facts.get("time.val_fraction")
    p.goodput = facts.get("goodput")
    p.speed_of_light = facts.get("speed_of_light.fraction")
    p.step_time_spread = step_time_spread(run)
    _straggler(run, p)
    _memory(run, p)
    p.memory_peak_fraction = facts.get("memory.peak_fraction")
    return p


def _memory(run: Run, p: Point) -> None:
    """The largest host RSS peak and device allocator peak over every rank's memory records."""
    from advisor.store.schema import MemoryRecord

    host: list[int] = []
    device: list[int] = []
    for r in run.of_type(MemoryRecord):
        host += [int(v) for v in (r.rss_peak, r.rss, r.rss_begin) if v is not None]
        device += [int(d["peak"]) for d in r.devices if isinstance(d.get("peak"), (int, float))]
    p.host_peak_bytes = max(host) if host else None
    p.device_peak_bytes = max(device) if device else None


def _straggler(run: Run, p: Point) -> None:
    from advisor.analysis.stragglers import straggler_of

    found = straggler_of(run)
    if found is not None:
        p.straggler_rank, p.straggler_host = found.rank, found.host
        p.straggler_wait_s, p.straggler_share = found.wait_s, found.share
        p.straggler_s_per_epoch, p.straggler_consistent = found.seconds_per_epoch, found.consistent


def counts_global_batch(run: Run) -> bool:
    """Every worker of this run counted the global batch (tf.distribute multi-worker)."""
    return len(run.ranks) > 1 and (run.manifest.strategy or "") in GLOBAL_BATCH_MULTIWORKER


def _throughput(run: Run, p: Point) -> None:
    """Job samples/s over the measured (post-warm-up) windows, global batch and step time."""
    from advisor.store.schema import WindowRecord

    per_rank = {}
    for rank in run.ranks:
        mine = [
            w
            for w in run.of_type(WindowRecord, rank=rank)
            if not w.warmup and w.seconds > 0 and w.samples is not None
        ]
        if mine:
            per_rank[rank] = (
                sum(w.samples or 0 for w in mine),
                sum(w.seconds for w in mine),
                sum(w.steps for w in mine),
            )
    if not per_rank:
        return
    chief = per_rank[min(per_rank)]
    if counts_global_batch(run):
        samples, seconds = chief[0], chief[1]
    else:
        samples = sum(v[0] for v in per_rank.values())
        seconds = max(v[1] for v in per_rank.values())
    if seconds > 0:
        p.samples_per_s = samples / seconds
    if chief[2] > 0:
        p.step_s = chief[1] / chief[2]
        p.global_batch = samples / chief[2]
        replicas = p.replicas or p.workers
        if replicas:
            p.per_replica_batch = p.global_batch / replicas


def step_time_spread(run: Run) -> float | None:
    """(slowest − fastest) ÷ fastest of the workers' mean step times; None for one worker."""
    from advisor.store.schema import WindowRecord

    means = []
    for rank in run.ranks:
        windows = [
            w
            for w in run.of_type(WindowRecord, rank=rank)
            if not w.warmup and w.step_count and w.step_time_mean is not None
        ]
        count = sum(w.step_count or 0 for w in windows)
        if count:
            means.append(
                sum((w.step_time_mean or 0.0) * (w.step_count or 0) for w in windows) / count
            )
    if len(means) < 2 or min(means) <= 0:
        return None
    return (max(means) - min(means)) / min(means)


def instances_for(p: Point, gpus_per_instance: int | None = None) -> tuple[int, int | None]:
    """(instances paid for, accelerators per instance) of a point.

    Distinct hosts that wrote records, or — when accelerators per instance are known (argument or
    price table) and the job used accelerators — ⌈N ÷ accelerators per instance⌉ if that is more.
    """
    from advisor.reference.prices import lookup

    per = gpus_per_instance
    if per is None:
        row = lookup(p.instance_type)
        per = row.gpus if row is not None and row.gpus else None
    if per and (gpus_per_instance is not None or p.gpu_present or p.gpu_present is None):
        return max(p.hosts, math.ceil(p.workers / per)), per
    return p.hosts, per
