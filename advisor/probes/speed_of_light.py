"""What this device sustains: dense matmul FLOP/s per dtype and memory bandwidth, measured with the
backend the run uses (docs/speed-of-light.md).

For each dtype (float32, bfloat16, float16) square matmuls of growing size (256, 512, … up to
``MAX_N``) run, each timed a few times after a warm-up call, until one takes ``LONG_ENOUGH_S`` or
the dtype's share of the time is spent; the dtype's figure is the best rate seen (2·n³ FLOP per
matmul). Best, not median: the ceiling a step could reach is what the device does when nothing
else disturbs it, and on a shared machine every disturbance only slows a sample down. Memory
bandwidth is the best of a few element-wise passes over a ``COPY_BYTES`` float32 buffer (one read
and one write per element). Each dtype that fails (the device cannot run it) is recorded with why.

The whole takes well under a second on a CPU (benchmarks/speed_of_light.py; RESULTS.md): the
bandwidth and each dtype's smallest size are always measured, a larger size only while its
predicted cost fits in ``max_seconds``. It never raises for a dtype.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DTYPES = ("float32", "bfloat16", "float16")
SIZES = (256, 512, 1024, 2048, 4096)
MAX_N = {"cpu": 1024, "gpu": 4096}  # larger matmuls on a CPU cost time and add nothing
LONG_ENOUGH_S = 0.004  # one matmul this long is past the launch and cache effects
REPEATS = 3
COPY_BYTES = 32 * 2**20
MAX_SECONDS = 1.0
VERSION = 1  # of the method: a cached figure of another version is measured again


@dataclass
class SpeedOfLight:
    """The device's measured ceilings."""

    backend: str
    device: str  # cpu | gpu
    device_name: str
    tflops: dict[str, float] = field(default_factory=dict)  # dtype → TFLOP/s (best)
    failed: dict[str, str] = field(default_factory=dict)  # dtype → why it was not measured
    bandwidth_gbs: float | None = None  # GB/s
    seconds: float = 0.0  # what measuring took
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "device": self.device,
            "device_name": self.device_name,
            "tflops": dict(self.tflops),
            "failed": dict(self.failed),
            "bandwidth_gbs": self.bandwidth_gbs,
            "seconds": self.seconds,
            "version": self.version,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SpeedOfLight:
        return cls(
            backend=str(data["backend"]),
            device=str(data["device"]),
            device_name=str(data.get("device_name") or ""),
            tflops={str(k): float(v) for k, v in (data.get("tflops") or {}).items()},
            failed={str(k): str(v) for k, v in (data.get("failed") or {}).items()},
            bandwidth_gbs=data.get("bandwidth_gbs"),
            seconds=float(data.get("seconds") or 0.0),
            version=int(data.get("version") or 0),
        )

    def best_with(self, other: SpeedOfLight) -> SpeedOfLight:
        """Each ceiling the better of the two measurements (a disturbance only ever slows a
        measurement down); a dtype that either measured counts as measured."""
        tflops = dict(self.tflops)
        for dtype, value in other.tflops.items():
            tflops[dtype] = max(value, tflops.get(dtype, 0.0))
        bandwidths = [b for b in (self.bandwidth_gbs, other.bandwidth_gbs) if b is not None]
        failed = {k: v for k, v in {**self.failed, **other.failed}.items() if k not in tflops}
        return SpeedOfLight(
            backend=self.backend,
            device=self.device,
            device_name=self.device_name,
            tflops=tflops,
            failed=failed,
            bandwidth_gbs=max(bandwidths) if bandwidths else None,
            seconds=other.seconds,
            version=self.version,
        )


# A kernel factory: (dtype, n) → a callable that runs one n×n matmul to completion.
Kernels = tuple[Callable[[str, int], Callable[[], None]], Callable[[int], Callable[[], None]]]


def _tensorflow(device: str) -> Kernels:
    import tensorflow as tf

    where = "/GPU:0" if device == "gpu" else "/CPU:0"

    def matmul(dtype: str, n: int) -> Callable[[], None]:
        with tf.device(where):
            a = tf.cast(tf.random.uniform((n, n)), dtype)
            b = tf.cast(tf.random.uniform((n, n)), dtype)
            step = tf.function(lambda: tf.linalg.matmul(a, b)[0, 0])

        def run() -> None:
            step().numpy()

        return run

    def copy(elements: int) -> Callable[[], None]:
        with tf.device(where):
            a = tf.random.uniform((elements,))
            step = tf.function(lambda: (a + 1.0)[0])

        def run() -> None:
            step().numpy()

        return run

    return matmul, copy


def _jax(device: str) -> Kernels:
    import jax
    import jax.numpy as jnp

    target = jax.devices("gpu" if device == "gpu" else "cpu")[0]

    def matmul(dtype: str, n: int) -> Callable[[], None]:
        a = jax.device_put(jnp.ones((n, n), dtype=dtype), target)
        b = jax.device_put(jnp.ones((n, n), dtype=dtype), target)
        step = jax.jit(jnp.matmul)

        def run() -> None:
            step(a, b).block_until_ready()

        return run

    def copy(elements: int) -> Callable[[], None]:
        a = jax.device_put(jnp.ones((elements,), dtype="float32"), target)
        step = jax.jit(lambda x: x + 1.0)

        def run() -> None:
            step(a).block_until_ready()

        return run

    return matmul, copy


def _torch(device: str) -> Kernels:
    import torch

    where = "cuda" if device == "gpu" else "cpu"
    sync = torch.cuda.synchronize if where == "cuda" else (lambda: None)

    def matmul(dtype: str, n: int) -> Callable[[], None]:
        a = torch.rand((n, n), device=where).to(getattr(torch, dtype))
        b = torch.rand((n, n), device=where).to(getattr(torch, dtype))

        def run() -> None:
            with torch.no_grad():
                torch.mm(a, b)
            sync()

        return run

    def copy(elements: int) -> Callable[[], None]:
        a = torch.rand((elements,), device=where)

        def run() -> None:
            with torch.no_grad():
                a.add_(1.0)
            sync()

        return run

    return matmul, copy


KERNELS: dict[str, Callable[[str], Kernels]] = {
    "tensorflow": _tensorflow,
    "jax": _jax,
    "torch": _torch,
}


def _best_seconds(run: Callable[[], None], repeats: int = REPEATS) -> float:
    run()  # warm-up: tracing, compiling, the first allocation
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - began)
    return best


def _dtype_tflops(
    matmul: Callable[[str, int], Callable[[], None]], dtype: str, device: str, until: float
) -> float:
    """The best rate of the sizes measured: the smallest always, each larger one only while its
    predicted cost (8× the last size's, every repeat and the warm-up) fits before ``until``."""
    best, last = 0.0, 0.0
    for n in SIZES:
        if n > MAX_N.get(device, MAX_N["gpu"]):
            break
        if last and time.perf_counter() + 8 * last * (REPEATS + 1) > until:
            break
        last = _best_seconds(matmul(dtype, n))
        best = max(best, 2.0 * n**3 / max(last, 1e-9) / 1e12)
        if last >= LONG_ENOUGH_S:
            break
    return best


def measure(
    backend: str, device: str, device_name: str = "", max_seconds: float = MAX_SECONDS
) -> SpeedOfLight:
    """The ceilings of ``device`` ("cpu" or "gpu") with ``backend``'s own ops. The bandwidth and
    each dtype's smallest size are always measured; the larger sizes share ``max_seconds``."""
    started = time.perf_counter()
    result = SpeedOfLight(backend, device, device_name)
    factory = KERNELS.get(backend)
    if factory is None:
        raise ValueError(f"no speed-of-light kernels for backend {backend!r}")
    matmul, copy = factory(device)
    try:
        seconds = _best_seconds(copy(COPY_BYTES // 4))
        result.bandwidth_gbs = 2 * COPY_BYTES / max(seconds, 1e-9) / 1e9
    except Exception:  # noqa: BLE001 — a bandwidth that cannot be measured is left out
        result.bandwidth_gbs = None
    for index, dtype in enumerate(DTYPES):
        left = started + max_seconds - time.perf_counter()
        until = time.perf_counter() + max(0.0, left) / (len(DTYPES) - index)
        try:
            rate = _dtype_tflops(matmul, dtype, device, until)
        except Exception as exc:  # noqa: BLE001 — a dtype the device cannot run is said, not raised
            result.failed[dtype] = f"{type(exc).__name__}: {exc}"[:200]
            continue
        if rate > 0:
            result.tflops[dtype] = rate
    result.seconds = time.perf_counter() - started
    return result
