"""A thin, failure-tolerant wrapper over NVML (``pynvml`` from ``nvidia-ml-py``).

It reads, per GPU: utilization, memory, power, the total-energy counter, temperature, SM clock,
clock-event (throttle) reasons and PCIe throughput, and turns them into :class:`GpuSample`
records. Missing pieces never raise:

* no NVML (no driver, no package, no GPU): :meth:`NvmlMonitor.open` returns False and ``reason``
  says why; the caller records that as "no GPU data", quietly;
* a field the GPU does not support: that field is dropped for that GPU and one note says so;
* a GPU lost mid-run: one note, that GPU is no longer read, the others go on.

Which GPUs this worker uses: ``CUDA_VISIBLE_DEVICES`` (indices or UUIDs) narrowed, for one process
per GPU, by the launcher's local rank (:func:`worker_device_indices`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.store.schema import GpuSample

# NVML error codes (stable across NVML versions).
_NOT_SUPPORTED = 3
_NO_PERMISSION = 4
_FUNCTION_NOT_FOUND = 13
_GPU_IS_LOST = 15
_UNINITIALIZED = 1
_DRIVER_NOT_LOADED = 9
_UNSUPPORTED_CODES = {_NOT_SUPPORTED, _NO_PERMISSION, _FUNCTION_NOT_FOUND}
_LOST_CODES = {_GPU_IS_LOST, _UNINITIALIZED, _DRIVER_NOT_LOADED}

LOCAL_RANK_VARS = (
    "LOCAL_RANK",
    "HOROVOD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "SLURM_LOCALID",
    "MPI_LOCALRANKID",
)
LOCAL_SIZE_VARS = (
    "LOCAL_WORLD_SIZE",
    "HOROVOD_LOCAL_SIZE",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "SLURM_NTASKS_PER_NODE",
    "MPI_LOCALNRANKS",
)

# NVML's reference documents nvmlDeviceGetPcieThroughput as counting bytes over a 20 ms interval
# (so a read can wait that long in the driver; not measured: the development VM has no GPU).
PCIE_MIN_PERIOD_S = 1.0  # so at most one PCIe read per second


@dataclass
class GpuDevice:
    index: int  # NVML index (PCI bus order)
    handle: Any
    name: str = ""
    uuid: str | None = None
    mem_total: int | None = None
    lost: bool = False
    unsupported: set[str] = field(default_factory=set)


def _env_int(env: Mapping[str, str], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = env.get(name)
        if value is not None:
            try:
                return int(value.split(",")[0])
            except ValueError:
                continue
    return None


def visible_devices(
    count: int, uuids: list[str | None], env: Mapping[str, str] | None = None
) -> tuple[list[int], str | None]:
    """NVML indices that ``CUDA_VISIBLE_DEVICES`` lets this process see, and a note when unsure."""
    env = os.environ if env is None else env
    spec = env.get("CUDA_VISIBLE_DEVICES")
    if spec is None:
        return list(range(count)), None
    spec = spec.strip()
    if spec in ("", "-1", "none", "NoDevFiles"):
        return [], "CUDA_VISIBLE_DEVICES hides every GPU from this process"
    out: list[int] = []
    for item in (s.strip() for s in spec.split(",")):
        if item.isdigit():
            if int(item) >= count:
                break  # CUDA stops at the first invalid entry
            out.append(int(item))
        elif item.startswith("GPU-"):
            match = [i for i, u in enumerate(uuids) if u and u.startswith(item)]
            if not match:
                break
            out.append(match[0])
        else:  # MIG instances and other forms: cannot map to a whole GPU here
            return list(
                range(count)
            ), f"CUDA_VISIBLE_DEVICES={spec!r} not understood; sampling every GPU"
    return out, None


def worker_device_indices(
    visible: list[int], num_workers: int, env: Mapping[str, str] | None = None
) -> list[int]:
    """The GPUs this worker most likely trains on.

    One process per GPU (Horovod, torchrun, several TF workers on one host) usually leaves every GPU
    visible and picks ``gpus[local_rank]`` in process; a single process (MirroredStrategy) uses all.
    """
    env = os.environ if env is None else env
    local_rank = _env_int(env, LOCAL_RANK_VARS)
    local_size = _env_int(env, LOCAL_SIZE_VARS)
    if local_rank is None or len(visible) <= 1:
        return list(visible)
    if (local_size or num_workers) > 1 and local_rank < len(visible):
        return [visible[local_rank]]
    return list(visible)


def _error_code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


class NvmlMonitor:
    """Reads NVML for a set of GPUs. Not thread-safe: one sampler thread uses it."""

    def __init__(
        self,
        nvml: Any = None,
        env: Mapping[str, str] | None = None,
        num_workers: int = 1,
        devices: str = "mine",
    ) -> None:
        self._nvml = nvml
        self._env = env
        self._num_workers = num_workers
        self._which = devices  # "mine" | "all"
        self.devices: list[GpuDevice] = []
        self.available = False
        self.reason: str | None = None
        self.driver: str | None = None
        self.device_note: str | None = None
        self.total_count = 0
        self._last_pcie: dict[int, float] = {}

    # -- setup ---------------------------------------------------------------------------------
    def open(self) -> bool:
        """Initialise NVML and pick the devices; False (and ``reason``) without GPU data."""
        nvml = self._nvml
        if nvml is None:
            try:
                import pynvml as nvml  # type: ignore[no-redef]
            except Exception as exc:  # package missing or broken
                self.reason = f"pynvml not importable ({type(exc).__name__})"
                return False
            self._nvml = nvml
        try:
            nvml.nvmlInit()
        except Exception as exc:
            self.reason = (
                f"NVML unavailable: {exc}"
                if str(exc)
                else f"NVML unavailable ({type(exc).__name__})"
            )
            return False
        try:
            self.total_count = int(nvml.nvmlDeviceGetCount())
            handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(self.total_count)]
        except Exception as exc:
            self.reason = f"NVML could not list GPUs: {exc}"
            self._shutdown()
            return False
        if self.total_count == 0:
            self.reason = "NVML found no GPU"
            self._shutdown()
            return False
        self.driver = _text(self._try(nvml.nvmlSystemGetDriverVersion))
        uuids = [_text(self._try(nvml.nvmlDeviceGetUUID, h)) for h in handles]
        visible, note = visible_devices(self.total_count, uuids, self._env)
        chosen = (
            visible
            if self._which == "all"
            else worker_device_indices(visible, self._num_workers, self._env)
        )
        self.device_note = note
        if not chosen:
            self.reason = note or "no GPU is visible to this process"
            self._shutdown()
            return False
        for i in chosen:
            h = handles[i]
            mem = self._try(nvml.nvmlDeviceGetMemoryInfo, h)
            self.devices.append(
                GpuDevice(
                    index=i,
                    handle=h,
                    name=_text(self._try(nvml.nvmlDeviceGetName, h)) or "",
                    uuid=uuids[i],
                    mem_total=int(mem.total) if mem is not None else None,
                )
            )
        self.available = True
        return True

    def info(self) -> list[dict[str, Any]]:
        return [
            {"index": d.index, "name": d.name, "uuid": d.uuid, "mem_total": d.mem_total}
            for d in self.devices
        ]

    def close(self) -> None:
        if self.available:
            self.available = False
            self._shutdown()

    def _shutdown(self) -> None:
        try:
            self._nvml.nvmlShutdown()
        except Exception:
            pass

    @staticmethod
    def _try(fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:
            return None

    # -- sampling ------------------------------------------------------------------------------
    def sample(self, now: float) -> tuple[list[GpuSample], list[tuple[str, str]]]:
        """One sample per live GPU, plus new notes as (level, message) pairs."""
        samples: list[GpuSample] = []
        notes: list[tuple[str, str]] = []
        for dev in self.devices:
            if dev.lost:
                continue
            values: dict[str, Any] = {}
            for name, reader in self._readers(dev, now):
                if name in dev.unsupported:
                    continue
                try:
                    values.update(reader())
                except Exception as exc:
                    note = self._failed(dev, name, exc)
                    if note:
                        notes.append(note)
                    if dev.lost:
                        break
            if dev.lost:
                continue
            if values:
                samples.append(GpuSample(t=now, index=dev.index, **values))
        return samples, notes

    def _failed(self, dev: GpuDevice, field_name: str, exc: Exception) -> tuple[str, str] | None:
        code = _error_code(exc)
        if code in _LOST_CODES:
            dev.lost = True
            return (
                "warning",
                (
                    f"GPU {dev.index} ({dev.name}) stopped answering NVML ({exc}); "
                    "its samples end here, the other GPUs are still sampled"
                ),
            )
        dev.unsupported.add(field_name)
        if code in _UNSUPPORTED_CODES:
            extra = "; energy comes from power × time instead" if field_name == "energy" else ""
            return (
                "info",
                f"GPU {dev.index} ({dev.name}): {field_name} not available ({exc}){extra}",
            )
        return (
            "warning",
            (
                f"GPU {dev.index} ({dev.name}): reading {field_name} failed "
                f"({type(exc).__name__}: {exc}); it is no longer read"
            ),
        )

    def _readers(
        self, dev: GpuDevice, now: float
    ) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
        nvml, h = self._nvml, dev.handle

        def utilization() -> dict[str, Any]:
            u = nvml.nvmlDeviceGetUtilizationRates(h)
            return {"util": float(u.gpu), "mem_util": float(u.memory)}

        def memory() -> dict[str, Any]:
            m = nvml.nvmlDeviceGetMemoryInfo(h)
            return {"mem_used": int(m.used), "mem_total": int(m.total)}

        def power() -> dict[str, Any]:
            return {"power_w": nvml.nvmlDeviceGetPowerUsage(h) / 1000.0}  # milliwatts

        def energy() -> dict[str, Any]:
            return {"energy_j": nvml.nvmlDeviceGetTotalEnergyConsumption(h) / 1000.0}  # millijoules

        def temperature() -> dict[str, Any]:
            return {"temp_c": float(nvml.nvmlDeviceGetTemperature(h, 0))}  # NVML_TEMPERATURE_GPU

        def sm_clock() -> dict[str, Any]:
            return {"sm_clock_mhz": float(nvml.nvmlDeviceGetClockInfo(h, 1))}  # NVML_CLOCK_SM

        def throttle() -> dict[str, Any]:
            fn = (
                getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
            )
            return {"throttle": int(fn(h))}

        def pcie() -> dict[str, Any]:
            # Each call counts bytes over NVML's documented 20 ms interval; values are KB/s.
            if now - self._last_pcie.get(dev.index, -1e18) >= PCIE_MIN_PERIOD_S:
                self._last_pcie[dev.index] = now
                tx = nvml.nvmlDeviceGetPcieThroughput(h, 0) * 1024.0  # NVML_PCIE_UTIL_TX_BYTES
                rx = nvml.nvmlDeviceGetPcieThroughput(h, 1) * 1024.0  # NVML_PCIE_UTIL_RX_BYTES
                return {"pcie_tx_bps": tx, "pcie_rx_bps": rx}
            return {}

        def others() -> dict[str, Any]:
            return self._others(h)

        return [
            ("utilization", utilization),
            ("memory", memory),
            ("power", power),
            ("energy", energy),
            ("temperature", temperature),
            ("sm_clock", sm_clock),
            ("throttle", throttle),
            ("pcie", pcie),
            ("other processes", others),
        ]

    def _others(self, handle: Any) -> dict[str, Any]:
        """Other processes holding a compute context on this GPU, and their memory. Nothing when
        NVML does not list this process (a GPU the job does not use, or PIDs of another namespace:
        inside a container NVML may give the host's PIDs, and this process would look like
        another)."""
        fn = getattr(self._nvml, "nvmlDeviceGetComputeRunningProcesses", None)
        if fn is None:
            return {}
        procs = list(fn(handle) or [])
        own = os.getpid()
        if not any(getattr(p, "pid", None) == own for p in procs):
            return {}
        others = [p for p in procs if getattr(p, "pid", None) != own]
        held = [getattr(p, "usedGpuMemory", None) for p in others]
        # NVML gives NVML_VALUE_NOT_AVAILABLE (2**64 - 1) where it cannot tell
        known = [int(m) for m in held if isinstance(m, int) and 0 <= m < 2**63]
        return {
            "others_procs": len(others),
            "others_mem": sum(known) if len(known) == len(held) else None,
        }

    def process_devices(self, pid: int | None = None) -> list[int] | None:
        """NVML indices of the sampled GPUs on which ``pid`` holds a compute context (None:
        unknown).

        Inside containers NVML may report host PIDs; then nothing matches and this says None.
        """
        pid = os.getpid() if pid is None else pid
        fn = getattr(self._nvml, "nvmlDeviceGetComputeRunningProcesses", None)
        if fn is None:
            return None
        found: list[int] = []
        for dev in self.devices:
            if dev.lost:
                continue
            try:
                procs = fn(dev.handle)
            except Exception:
                return None
            if any(getattr(p, "pid", None) == pid for p in procs or []):
                found.append(dev.index)
        return found or None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
