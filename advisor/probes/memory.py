"""Reading memory at an epoch boundary: the process's resident set and its peak, its children,
the memory it can still take, and each backend's device allocator counters.

Every reader returns None (or nothing) where the platform or the backend has no such counter;
none imports a framework (a backend is read only when the training script already imported it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

CLEAR_REFS = "/proc/self/clear_refs"
STATUS = "/proc/self/status"
CGROUP_FILES = (  # (limit, usage): cgroup v2, then v1
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    (
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
        "/sys/fs/cgroup/memory/memory.usage_in_bytes",
    ),
)
NO_LIMIT = 1 << 60  # cgroup v1 writes a huge number for "no limit"


class HostMemory:
    """The training process's memory through psutil; the peak through Linux's ``VmHWM``, reset
    at every epoch's begin (``clear_refs``, value 5: the high-water mark only)."""

    def __init__(self, psutil_module: Any = None, pid: int | None = None) -> None:
        if psutil_module is None:
            import psutil as psutil_module  # type: ignore[no-redef]
        self._ps = psutil_module
        self._proc = psutil_module.Process(pid if pid is not None else os.getpid())
        self.own = pid is None or pid == os.getpid()
        self.peak_resets = self.own and os.path.exists(CLEAR_REFS)

    def rss(self) -> int:
        return int(self._proc.memory_info().rss)

    def reset_peak(self) -> None:
        """Start a new high-water mark (switched off for good where the kernel refuses)."""
        if not self.peak_resets:
            return
        try:
            with open(CLEAR_REFS, "w") as f:
                f.write("5")
        except OSError:
            self.peak_resets = False

    def release_free(self) -> None:
        """Give the C heap's free memory back to the system (glibc's ``malloc_trim``), so that a
        peak read after it counts new allocations rather than reused free memory."""
        try:
            import ctypes

            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass

    def peak(self) -> int | None:
        """The high-water mark since the last reset (None where it cannot be reset)."""
        if not self.peak_resets:
            return None
        try:
            for line in Path(STATUS).read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return None

    def children_rss(self) -> int | None:
        """Resident memory of the process's children (input workers), None without any."""
        try:
            children = self._proc.children(recursive=True)
        except Exception:
            return None
        total = 0
        for child in children:
            try:
                total += int(child.memory_info().rss)
            except Exception:
                continue
        return total if children else None

    def available(self) -> int | None:
        """What the process tree can still take: the host's available memory, or less under a
        cgroup limit (a container's)."""
        try:
            host = int(self._ps.virtual_memory().available)
        except Exception:
            return None
        room = cgroup_room()
        return min(host, room) if room is not None else host


def cgroup_room() -> int | None:
    """Bytes left under this process's cgroup memory limit, None without a limit."""
    for limit_file, usage_file in CGROUP_FILES:
        try:
            limit_text = Path(limit_file).read_text().strip()
            if limit_text == "max":
                return None
            limit, usage = int(limit_text), int(Path(usage_file).read_text().strip())
        except (OSError, ValueError):
            continue
        return None if limit >= NO_LIMIT else max(0, limit - usage)
    return None


def device_memory(backend: str | None, reset: bool = True) -> list[dict[str, Any]]:
    """Per device: the allocator's peak since the last reset, what it holds now, and the device's
    total where the backend tells it (bytes). TensorFlow and torch reset their peak (``reset``);
    JAX's peak cannot be reset (it is the process's). Empty on a CPU-only run."""
    try:
        if backend == "tensorflow" and "tensorflow" in sys.modules:
            return _tensorflow(sys.modules["tensorflow"], reset)
        if backend == "jax" and "jax" in sys.modules:
            return _jax(sys.modules["jax"])
        if backend == "torch" and "torch" in sys.modules:
            return _torch(sys.modules["torch"], reset)
    except Exception:
        return []
    return []


def _tensorflow(tf: Any, reset: bool) -> list[dict[str, Any]]:
    out = []
    for dev in tf.config.list_logical_devices("GPU"):
        name = dev.name.replace("/device:", "")
        stats = tf.config.experimental.get_memory_info(name)
        out.append(
            {"device": dev.name, "peak": int(stats["peak"]), "in_use": int(stats["current"])}
        )
        if reset:
            tf.config.experimental.reset_memory_stats(name)
    return out


def _jax(jax: Any) -> list[dict[str, Any]]:
    out = []
    for dev in jax.local_devices():
        stats = dev.memory_stats() if dev.platform == "gpu" else None
        if not stats or "bytes_in_use" not in stats:
            continue
        out.append(
            {
                "device": str(dev),
                "peak": int(stats.get("peak_bytes_in_use", stats["bytes_in_use"])),
                "in_use": int(stats["bytes_in_use"]),
                "total": int(stats["bytes_limit"]) if stats.get("bytes_limit") else None,
            }
        )
    return out


def _torch(torch: Any, reset: bool) -> list[dict[str, Any]]:
    if not torch.cuda.is_initialized():
        return []
    out = []
    for i in range(torch.cuda.device_count()):
        out.append(
            {
                "device": f"cuda:{i}",
                "peak": int(torch.cuda.max_memory_allocated(i)),
                "in_use": int(torch.cuda.memory_allocated(i)),
                "total": int(torch.cuda.get_device_properties(i).total_memory),
            }
        )
        if reset:
            torch.cuda.reset_peak_memory_stats(i)
    return out
