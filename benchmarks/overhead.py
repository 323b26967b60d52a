"""Overhead of AdvisorCallback on a tiny model (~1 ms step): fit with and without, alternating.

    python benchmarks/overhead.py [--pairs 7] [--fit-seconds 2 | --steps N]
                                  [--backend tensorflow|jax|torch|tf_keras] [--user-callbacks 5]

``--backend tf_keras`` trains with legacy tf.keras (``TF_USE_LEGACY_KERAS=1``). The backend is
chosen before Keras is imported, so run one backend per process. Prints each pair and the
median ratio (with ÷ without). Target: ≤ 1.01. On JAX and torch the advisor's batch hooks are
async-safe, so Keras keeps dispatching batch ends off the training thread with the advisor on.
``--user-callbacks N`` gives both arms N light callbacks of the user's (a counter in each batch
and epoch hook): with the advisor on, its time budget wraps every one of their hooks, and the
ratio says what that timing costs (docs/goodput.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="steps per fit, 2 epochs (default: as many as last --fit-seconds)",
    )
    parser.add_argument(
        "--fit-seconds",
        type=float,
        default=2.0,
        help="without --steps: size each fit to about this long, so that the fixed "
        "cost of starting a run weighs on every backend as on a 2 s fit",
    )
    parser.add_argument(
        "--backend",
        default=None,
        choices=("tensorflow", "jax", "torch", "tf_keras"),
        help="Keras backend, or tf_keras (default: $KERAS_BACKEND or tensorflow)",
    )
    parser.add_argument("--spe", type=int, default=1, help="steps_per_execution")
    parser.add_argument(
        "--user-callbacks",
        type=int,
        default=0,
        help="light user callbacks in both arms (their hooks are timed by the budget)",
    )
    parser.add_argument(
        "--width",
        type=int,
        default=256,
        help="hidden width; widen it where the step is far below ~1 ms (JAX: 512)",
    )
    args = parser.parse_args()
    if args.backend == "tf_keras":
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        os.environ["KERAS_BACKEND"] = "tensorflow"
    elif args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
        os.environ.pop("TF_USE_LEGACY_KERAS", None)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    legacy = os.environ.get("TF_USE_LEGACY_KERAS") == "1"

    import numpy as np

    if legacy:
        import tensorflow as tf

        keras = tf.keras
        name = "tf_keras"
    else:
        import keras

        name = keras.backend.backend()
        if name == "torch" and args.spe != 1:
            parser.error("the torch backend runs one step per call: --spe must be 1")

    import advisor

    rng = np.random.default_rng(0)
    batch = 64
    model = keras.Sequential(
        [
            keras.Input((128,)),
            keras.layers.Dense(args.width, activation="relu"),
            keras.layers.Dense(args.width, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", "mse", steps_per_execution=args.spe)
    if args.steps is None:  # calibrate: time 400 steps after a compiling fit
        probe = rng.normal(size=(batch * 400, 128)).astype("float32")
        probe_y = rng.normal(size=(batch * 400, 1)).astype("float32")
        model.fit(probe, probe_y, batch_size=batch, epochs=1, verbose=0)
        t0 = time.perf_counter()
        model.fit(probe, probe_y, batch_size=batch, epochs=1, verbose=0)
        step_s = (time.perf_counter() - t0) / 400
        args.steps = max(1000, int(args.fit_seconds / step_s))
    per_epoch = max(1, args.steps // 2)
    x = rng.normal(size=(batch * per_epoch, 128)).astype("float32")
    y = rng.normal(size=(batch * per_epoch, 1)).astype("float32")
    store = tempfile.mkdtemp(prefix="advisor-bench-")

    own: list[float] = []  # the advisor's own estimate: time in its hooks ÷ training time
    steady: list[float] = []  # the second epoch's time, in the order fits ran

    class EpochTimer(keras.callbacks.Callback):
        """In both arms: times the second epoch alone (no train begin/end, no first epoch)."""

        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                steady.append(time.perf_counter() - self.t0)

    class Counter(keras.callbacks.Callback):
        """A light user callback: counts batches and epochs, as a progress or metric hook would."""

        def __init__(self):
            super().__init__()
            self.batches = self.epochs = 0

        def on_train_batch_end(self, batch, logs=None):
            self.batches += 1

        def on_epoch_end(self, epoch, logs=None):
            self.epochs += 1

    users = [Counter() for _ in range(args.user_callbacks)]

    def timed(with_advisor: bool) -> float:
        # baseline=None: the default baseline measures after training, on purpose; it is reported
        # as its own time (baseline.seconds), not as overhead of the training.
        callbacks = (
            [advisor.AdvisorCallback(runs_dir=store, log_every_seconds=None, baseline=None)]
            if with_advisor
            else []
        )
        epochs = 2
        t0 = time.perf_counter()
        model.fit(
            x,
            y,
            batch_size=batch,
            epochs=epochs,
            callbacks=[EpochTimer(), *users, *callbacks],
            verbose=0,
            shuffle=False,
        )
        seconds = time.perf_counter() - t0
        if callbacks:
            from advisor.store.reader import RunReader
            from advisor.store.schema import EndRecord

            (end,) = RunReader(callbacks[0].run_path).read().of_type(EndRecord)
            if end.advisor_seconds is not None and end.train_seconds:
                own.append(end.advisor_seconds / end.train_seconds)
        return seconds

    timed(False)  # compile and warm caches
    timed(True)
    ratios = []
    steady_ratios = []
    for i in range(args.pairs):
        # Alternate the order so drift does not favour one side.
        if i % 2 == 0:
            without, with_ = timed(False), timed(True)
            steady_ratios.append(steady[-1] / steady[-2])
        else:
            with_, without = timed(True), timed(False)
            steady_ratios.append(steady[-2] / steady[-1])
        ratios.append(with_ / without)
        print(
            f"pair {i + 1}: without {without:.3f} s, with {with_:.3f} s, "
            f"ratio {with_ / without:.4f}"
        )
    steps = 2 * per_epoch
    print(
        f"backend {name}, {steps} steps per fit, {len(users)} user callbacks, "
        f"step ≈ {without / steps * 1000:.2f} ms, load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"median ratio (with ÷ without) over {args.pairs} pairs: "
        f"{statistics.median(ratios):.4f} whole fit, "
        f"{statistics.median(steady_ratios):.4f} second epoch only"
    )
    if own:
        print(
            "advisor's own estimate (time in its hooks ÷ training time), "
            f"median: {statistics.median(own):.2%}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
