"""Live series of a running run: throughput, utilization and memory over time, from records as
they come.

The live view feeds new records in (:meth:`LiveSeries.add`) and draws a :class:`LiveSnapshot`.
Times are seconds since the run was created. Throughput is the chief's (lowest rank's) windows:
under tf.distribute every worker records the global batch, so adding ranks would double count.
Each series keeps its newest ``MAX_POINTS`` points (a chart cannot show more); the counters keep
everything. Memory is the chief's per-epoch peak (its ``memory`` records: one an epoch) and the
memory collector's in-fit leak warning, once it has been given.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from advisor.store.schema import (
    EpochRecord,
    EventRecord,
    GpuSample,
    HostSample,
    MemoryRecord,
    Record,
    WindowRecord,
)

MAX_POINTS = 1000

Series = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class LiveSnapshot:
    """What a live chart shows at one moment (immutable: safe to hand to another thread)."""

    run_id: str
    status: str
    records: int
    epochs: int
    samples: int
    throughput: Series  # (seconds since start, samples/s) per measured window
    gpu_util: dict[int, Series] = field(default_factory=dict)  # per GPU index, percent
    cpu_util: Series = ()  # mean over cores, percent
    last_record_t: float | None = None
    warmup_windows: int = 0
    memory_mb: tuple[float, ...] = ()  # the training process's peak of each epoch, MB
    memory_warning: str | None = None  # the memory collector's leak warning, when given

    @property
    def final(self) -> bool:
        return self.status != "running"

    @property
    def samples_per_s(self) -> float | None:
        """The latest measured window's throughput."""
        return self.throughput[-1][1] if self.throughput else None

    @property
    def mean_samples_per_s(self) -> float | None:
        values = [v for _, v in self.throughput]
        return sum(values) / len(values) if values else None


class LiveSeries:
    """Accumulates records into the series of a :class:`LiveSnapshot`."""

    def __init__(self, run_id: str, created: float, max_points: int = MAX_POINTS) -> None:
        self.run_id = run_id
        self.created = created
        self.records = 0
        self.epochs = 0
        self.samples = 0
        self.warmup_windows = 0
        self.last_record_t: float | None = None
        self._chief: int | None = None
        self._throughput: deque[tuple[float, float]] = deque(maxlen=max_points)
        self._gpu: dict[int, deque[tuple[float, float]]] = {}
        self._cpu: deque[tuple[float, float]] = deque(maxlen=max_points)
        self._memory: deque[float] = deque(maxlen=max_points)
        self.memory_warning: str | None = None
        self._max = max_points

    def add(self, records: list[tuple[int, Record]]) -> None:
        """Take in new ``(rank, record)`` pairs in the order they were read."""
        for rank, record in records:
            self.records += 1
            self.last_record_t = (
                record.t if self.last_record_t is None else max(self.last_record_t, record.t)
            )
            if self._chief is None or rank < self._chief:
                self._chief = rank
            if rank != self._chief:
                continue
            x = record.t - self.created
            if isinstance(record, WindowRecord):
                self._window(x, record)
            elif isinstance(record, EpochRecord):
                self.epochs += 1
            elif isinstance(record, GpuSample) and record.util is not None:
                self._gpu.setdefault(record.index, deque(maxlen=self._max)).append((x, record.util))
            elif isinstance(record, HostSample) and record.cpu_percent:
                self._cpu.append((x, sum(record.cpu_percent) / len(record.cpu_percent)))
            elif isinstance(record, MemoryRecord):
                self._epoch_memory(record)
            elif (
                isinstance(record, EventRecord)
                and record.source == "memory"
                and record.level == "warning"
            ):
                self.memory_warning = record.message

    def _epoch_memory(self, record: MemoryRecord) -> None:
        readings = [v for v in (record.rss_peak, record.rss, record.rss_begin) if v is not None]
        if readings:
            self._memory.append(max(readings) / 2**20)

    def _window(self, x: float, record: WindowRecord) -> None:
        if record.warmup or record.profiled or record.seconds <= 0:
            self.warmup_windows += 1
            return
        if record.samples is not None:
            self.samples += record.samples
            self._throughput.append((x, record.samples / record.seconds))

    def snapshot(self, status: str) -> LiveSnapshot:
        return LiveSnapshot(
            run_id=self.run_id,
            status=status,
            records=self.records,
            epochs=self.epochs,
            samples=self.samples,
            throughput=tuple(self._throughput),
            gpu_util={i: tuple(s) for i, s in sorted(self._gpu.items())},
            cpu_util=tuple(self._cpu),
            last_record_t=self.last_record_t,
            warmup_windows=self.warmup_windows,
            memory_mb=tuple(self._memory),
            memory_warning=self.memory_warning,
        )
