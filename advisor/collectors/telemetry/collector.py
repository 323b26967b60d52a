"""Telemetry: a background thread samples the GPUs (NVML) and the host (psutil) during training.

Options of :class:`~advisor.collectors.callback.AdvisorCallback`:

* ``telemetry=False`` switches it off (it is on by default);
* ``telemetry_interval_seconds`` (default 1.0, at least 0.1): time between samples;
* ``telemetry_devices``: ``"mine"`` (default: the GPUs this worker trains on) or ``"all"``;
* ``mfu``: estimate the model's training FLOPs at train end (default: only when a GPU was found).

Which instance this is (and its price) is found once by the callback at train begin
(:mod:`advisor.probes.instance`; ``instance_metadata=True`` lets it ask the metadata service).

The thread starts at train begin and stops at train end (a last sample is taken then, so energy
covers the whole run). Nothing it does can reach ``fit()``: every failure is caught, recorded once
as an event, and the part that failed is switched off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

from advisor.collectors.collector import Collector
from advisor.collectors.option_spec import Option, at_least, one_of
from advisor.errors import UsageError
from advisor.store.schema import ContextRecord, EventRecord, Record

log = logging.getLogger("advisor")

MIN_INTERVAL_S = 0.1
TELEMETRY_DEVICES = ("mine", "all")
TelemetryDevices = Literal["mine", "all"]
OPTIONS = (
    Option("telemetry", "bool", True, "sample GPU (NVML) and host (psutil) metrics."),
    Option(
        "telemetry_interval_seconds",
        "float",
        1.0,
        "seconds between telemetry samples.",
        at_least(MIN_INTERVAL_S),
        old_names=("telemetry_interval_s",),
        recorded_as="telemetry_interval_s",
    ),
    Option(
        "telemetry_devices",
        "TelemetryDevices",
        "mine",
        '``"mine"`` (this process\'s GPUs) or ``"all"``.',
        one_of(*TELEMETRY_DEVICES),
    ),
    Option("mfu", "bool | None", None, "estimate FLOPs and MFU (None: when a GPU is present)."),
)
PROCESS_GPU_CHECK_AFTER_S = 5.0  # the CUDA context exists by then


class TelemetrySampler:
    """Samples sources on a thread; ``write`` receives records, ``note`` (level, source,
    message)."""

    def __init__(
        self,
        write: Callable[[Record], None],
        interval_s: float = 1.0,
        gpu: Any = None,
        host: Any = None,
        note: Callable[[str, str, str], None] | None = None,
        setup: Callable[[TelemetrySampler], None] | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s < MIN_INTERVAL_S:
            raise UsageError(
                f"telemetry_interval_seconds must be at least {MIN_INTERVAL_S} s (got {interval_s})"
            )
        self.write = write
        self.interval_s = float(interval_s)
        self.gpu = gpu  # NvmlMonitor-like: sample(now) -> (samples, notes); opened by the caller
        self.host = host  # HostSampler-like: sample(now, wall) -> HostSample | None
        self.note = note or (lambda level, source, message: None)
        self.setup = setup  # runs first on the thread (slow set-up such as nvmlInit stays off fit)
        self.clock = clock
        self.monotonic = monotonic
        self.samples = 0
        self.cpu_seconds = 0.0
        self.wall_seconds = 0.0
        self.process_gpus: list[int] | None = None
        self.failed: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="advisor-telemetry", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Ask the thread to take its last sample and end; wait at most ``timeout`` seconds.

        Returns False when the thread is still busy after that (it is a daemon: it cannot keep
        the process alive, and its late records are dropped by the closed writer).
        """
        thread = self._thread
        if thread is None:
            return True
        self._stop.set()
        thread.join(timeout)
        self._thread = None
        return not thread.is_alive()

    def _run(self) -> None:
        try:
            cpu0 = time.thread_time()
            self._t0 = self.monotonic()
            if self.setup is not None:
                try:
                    self.setup(self)
                except Exception as exc:
                    self._fail("setup", exc)
            self.sample_once()
            next_at = self._t0 + self.interval_s
            while not self._stop.wait(max(0.0, next_at - self.monotonic())):
                self.sample_once()
                next_at += self.interval_s
                if next_at < self.monotonic():  # fell behind (suspended, overloaded): skip ahead
                    next_at = self.monotonic() + self.interval_s
            self.sample_once()
            self.cpu_seconds = time.thread_time() - cpu0
            self.wall_seconds = self.monotonic() - self._t0
        except BaseException as exc:  # never let a thread traceback reach the user's console
            self._fail("sampler", exc)

    def sample_once(self) -> None:
        """One round over every source that still works."""
        now, wall = self.clock(), self.monotonic()
        if self.gpu is not None and "gpu" not in self.failed:
            try:
                samples, notes = self.gpu.sample(now)
                for record in samples:
                    self.write(record)
                for level, message in notes:
                    self.note(level, "telemetry", message)
                if self.process_gpus is None and wall - self._t0 >= PROCESS_GPU_CHECK_AFTER_S:
                    self.process_gpus = self.gpu.process_devices() or []
            except Exception as exc:
                self._fail("gpu", exc)
        if self.host is not None and "host" not in self.failed:
            try:
                record = self.host.sample(now, wall)
                if record is not None:
                    self.write(record)
            except Exception as exc:
                self._fail("host", exc)
        self.samples += 1

    def _fail(self, part: str, exc: BaseException) -> None:
        message = (
            f"{part} sampling failed ({type(exc).__name__}: {exc}); "
            "it is switched off, training goes on"
        )
        self.failed[part] = message
        try:
            self.note("warning", "telemetry", message)
        except Exception:
            pass


class TelemetryCollector(Collector):
    """Runs a :class:`TelemetrySampler` from train begin to train end, and records its findings."""

    name = "telemetry"

    def __init__(
        self,
        interval_s: float = 1.0,
        devices: str = "mine",
        mfu: bool | None = None,
        nvml: Any = None,
        psutil_module: Any = None,
    ) -> None:
        super().__init__()
        if interval_s < MIN_INTERVAL_S:
            raise UsageError(
                f"telemetry_interval_seconds must be at least {MIN_INTERVAL_S} s (got {interval_s})"
            )
        if devices not in ("mine", "all"):
            raise UsageError(f"telemetry_devices must be 'mine' or 'all' (got {devices!r})")
        self.interval_s = float(interval_s)
        self.devices = devices
        self.mfu = mfu
        self._nvml = nvml  # a module with pynvml's interface; tests pass fakes here
        self._psutil = psutil_module
        self.sampler: TelemetrySampler | None = None
        self.monitor: Any = None
        self._context: dict[str, Any] = {}

    def on_train_begin(self) -> None:
        self._context = {"telemetry.interval_s": self.interval_s}
        self.sampler = TelemetrySampler(
            self.session.writer.write, self.interval_s, note=self._note, setup=self._setup
        )
        self.sampler.start()

    def _setup(self, sampler: TelemetrySampler) -> None:
        """On the sampler thread: open NVML and psutil, record what was found."""
        from advisor.collectors.telemetry.host import HostSampler
        from advisor.collectors.telemetry.nvml import NvmlMonitor

        monitor = NvmlMonitor(
            nvml=self._nvml, num_workers=self.session.num_workers, devices=self.devices
        )
        self.monitor = monitor
        sampler.gpu = monitor if monitor.open() else None
        values: dict[str, Any] = {
            "telemetry.interval_s": self.interval_s,
            "telemetry.gpu_present": sampler.gpu is not None,
            "telemetry.nvml": "ok"
            if sampler.gpu is not None
            else (monitor.reason or "no GPU data"),
        }
        if sampler.gpu is not None:
            values["telemetry.gpus"] = monitor.info()
            values["telemetry.gpu_total"] = monitor.total_count
            values["telemetry.driver"] = monitor.driver
        if monitor.device_note:
            values["telemetry.device_note"] = monitor.device_note
        try:
            sampler.host = HostSampler(self._psutil)
        except Exception as exc:
            values["telemetry.host_error"] = f"{type(exc).__name__}: {exc}"
        self._context = {k: v for k, v in values.items() if v is not None}
        self.session.writer.write(ContextRecord(t=time.time(), values=self._context))

    def on_train_end(self) -> None:
        sampler, self.sampler = self.sampler, None
        if sampler is None:
            return
        if sampler.stop() and self.monitor is not None:
            self.monitor.close()
        values: dict[str, Any] = {
            "telemetry.samples": sampler.samples,
            "telemetry.sampler_cpu_s": round(sampler.cpu_seconds, 6),
            "telemetry.sampler_wall_s": round(sampler.wall_seconds, 6),
        }
        if sampler.process_gpus:
            values["telemetry.process_gpus"] = sampler.process_gpus
        if self._context.get("telemetry.gpu_present"):
            framework_mem = framework_memory(
                self.session.backend, self._context.get("telemetry.gpus", [])
            )
            if framework_mem:
                values["telemetry.framework_mem"] = framework_mem
        want_flops = (
            self.mfu if self.mfu is not None else bool(self._context.get("telemetry.gpu_present"))
        )
        if want_flops:
            values.update(self._flops())
        self.session.writer.write(ContextRecord(t=time.time(), values=values))

    # -- helpers -------------------------------------------------------------------------------
    def _note(self, level: str, source: str, message: str) -> None:
        record = EventRecord(t=time.time(), level=level, source=source, message=message)  # type: ignore[arg-type]
        self.session.writer.write(record)

    def _flops(self) -> dict[str, Any]:
        from advisor.probes.flops import estimate_flops_per_sample

        try:
            estimate = estimate_flops_per_sample(
                self.session.model, self.session.data, backend=self.session.backend
            )
        except Exception as exc:
            return {"model.flops_error": f"{type(exc).__name__}: {exc}"[:300]}
        if estimate is None:
            return {}
        return {
            "model.flops_per_sample": estimate.flops_per_sample,
            "model.flops_method": estimate.method,
        }


def framework_memory(backend: str | None, gpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Peak bytes the framework's allocator handed to tensors, per GPU (not what it reserved).

    NVML only sees what the process reserved: TensorFlow and JAX reserve most of the GPU up front,
    so NVML's memory says little about room for a larger batch. Never imports a framework.
    """
    import sys

    total = max((int(g.get("mem_total") or 0) for g in gpus), default=0) or None
    out: list[dict[str, Any]] = []
    try:
        if backend == "tensorflow" and "tensorflow" in sys.modules:
            tf = sys.modules["tensorflow"]
            for dev in tf.config.list_logical_devices("GPU"):
                stats = tf.config.experimental.get_memory_info(dev.name.replace("/device:", ""))
                out.append({"device": dev.name, "peak": int(stats["peak"]), "total": total})
        elif backend == "jax" and "jax" in sys.modules:
            for dev in sys.modules["jax"].local_devices():
                stats = dev.memory_stats() if dev.platform == "gpu" else None
                if stats and "peak_bytes_in_use" in stats:
                    out.append(
                        {
                            "device": str(dev),
                            "peak": int(stats["peak_bytes_in_use"]),
                            "total": total,
                        }
                    )
        elif backend == "torch" and "torch" in sys.modules:
            torch = sys.modules["torch"]
            if torch.cuda.is_initialized():
                for i in range(torch.cuda.device_count()):
                    out.append(
                        {
                            "device": f"cuda:{i}",
                            "peak": int(torch.cuda.max_memory_allocated(i)),
                            "total": total,
                        }
                    )
    except Exception:
        return []
    return [e for e in out if e["peak"] > 0 and e["total"]]
