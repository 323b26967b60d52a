"""A FAKE of the ``pynvml`` module (NVML), for tests on machines without an NVIDIA GPU.

It stands exactly at the library boundary: the advisor's NVML wrapper is given this object in
place of the ``pynvml`` module. Errors are the real ``pynvml.NVMLError`` types, so error handling
is tested against what NVML raises. Each device follows a script of per-call values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml

NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
GPU_IS_LOST = pynvml.NVML_ERROR_GPU_IS_LOST


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    util: list[float] = field(
        default_factory=lambda: [50.0]
    )  # cycled, one value per utilization read
    mem_used: list[int] = field(default_factory=lambda: [40 * 2**30])
    mem_total: int = 80 * 2**30
    power_mw: float = 300_000.0
    energy_mj_per_read: float | None = 300_000.0  # counter step per read; None: not supported
    unsupported: set[str] = field(
        default_factory=set
    )  # NVML function names answering NOT_SUPPORTED
    lost_after_reads: int | None = None  # utilization reads before the GPU is lost
    pids: list[int] = field(default_factory=list)
    pid_mem: dict[int, int] = field(default_factory=dict)  # usedGpuMemory by pid (default 0)
    reads: int = 0
    energy_mj: float = 1_000_000.0


class FakeNvml:
    """Quacks like the ``pynvml`` module for the calls the advisor makes."""

    NVMLError = pynvml.NVMLError

    def __init__(self, gpus: list[FakeGpu], init_error: int | None = None) -> None:
        self.gpus = gpus
        self.init_error = init_error
        self.initialised = False
        self.shutdowns = 0

    def _check(self, gpu: FakeGpu, fn: str) -> None:
        if gpu.lost_after_reads is not None and gpu.reads > gpu.lost_after_reads:
            raise pynvml.NVMLError(GPU_IS_LOST)
        if fn in gpu.unsupported:
            raise pynvml.NVMLError(NOT_SUPPORTED)

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return "999.99"

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> FakeGpu:
        return self.gpus[i]

    def nvmlDeviceGetUUID(self, h: FakeGpu) -> str:
        return h.uuid

    def nvmlDeviceGetName(self, h: FakeGpu) -> str:
        return h.name

    def nvmlDeviceGetMemoryInfo(self, h: FakeGpu) -> Any:
        self._check(h, "nvmlDeviceGetMemoryInfo")
        used = h.mem_used[min(max(h.reads - 1, 0), len(h.mem_used) - 1)]
        return SimpleNamespace(total=h.mem_total, used=used, free=h.mem_total - used)

    def nvmlDeviceGetUtilizationRates(self, h: FakeGpu) -> Any:
        h.reads += 1
        self._check(h, "nvmlDeviceGetUtilizationRates")
        return SimpleNamespace(gpu=h.util[(h.reads - 1) % len(h.util)], memory=10)

    def nvmlDeviceGetPowerUsage(self, h: FakeGpu) -> float:
        self._check(h, "nvmlDeviceGetPowerUsage")
        return h.power_mw

    def nvmlDeviceGetTotalEnergyConsumption(self, h: FakeGpu) -> float:
        self._check(h, "nvmlDeviceGetTotalEnergyConsumption")
        if h.energy_mj_per_read is None:
            raise pynvml.NVMLError(NOT_SUPPORTED)
        h.energy_mj += h.energy_mj_per_read
        return h.energy_mj

    def nvmlDeviceGetTemperature(self, h: FakeGpu, sensor: int) -> int:
        self._check(h, "nvmlDeviceGetTemperature")
        return 60

    def nvmlDeviceGetClockInfo(self, h: FakeGpu, kind: int) -> int:
        self._check(h, "nvmlDeviceGetClockInfo")
        return 1755

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: FakeGpu) -> int:
        self._check(h, "nvmlDeviceGetCurrentClocksEventReasons")
        return 0x4 if h.reads % 2 else 0x0  # SW power cap every other read

    def nvmlDeviceGetPcieThroughput(self, h: FakeGpu, counter: int) -> int:
        self._check(h, "nvmlDeviceGetPcieThroughput")
        return 1000 if counter == 0 else 2000  # KB/s

    def nvmlDeviceGetComputeRunningProcesses(self, h: FakeGpu) -> list[Any]:
        return [SimpleNamespace(pid=p, usedGpuMemory=h.pid_mem.get(p, 0)) for p in h.pids]
