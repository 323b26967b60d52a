"""Cost of the telemetry sampler: its own CPU, and training throughput with it on vs off.

    python benchmarks/telemetry_overhead.py [--interval 1.0] [--pairs 5] [--seconds 6]

1. Sampler CPU: the thread's CPU time per sample (``time.thread_time`` over 100 samples, NVML
   and psutil as on this machine), and the same over a real run of ``--seconds`` at the interval;
   as a share of one core. Target: < 1 % at a 1 s interval.
2. Throughput: the same model trained with ``telemetry=True`` and ``telemetry=False`` (all other
   collectors on in both), alternating the order, median ratio of steady-state samples/s (from
   batch 100 to the last: the one-off work at train begin and end is not training throughput).
   Target: within 1 %.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time


def sampler_cost(interval: float, seconds: float) -> None:
    from advisor.collectors.telemetry.collector import TelemetrySampler
    from advisor.collectors.telemetry.host import HostSampler
    from advisor.collectors.telemetry.nvml import NvmlMonitor

    monitor = NvmlMonitor()
    gpu = monitor if monitor.open() else None
    print(f"NVML: {'%d GPU(s)' % len(monitor.devices) if gpu else monitor.reason}")
    if gpu is not None:  # CPU per NVML reading, to see which one costs
        for dev in monitor.devices:
            for name, reader in monitor._readers(dev, 0.0):
                cpu0 = time.thread_time()
                for k in range(20):
                    monitor._last_pcie.clear()
                    try:
                        reader()
                    except Exception as exc:
                        print(f"  GPU {dev.index} {name}: {exc}")
                        break
                print(
                    f"  GPU {dev.index} {name}: "
                    f"{(time.thread_time() - cpu0) / 20 * 1e3:.3f} ms CPU per read"
                )
    host = HostSampler()
    host.sample(time.time(), time.monotonic())
    cpu0 = time.thread_time()
    for _ in range(20):
        host.sample(time.time(), time.monotonic())
    print(f"  host (psutil): {(time.thread_time() - cpu0) / 20 * 1e3:.3f} ms CPU per sample")
    written: list[object] = []
    sampler = TelemetrySampler(written.append, interval, gpu=gpu, host=HostSampler())
    sampler.sample_once()  # prime the host counters
    n = 100
    cpu0 = time.thread_time()
    for _ in range(n):
        sampler.sample_once()
    per_sample = (time.thread_time() - cpu0) / n
    print(
        f"CPU per sample: {per_sample * 1e3:.3f} ms → "
        f"{per_sample / interval:.4%} of one core at {interval} s"
    )

    written.clear()
    sampler = TelemetrySampler(written.append, interval, gpu=gpu, host=HostSampler())
    sampler.start()
    time.sleep(seconds)
    sampler.stop()
    print(
        f"thread over {sampler.wall_seconds:.1f} s: {sampler.samples} samples, "
        f"CPU {sampler.cpu_seconds * 1e3:.1f} ms → "
        f"{sampler.cpu_seconds / sampler.wall_seconds:.4%} of one core"
    )
    monitor.close()


def throughput(pairs: int, interval: float) -> None:
    import keras
    import numpy as np

    import advisor

    rng = np.random.default_rng(0)
    batch, steps = 64, 1500
    x = rng.normal(size=(batch * steps, 128)).astype("float32")
    y = rng.normal(size=(batch * steps, 1)).astype("float32")
    model = keras.Sequential(
        [
            keras.Input((128,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", "mse")
    store = tempfile.mkdtemp(prefix="advisor-bench-")

    class Clock(keras.callbacks.Callback):
        """Steady-state time: batch 100 to the last batch (train begin and end work excluded)."""

        def on_train_batch_end(self, batch: int, logs: object = None) -> None:
            if batch == 100:
                self.t0 = time.perf_counter()
            self.t1, self.last = time.perf_counter(), batch

    def samples_per_s(telemetry: bool) -> float:
        cb = advisor.AdvisorCallback(
            runs_dir=store,
            log_every_seconds=None,
            telemetry=telemetry,
            telemetry_interval_seconds=interval,
            baseline=None,
        )
        clock = Clock()
        model.fit(x, y, batch_size=batch, epochs=1, callbacks=[cb, clock], verbose=0, shuffle=False)
        return batch * (clock.last - 100) / (clock.t1 - clock.t0)

    samples_per_s(False)
    samples_per_s(True)
    ratios = []
    for i in range(pairs):
        if i % 2 == 0:
            off, on = samples_per_s(False), samples_per_s(True)
        else:
            on, off = samples_per_s(True), samples_per_s(False)
        ratios.append(on / off)
        print(
            f"pair {i + 1}: off {off:,.0f} samples/s, on {on:,.0f} samples/s, "
            f"on ÷ off {on / off:.4f}"
        )
    print(
        f"median on ÷ off over {pairs} pairs: {statistics.median(ratios):.4f} "
        f"(backend {keras.backend.backend()})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--skip-training", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sampler_cost(args.interval, args.seconds)
    if not args.skip_training:
        throughput(args.pairs, args.interval)


if __name__ == "__main__":
    main()
