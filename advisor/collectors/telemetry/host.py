"""Host sampling with psutil: per-core CPU, iowait, memory, disk and network rates, the process.

Rates and percentages come from deltas of the kernel's counters between two samples, computed
here rather than with ``psutil.cpu_percent()``, whose module-wide state the training script may
also use. The first call only primes the counters.
"""

from __future__ import annotations

import os
from typing import Any

from advisor.store.schema import HostSample


def _busy_and_total(times: Any) -> tuple[float, float]:
    """(busy, total) CPU seconds of one cputimes tuple, as psutil and htop count them on Linux."""
    total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
    busy = total - times.idle - getattr(times, "iowait", 0.0)
    return busy, total


class HostSampler:
    """Turns counter deltas into one :class:`HostSample` per call (after the first)."""

    def __init__(self, psutil_module: Any = None, pid: int | None = None) -> None:
        if psutil_module is None:
            import psutil as psutil_module  # type: ignore[no-redef]
        self._ps = psutil_module
        self._proc = psutil_module.Process(pid if pid is not None else os.getpid())
        self._prev: dict[str, Any] | None = None
        self.disabled: set[str] = set()

    def _read(self) -> dict[str, Any]:
        ps = self._ps
        state: dict[str, Any] = {"cores": ps.cpu_times(percpu=True), "all": ps.cpu_times()}
        for name, fn in (("disk", ps.disk_io_counters), ("net", ps.net_io_counters)):
            if name in self.disabled:
                continue
            try:
                state[name] = fn()
            except Exception:  # containers without /proc/diskstats and the like
                self.disabled.add(name)
        try:
            state["proc"] = self._proc.cpu_times()
        except Exception:
            self.disabled.add("proc")
        return state

    def sample(self, now: float, wall: float) -> HostSample | None:
        """``now``: wall-clock time for the record; ``wall``: a monotonic clock for the rates."""
        state = self._read()
        state["wall"] = wall
        prev, self._prev = self._prev, state
        if prev is None:
            return None
        dt = wall - prev["wall"]
        if dt <= 0:
            return None
        values: dict[str, Any] = {}
        cores: list[float] = []
        for before, after in zip(prev["cores"], state["cores"]):
            b0, t0 = _busy_and_total(before)
            b1, t1 = _busy_and_total(after)
            cores.append(_percent(b1 - b0, t1 - t0))
        values["cpu_percent"] = cores
        before, after = prev["all"], state["all"]
        if hasattr(after, "iowait"):
            total = _busy_and_total(after)[1] - _busy_and_total(before)[1]
            values["iowait"] = _percent(after.iowait - before.iowait, total)
        if hasattr(after, "steal"):  # Linux: a VM's time taken by the hypervisor for others
            total = _busy_and_total(after)[1] - _busy_and_total(before)[1]
            values["steal"] = _percent(after.steal - before.steal, total)
        try:
            vm = self._ps.virtual_memory()
            values["mem_total"] = int(vm.total)
            values["mem_used"] = int(vm.total - vm.available)
        except Exception:
            pass
        d0, d1 = prev.get("disk"), state.get("disk")
        if d0 is not None and d1 is not None:
            values["disk_read_bps"] = max(0.0, (d1.read_bytes - d0.read_bytes) / dt)
            values["disk_write_bps"] = max(0.0, (d1.write_bytes - d0.write_bytes) / dt)
        n0, n1 = prev.get("net"), state.get("net")
        if n0 is not None and n1 is not None:
            values["net_rx_bps"] = max(0.0, (n1.bytes_recv - n0.bytes_recv) / dt)
            values["net_tx_bps"] = max(0.0, (n1.bytes_sent - n0.bytes_sent) / dt)
        p0, p1 = prev.get("proc"), state.get("proc")
        if p0 is not None and p1 is not None:
            used = (p1.user - p0.user) + (p1.system - p0.system)
            values["proc_cpu_percent"] = max(0.0, 100.0 * used / dt)
        if "proc" not in self.disabled:
            try:
                values["proc_rss"] = int(self._proc.memory_info().rss)
            except Exception:
                self.disabled.add("proc")
        return HostSample(t=now, **values)


def _percent(part: float, whole: float) -> float:
    if whole <= 0:
        return 0.0
    return max(0.0, min(100.0, 100.0 * part / whole))
