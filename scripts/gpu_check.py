"""GPU check: train a small model with AdvisorCallback on an NVIDIA GPU, print what telemetry saw.

Run through ``scripts/gpu_check.sh`` (it bounds the whole check in time). Steps:

1. look at the machine: NVML and its GPUs, which Keras backend can use a GPU (TensorFlow with
   CUDA, else JAX), and what is missing — with the command that would install it;
2. train a wide MLP (bf16 mixed precision where the GPU has it) for about ``--seconds`` seconds
   with telemetry every 0.5 s, then a deliberately small, input-starved run for contrast;
3. derive the facts and print, per GPU, the NVML series summary, then energy, MFU and memory
   (the backend allocator's peak per epoch, read by the memory collector: docs/memory.md); the
   busy run also runs the memory what-if (``batch_memory=True``) on the device's allocator;
4. read device memory through each backend's own counters, as the memory collector does
   (``advisor.probes.memory.device_memory``): ``tf.config.experimental.get_memory_info``, JAX's
   ``memory_stats()`` and ``torch.cuda.max_memory_allocated``, each in a fresh interpreter after
   placing 256 MiB on the GPU, for every one of TensorFlow, JAX and torch that is installed with
   CUDA.

Exit code: 0 when GPU samples, energy, MFU, the device memory peak, the memory what-if on the
device and every installed GPU backend's memory counters were all produced; 3 when something
needed is missing (named on stdout); 1 when the check ran but a figure is missing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

PROBE_TIMEOUT_S = 90


def say(text: str = "") -> None:
    print(text, flush=True)


def probe(code: str, env: dict[str, str] | None = None) -> tuple[bool, str]:
    """Run a snippet in a fresh interpreter (a broken CUDA install must not hang or kill us)."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            env={**os.environ, **(env or {})},
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {PROBE_TIMEOUT_S} s"
    lines = (proc.stdout.strip() or proc.stderr.strip() or "").splitlines()
    return proc.returncode == 0, (lines[-1] if lines else "")


def nvml_report() -> list[str]:
    try:
        import pynvml
    except ImportError:
        say("  pynvml: MISSING (pip install nvidia-ml-py)")
        return []
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        say(f"  NVML: unavailable ({exc})")
        return []
    names = []
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        name = pynvml.nvmlDeviceGetName(h)
        name = name.decode() if isinstance(name, bytes) else name
        names.append(name)
        mem = pynvml.nvmlDeviceGetMemoryInfo(h)
        say(f"  GPU {i}: {name}, {mem.total / 2**30:.0f} GiB")
    say(f"  driver {pynvml.nvmlSystemGetDriverVersion()}")
    pynvml.nvmlShutdown()
    return names


def choose_backend(wanted: str | None) -> str | None:
    checks = {
        "tensorflow": (
            "import tensorflow as tf; g = tf.config.list_physical_devices('GPU'); "
            "print(len(g)); assert g"
        ),
        "jax": (
            "import jax; d = [x for x in jax.devices() if x.platform == 'gpu']; "
            "print(len(d)); assert d"
        ),
    }
    for backend in [wanted] if wanted else ["tensorflow", "jax"]:
        if importlib.util.find_spec(backend) is None:
            say(f"  {backend}: not installed")
            continue
        ok, detail = probe(checks[backend])
        say(f"  {backend}: {'GPU ok' if ok else 'no GPU'} ({detail})")
        if ok:
            return backend
    say("  MISSING: a Keras backend with CUDA. Install one of:")
    say("    pip install 'tensorflow[and-cuda]'      # TensorFlow with CUDA")
    say("    pip install -U 'jax[cuda12]'            # JAX with CUDA 12 (or jax[cuda13])")
    return None


def missing_python_packages() -> list[str]:
    needed = {
        "keras": "keras>=3.15",
        "pydantic": "pydantic>=2.6",
        "psutil": "psutil",
        "pynvml": "nvidia-ml-py",
        "numpy": "numpy",
    }
    return [pip for mod, pip in needed.items() if importlib.util.find_spec(mod) is None]


class StopAfter:
    """Stops fit at a wall-clock budget (a Keras callback built lazily, once keras is imported)."""

    @staticmethod
    def make(seconds: float) -> Any:
        import keras

        class _Stop(keras.callbacks.Callback):
            def on_train_begin(self, logs: Any = None) -> None:
                self.t0 = time.perf_counter()

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                if time.perf_counter() - self.t0 > seconds:
                    self.model.stop_training = True

        return _Stop()


def train(
    runs_dir: str,
    seconds: float,
    width: int,
    batch: int,
    features: int,
    policy: str,
    name: str,
    batch_memory: bool = False,
) -> Any:
    import keras
    import numpy as np

    from advisor.collectors.callback import AdvisorCallback

    keras.config.set_dtype_policy(policy)
    inputs = keras.Input((features,))
    h = inputs
    for _ in range(4):
        h = keras.layers.Dense(width, activation="relu")(h)
    outputs = keras.layers.Dense(10, dtype="float32")(h)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=8,
    )
    rng = np.random.default_rng(0)
    steps = 64
    x = rng.standard_normal((batch * steps, features), dtype=np.float32)
    y = rng.integers(0, 10, batch * steps)
    cb = AdvisorCallback(
        runs_dir,
        name=name,
        window_seconds=2.0,
        log_every_seconds=None,
        telemetry_interval_seconds=0.5,
        mfu=True,
        batch_memory=batch_memory,
    )
    t0 = time.perf_counter()
    model.fit(
        x, y, batch_size=batch, epochs=1000, verbose=0, callbacks=[cb, StopAfter.make(seconds)]
    )
    say(f"  trained {time.perf_counter() - t0:.1f} s, params {model.count_params():,}")
    keras.config.set_dtype_policy("float32")
    return cb.run_path


def summarise(path: Any) -> dict[str, Any]:
    from advisor.analysis.registry import registry
    from advisor.analysis.telemetry_math import percentile
    from advisor.store.reader import RunReader
    from advisor.store.schema import ContextRecord, EventRecord, GpuSample

    run = RunReader(path).read()
    facts, errors = registry().derive(run)
    for err in errors:
        say(f"  facts error: {err}")
    by_dev: dict[int, list[GpuSample]] = {}
    for s in run.of_type(GpuSample):
        by_dev.setdefault(s.index, []).append(s)
    for index, samples in sorted(by_dev.items()):
        util = [s.util for s in samples if s.util is not None]
        power = [s.power_w for s in samples if s.power_w is not None]
        mem = [s.mem_used for s in samples if s.mem_used is not None]
        say(f"  GPU {index}: {len(samples)} samples over {samples[-1].t - samples[0].t:.1f} s")
        if util:
            say(
                f"    util p5/p50/p95 {percentile(util, 5):.0f}/{percentile(util, 50):.0f}/"
                f"{percentile(util, 95):.0f} %"
            )
        if mem:
            say(
                f"    memory used max {max(mem) / 2**30:.1f} GiB "
                f"of {(samples[0].mem_total or 0) / 2**30:.0f} GiB (NVML)"
            )
        if power:
            say(f"    power mean {sum(power) / len(power):.0f} W, max {max(power):.0f} W")
        for label, field in (
            ("temperature max", "temp_c"),
            ("SM clock p50", "sm_clock_mhz"),
            ("PCIe rx p95 B/s", "pcie_rx_bps"),
            ("PCIe tx p95 B/s", "pcie_tx_bps"),
        ):
            values = [getattr(s, field) for s in samples if getattr(s, field) is not None]
            if values:
                value = (
                    max(values)
                    if "max" in label
                    else percentile(values, 95 if "p95" in label else 50)
                )
                say(f"    {label}: {value:,.0f}")
        counters = [s.energy_j for s in samples if s.energy_j is not None]
        say(
            f"    energy counter: {'yes' if len(counters) == len(samples) else 'no (power x time)'}"
        )
    keys = [
        "gpu.present",
        "gpu.count",
        "gpu.util.p50",
        "gpu.util.p95",
        "gpu.util.fluctuating",
        "gpu.mem.peak_fraction",
        "gpu.mem.peak_source",
        "gpu.mem.nvml_peak_fraction",
        "gpu.power_w.mean",
        "gpu.throttled_fraction",
        "energy.wh",
        "energy.j_per_sample",
        "energy.method",
        "throughput.samples_per_s",
        "host.cpu.mean",
        "host.proc_cpu.mean",
        "telemetry.sampler_cpu_fraction",
        "accelerator.model",
        "accelerator.peak_dtype",
        "accelerator.peak_tflops",
        "model.flops_per_sample",
        "model.flops_method",
        "model.achieved_tflops",
        "mfu",
        "memory.device.peak_bytes",
        "memory.device.peak_fraction",
        "memory.host.peak_bytes",
        "memory.growth_mb_per_epoch",
        "memory.batch.where",
        "memory.batch.largest",
        "memory.batch.per_sample_mb",
        "memory.batch.check_batch",
        "memory.batch.check_error",
        "memory.batch.error",
    ]
    for key in keys:
        if key in facts:
            value = facts[key]
            say(f"  {key} = {value:.4g}" if isinstance(value, float) else f"  {key} = {value}")
    for record in run.of_type(ContextRecord):
        if "model.flops_error" in record.values:
            say(f"  FLOPs estimate failed: {record.values['model.flops_error']}")
    for event in run.of_type(EventRecord):
        say(f"  event [{event.level}] {event.source}: {event.message}")
    return facts


# Each backend places 256 MiB on the GPU, then the memory collector's reader reads its counters.
PLACE_256_MIB = {
    "tensorflow": (
        "import tensorflow as tf\n"
        "assert tf.config.list_physical_devices('GPU'), 'no GPU'\n"
        "x = tf.ones((8192, 8192)); float(tf.reduce_sum(x))\n"
    ),
    "jax": (
        "import jax, jax.numpy as jnp\n"
        "assert [d for d in jax.devices() if d.platform == 'gpu'], 'no GPU'\n"
        "x = jnp.ones((8192, 8192)); x.block_until_ready()\n"
    ),
    "torch": (
        "import torch\n"
        "assert torch.cuda.is_available(), 'no GPU'\n"
        "x = torch.ones((8192, 8192), device='cuda'); torch.cuda.synchronize()\n"
    ),
}
READ_COUNTERS = (
    "import json\n"
    "from advisor.probes.memory import device_memory\n"
    "first = device_memory({backend!r})\n"
    "again = device_memory({backend!r}, reset=False)\n"
    "print(json.dumps({{'first': first, 'after_reset': again}}))\n"
)


def memory_counters() -> list[str]:
    """Each installed backend's device memory counters read for real (step 4): the backends that
    have a GPU but whose counters read nothing, or less than the 256 MiB placed there."""
    failed = []
    for backend, place in PLACE_256_MIB.items():
        if importlib.util.find_spec(backend) is None:
            say(f"  {backend}: not installed")
            continue
        ok, detail = probe(place + READ_COUNTERS.format(backend=backend))
        if not ok:
            say(f"  {backend}: not read ({detail})")
            if "no GPU" not in detail:
                failed.append(backend)
            continue
        read = json.loads(detail)
        first = read["first"][0] if read["first"] else None
        if first is None or first["peak"] < 256 * 2**20:
            say(f"  {backend}: counters read {read['first']} (256 MiB were placed): FAIL")
            failed.append(backend)
            continue
        total = f" of {first['total'] / 2**30:.0f} GiB" if first.get("total") else ""
        after = read["after_reset"][0]["peak"] if read["after_reset"] else None
        reset = f", peak after the reset {after / 2**20:.0f} MiB" if after is not None else ""
        say(
            f"  {backend}: {first['device']} peak {first['peak'] / 2**20:.0f} MiB, in use "
            f"{first['in_use'] / 2**20:.0f} MiB{total}{reset}"
        )
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["tensorflow", "jax"], default=None)
    parser.add_argument("--seconds", type=float, default=25.0, help="training time of the main run")
    parser.add_argument("--runs-dir", default=None)
    parser.add_argument(
        "--json", default=None, help="also write the facts of both runs to this file"
    )
    args = parser.parse_args()

    t_start = time.perf_counter()
    say(f"python {sys.version.split()[0]} at {sys.executable}")
    say("NVML:")
    names = nvml_report()
    missing = missing_python_packages()
    if missing:
        say(f"MISSING Python packages: pip install {' '.join(repr(m) for m in missing)}")
        return 3
    say("Keras backend with a GPU:")
    backend = choose_backend(args.backend or os.environ.get("KERAS_BACKEND") or None)
    if backend is None or not names:
        say(
            "MISSING: "
            + ("a working NVIDIA driver (NVML)" if not names else "a Keras backend with CUDA")
        )
        return 3
    os.environ["KERAS_BACKEND"] = backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    say(f"keras {keras.__version__} on {keras.backend.backend()}")
    from advisor.reference.hardware import match_accelerator

    acc = match_accelerator(names[0])
    policy = "mixed_bfloat16" if acc is not None and acc.bf16 else "float32"
    runs_dir = args.runs_dir or tempfile.mkdtemp(prefix="advisor-gpu-check-")

    say(f"\n[1] busy run: wide MLP, batch 2048, {policy}, ~{args.seconds:.0f} s")
    busy = summarise(
        train(runs_dir, args.seconds, 4096, 2048, 256, policy, "gpu-check-busy", batch_memory=True)
    )
    say("\n[2] starved run: tiny MLP, batch 32, float32, ~8 s (expect low utilization)")
    starved = summarise(train(runs_dir, 8.0, 64, 32, 256, "float32", "gpu-check-starved"))

    say("\n[3] device memory counters of every installed backend (256 MiB placed on the GPU)")
    unread = memory_counters()

    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"busy": busy, "starved": starved}, fh, indent=2, default=str)
    say(f"\nruns in {runs_dir}; total {time.perf_counter() - t_start:.0f} s")
    # memory.device.peak_bytes: the memory collector read the backend's allocator on the GPU
    wanted = ["gpu.present", "energy.wh", "mfu", "memory.device.peak_bytes"]
    lacking = [k for k in wanted if not busy.get(k)]
    if busy.get("memory.batch.where") != "device":  # the memory what-if read the allocator
        lacking.append("memory.batch.where = device")
    lacking += [f"{backend}'s device memory counters" for backend in unread]
    if lacking:
        say(f"CHECK INCOMPLETE: missing {', '.join(lacking)}")
        return 1
    say(
        f"CHECK OK: util p50 {busy['gpu.util.p50']:.0f}% "
        f"vs {starved.get('gpu.util.p50', float('nan')):.0f}% starved; "
        f"{busy['energy.wh']:.2f} Wh; MFU {busy['mfu']:.1%}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
