"""The speed of light of this device: what it sustains (``probes/speed_of_light.py``) and the
model's FLOPs per sample, recorded at train end so that the facts can say how far the fit ran
below what the hardware computes (docs/speed-of-light.md).

When: at train end, after the baseline and the what-if (this collector comes after them), so the
microbenchmark never shares the cores with a step that is being measured. Cost: the first fit on
a host measures for at most ``MAX_SECONDS``; later fits read the figure from the store's cache
(``<runs_dir>/.speed-of-light.json``), keyed by host, device, backend and its version, Keras's
version and the method's version, and measured again when any of them changes. Any error is
recorded as ``speed_of_light.error`` and the run goes on without it.

A custom loop (``advisor.track``) has no Keras model here: it attaches this collector with its
own count (``loop_flops``, from ``advisor.track(model=..., sample=...)`` or
``flops_per_sample=``), which runs at the loop's end in the same place.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.option_spec import Option, keep
from advisor.store.schema import ContextRecord

log = logging.getLogger("advisor")
CACHE_FILE = ".speed-of-light.json"
CACHE_MAX_BYTES = 256 * 1024
CACHE_MAX_ENTRIES = 64
MAX_SECONDS = 0.8  # the microbenchmark's time, all dtypes and the bandwidth together
# The first fits on a host measure again and keep each ceiling's best: one measurement taken while
# other work loaded the machine read 1.2 GFLOP/s where the device sustains ~100, and a cached
# figure that low would be held against every later run. From this many on, the cache is read.
MEASUREMENTS = 3
# A custom loop's FLOP count: (the ``model.flops_*`` values, the compute dtype or None).
LoopFlops = Callable[[], tuple[dict[str, Any], str | None]]

OPTIONS = (
    Option(
        "speed_of_light",
        "bool",
        True,
        "at train end, measure what this device sustains (matmul FLOP/s per dtype, memory "
        "bandwidth; under a second, cached per host, device and framework in the store) and the "
        "model's FLOPs per sample, for the fraction of speed of light. See "
        "docs/speed-of-light.md.",
        keep,
    ),
)

# Keras dtype policy → the dtype its matmuls run in.
POLICY_DTYPES = {
    "float32": "float32",
    "mixed_float16": "float16",
    "mixed_bfloat16": "bfloat16",
    "float16": "float16",
    "bfloat16": "bfloat16",
}


def compute_dtype(policy: Any) -> str | None:
    return POLICY_DTYPES.get(str(policy)) if policy else None


def framework_version(backend: str) -> str:
    module = sys.modules.get(backend)
    keras = sys.modules.get("keras")
    return f"{getattr(module, '__version__', '?')}/keras-{getattr(keras, '__version__', '?')}"


def cache_key(backend: str, device: str, device_name: str) -> str:
    from advisor.probes.speed_of_light import VERSION

    host = socket.gethostname()
    return f"{host}|{device}|{device_name}|{backend}-{framework_version(backend)}|v{VERSION}"


def read_cache(path: Path) -> dict[str, Any]:
    from advisor.bounded_reads import read_limited

    try:
        data = json.loads(read_limited(path, CACHE_MAX_BYTES))
    except Exception:  # a missing, foreign or broken cache is measured again
        return {}
    return data if isinstance(data, dict) else {}


def write_cache(path: Path, entries: dict[str, Any]) -> None:
    from advisor.store.atomic_writes import write_json_atomic

    newest = sorted(entries.items(), key=lambda kv: -float(kv[1].get("measured_at") or 0))
    write_json_atomic(path, dict(newest[:CACHE_MAX_ENTRIES]))


def device_of(backend: str, context_device: Any) -> tuple[str, str]:
    """("cpu" or "gpu", the device's name) the backend trains on."""
    device = "gpu" if context_device == "gpu" else "cpu"
    name = ""
    if device == "cpu":
        import platform

        name = platform.processor() or platform.machine()
    return device, name


class SpeedOfLightCollector(Collector):
    """Records the model's FLOPs per sample and the device's measured ceilings at train end."""

    name = "speed_of_light"

    def __init__(self, max_seconds: float = MAX_SECONDS, loop_flops: LoopFlops | None = None):
        super().__init__()
        self.max_seconds = max_seconds
        self.loop_flops = loop_flops  # a custom loop's count (tracking/flop_source.py)

    def on_train_end(self) -> None:
        s = self.session
        if s.rank != 0 or s.backend not in ("tensorflow", "jax", "torch"):
            return
        values: dict[str, Any] = {}
        if self.loop_flops is None:
            policy = s.notes.context.get("context.dtype_policy") or _model_policy(s.model)
            values.update(self._flops())
        else:
            policy, counted = self._count_loop(self.loop_flops)
            values.update(counted)
        dtype = compute_dtype(policy)
        if dtype:
            values["speed_of_light.dtype"] = dtype
        try:
            values.update(self._ceilings(str(s.backend)))
        except Exception as exc:  # noqa: BLE001 — the microbenchmark never costs the fit
            failed = f"{type(exc).__name__}: {exc}"[:300]
            earlier = values.get("speed_of_light.error")
            values["speed_of_light.error"] = f"{earlier}; {failed}" if earlier else failed
        s.notes.speed_of_light_fraction = rough_fraction(values, s.notes.last_samples_per_s)
        s.writer.write(ContextRecord(t=time.time(), values=values))

    @staticmethod
    def _count_loop(loop_flops: LoopFlops) -> tuple[str | None, dict[str, Any]]:
        """(compute dtype, values) of a custom loop's count: float32 when the loop does not say;
        a failure is logged once and recorded as ``speed_of_light.error``."""
        try:
            values, dtype = loop_flops()
        except Exception as exc:  # noqa: BLE001 — counting never costs the loop
            message = f"FLOPs not counted: {type(exc).__name__}: {exc}"[:300]
            log.warning("advisor: %s; the loop gets no speed of light", message)
            return None, {"speed_of_light.error": message}
        return dtype or "float32", values

    def _flops(self) -> dict[str, Any]:
        from advisor.probes.flops import estimate_flops_per_sample

        s = self.session
        try:
            estimate = estimate_flops_per_sample(s.model, s.data, backend=s.backend)
        except Exception as exc:  # noqa: BLE001 — no FLOPs: no fraction, the fit goes on
            return {"model.flops_error": f"{type(exc).__name__}: {exc}"[:300]}
        if estimate is None:
            return {}
        return {
            "model.flops_per_sample": estimate.flops_per_sample,
            "model.flops_method": estimate.method,
        }

    def _ceilings(self, backend: str) -> dict[str, Any]:
        from advisor.probes.speed_of_light import SpeedOfLight, measure

        s = self.session
        device, name = device_of(backend, s.notes.context.get("context.device"))
        key = cache_key(backend, device, name)
        path = Path(s.writer.runs_dir) / CACHE_FILE
        entries = read_cache(path)
        cached = entries.get(key)
        earlier, times = None, 0
        if isinstance(cached, dict) and isinstance(cached.get("result"), dict):
            earlier = SpeedOfLight.from_dict(cached["result"])
            times = cached.get("measurements", MEASUREMENTS)
            times = times if isinstance(times, int) and times > 0 else MEASUREMENTS
        hit = earlier is not None and times >= MEASUREMENTS
        if hit:
            result = earlier
        else:
            result = measure(backend, device, name, max_seconds=self.max_seconds)
            result = earlier.best_with(result) if earlier is not None else result
            entries[key] = {
                "measured_at": time.time(),
                "measurements": times + 1,
                "result": result.to_dict(),
            }
            try:
                write_cache(path, entries)
            except OSError as exc:
                log.debug("advisor: speed-of-light cache not written: %s", exc)
        values: dict[str, Any] = {
            "speed_of_light.device": device,
            "speed_of_light.device_name": name or None,
            "speed_of_light.backend": backend,
            "speed_of_light.cached": hit,
            "speed_of_light.bench_seconds": result.seconds,
            "speed_of_light.bandwidth_gbs": result.bandwidth_gbs,
        }
        for dtype_name, tflops in result.tflops.items():
            values[f"speed_of_light.tflops_{dtype_name}"] = tflops
        if result.failed:
            values["speed_of_light.not_measured"] = dict(result.failed)
        return {k: v for k, v in values.items() if v is not None}


def rough_fraction(values: dict[str, Any], samples_per_s: Any) -> float | None:
    """Training's fraction of speed of light from its last window (the facts derive the exact
    one from every window): what the precision what-if's default reads."""
    flops = values.get("model.flops_per_sample")
    attainable = values.get(f"speed_of_light.tflops_{values.get('speed_of_light.dtype')}")
    if not flops or not attainable or not isinstance(samples_per_s, (int, float)):
        return None
    return float(flops) * float(samples_per_s) / (float(attainable) * 1e12)


def _model_policy(model: Any) -> str | None:
    policy = getattr(model, "dtype_policy", None)
    return getattr(policy, "name", None)
