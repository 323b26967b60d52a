"""Does a ~2 ms training step run slower right after a sleep-bound segment?

    python benchmarks/after_idle.py [--rounds 6] [--seconds 0.6]

The what-if interleaves its arms: a segment of the cached input (a ~2 ms compute step) follows
a segment of the real input, which waits in ``time.sleep`` and leaves the cores idle. If the
step ran slower after such a pause (thread pools asleep, caches cold), the what-if would read
the cache's gain low against a separate applied run. In one process, on one model, each round
times three cached segments of ``--seconds``: one right after another cached segment, one right
after a segment of the sleep-bound input (examples/input_bound/naive.py), one right after an
idle sleep of the same length. It prints samples/s per segment (first batch to last) and the
rate of the median step.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=0.6)
    args = parser.parse_args(argv)

    import keras
    import numpy as np
    import tensorflow as tf

    from examples.input_bound import naive

    x, y = naive.synthetic_arrays()
    cached = tf.data.Dataset.from_tensor_slices((x, y)).batch(naive.BATCH_SIZE).cache()
    slow = naive.make_dataset()
    model = naive.build_model()
    model.fit(cached, epochs=3, verbose=0)  # compiled, and the cache filled

    class Starts(keras.callbacks.Callback):
        def on_train_begin(self, logs: Any = None) -> None:
            self.t: list[float] = []

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self.t.append(time.perf_counter())

    starts = Starts()

    def segment(data: Any) -> tuple[float, float]:
        """Whole epochs of ``data`` until ``--seconds`` have passed.

        Returns (samples/s, median-step rate).
        """
        t0, times = time.perf_counter(), []
        while time.perf_counter() - t0 < args.seconds:
            model.fit(data, epochs=1, verbose=0, callbacks=[starts])
            times += starts.t
        gaps = np.diff(times)
        return naive.BATCH_SIZE * len(gaps) / (times[-1] - times[0]), naive.BATCH_SIZE / float(
            np.median(gaps)
        )

    rows = []
    for n in range(args.rounds):
        segment(cached)
        after_cached = segment(cached)
        segment(slow)
        after_slow = segment(cached)
        time.sleep(args.seconds)
        after_sleep = segment(cached)
        rows.append((after_cached, after_slow, after_sleep))
        print(
            f"round {n}: samples/s after cached {after_cached[0]:7.0f}  "
            f"after the slow input {after_slow[0]:7.0f}  "
            f"after idle {after_sleep[0]:7.0f}   "
            f"(median step: {after_cached[1]:.0f} {after_slow[1]:.0f} {after_sleep[1]:.0f})",
            flush=True,
        )
    for i, name in enumerate(("after cached", "after the slow input", "after idle")):
        rates = [r[i][0] for r in rows]
        print(
            f"{name}: median {statistics.median(rates):.0f} samples/s "
            f"({min(rates):.0f}-{max(rates):.0f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
