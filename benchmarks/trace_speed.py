"""Trace speed: summarising a 30-step profile, and what a configured window costs outside it.

    python benchmarks/trace_speed.py [--repeats 5] [--pairs 7] [--steps 400]

1. ``summarize`` end to end (child process, XProf's four tools, timeline analysis, parsing) on
   the committed 30-step fixture and on a fresh 30-step capture. Target: < 2 s each.
2. Throughput outside the capture window: the same tiny-model fit with ``AdvisorCallback()`` and
   with ``AdvisorCallback(profile_steps=...)``, alternating, compared on the epochs after the
   window (the collector has switched its hooks off) and on a fit whose window lies beyond the
   end (its batch hooks run at every step, waiting for a window that never comes). Target: ratio
   (profiling configured ÷ not) ≤ 1.01, taken on the fastest epochs of each side (other
   processes only ever slow an epoch down) and, for reference, on the median epochs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "traces" / "input_bound"


def summarise_speed(repeats: int) -> None:
    from advisor.traces.summarize import summarize

    summarize(FIXTURE)  # page caches and the child's imports warm
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        summary = summarize(FIXTURE)
        times.append(time.perf_counter() - t0)
    print(
        f"summarise fixture (30 marked steps, {summary.steps} found): "
        f"median {statistics.median(times):.2f} s, "
        f"max {max(times):.2f} s over {repeats}"
    )


def capture_and_summarise(store: str, repeats: int) -> None:
    import keras
    import numpy as np

    from advisor.collectors.singles import ProfilerCallback
    from advisor.traces.summarize import summarize

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64 * 60, 128)).astype("float32")
    y = rng.normal(size=(64 * 60, 1)).astype("float32")
    model = _model(keras)
    cb = ProfilerCallback(runs_dir=store, profile_steps=(11, 40), profile_summary=False)
    model.fit(x, y, batch_size=64, epochs=1, callbacks=[cb], verbose=0)
    folder = next(Path(cb.run_path, "traces").rglob("*.xplane.pb")).parent
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        summary = summarize(folder)
        times.append(time.perf_counter() - t0)
    print(
        f"summarise fresh capture (30 marked steps, {summary.steps} found): median "
        f"{statistics.median(times):.2f} s, max {max(times):.2f} s over {repeats}"
    )


def _model(keras):  # type: ignore[no-untyped-def]
    model = keras.Sequential(
        [
            keras.Input((128,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", "mse")
    return model


def window_cost(store: str, pairs: int, steps: int) -> None:
    import keras
    import numpy as np

    import advisor
    from advisor.store.reader import RunReader
    from advisor.store.schema import EpochRecord

    rng = np.random.default_rng(0)
    batch = 64
    x = rng.normal(size=(batch * steps, 128)).astype("float32")
    y = rng.normal(size=(batch * steps, 1)).astype("float32")
    model = _model(keras)
    epochs = 4

    def later_epochs(profile_steps):  # type: ignore[no-untyped-def]
        options = (
            {}
            if profile_steps is None
            else {"profile_steps": profile_steps, "profile_summary": False}
        )
        cb = advisor.AdvisorCallback(
            runs_dir=store, log_every_seconds=None, telemetry=False, baseline=None, **options
        )
        model.fit(x, y, batch_size=batch, epochs=epochs, callbacks=[cb], verbose=0, shuffle=False)
        records = RunReader(cb.run_path).read().of_type(EpochRecord)
        return [r.train_seconds for r in records[1:]]  # epochs after the first (the window's)

    cases = {
        "after the window (steps 20..29 in epoch 1)": (20, 29),
        "before a window that never comes": (10**9, 10**9 + 1),
    }
    later_epochs(None)
    for name, window in cases.items():
        later_epochs(window)
        with_all: list[float] = []
        without_all: list[float] = []
        for i in range(pairs):
            # Alternate the order so drift does not favour one side.
            if i % 2 == 0:
                without_all += later_epochs(None)
                with_all += later_epochs(window)
            else:
                with_all += later_epochs(window)
                without_all += later_epochs(None)
        # Other processes only ever slow an epoch down: the fastest epochs are the cleanest signal.
        best = min(with_all) / min(without_all)
        med = statistics.median(with_all) / statistics.median(without_all)
        print(
            f"throughput cost {name}: ratio of fastest epochs {best:.3f}, "
            f"of median epochs {med:.3f} "
            f"({len(with_all)} epochs each side, {steps} steps each); target <= 1.01"
        )


def hook_cost(calls: int = 200_000) -> None:
    """Per-step cost of a configured window outside it, timed directly (no noise from others)."""
    from advisor.collectors.profiler import ProfilerCollector

    collector = ProfilerCollector(profile_steps=(10**9, 10**9 + 1))
    collector._first_call = 10**9  # as on_train_begin leaves it, without a run
    begin, end = collector.on_train_batch_begin, collector.on_train_batch_end
    t0 = time.perf_counter()
    for i in range(calls):
        begin(i)
        end(i)
    per_step = (time.perf_counter() - t0) / calls
    print(
        f"batch hooks outside the window: {per_step * 1e9:.0f} ns per step "
        f"({100 * per_step / 1e-3:.3f}% of a 1 ms step)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument(
        "--steps", type=int, default=200, help="steps per epoch of the window-cost fits"
    )
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, str(ROOT))
    store = tempfile.mkdtemp(prefix="advisor-bench-")
    hook_cost()
    summarise_speed(args.repeats)
    capture_and_summarise(store, args.repeats)
    window_cost(store, args.pairs, args.steps)


if __name__ == "__main__":
    main()
