"""One training script for every strategy and worker count of ``advisor scale``.

It reads its role from the environment (``advisor.launch.role``), so the launcher runs the same
command line at every size:

    advisor scale --workers 1,2 --strategy mirrored --strategy multiworker --strategy jax \\
        -- python examples/scaling/train.py --epochs 3

Data parallel with a fixed per-replica batch: the global batch grows with N and an epoch over the
same data needs N times fewer steps, so the epoch time falls as N grows if the job scales.
``multiworker`` and ``horovod`` train with tf_keras (Keras 3 cannot ``fit`` under
MultiWorkerMirroredStrategy); ``mirrored`` and ``single`` with Keras 3 on TensorFlow; ``jax`` with
Keras 3 on JAX, one process per device, each feeding its own shard.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np


def synthetic(n: int, features: int, classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype("float32")
    w = rng.normal(size=(features, classes)).astype("float32")
    y = np.argmax(x @ w, axis=1).astype("int32")
    return x, y


def build(keras: Any, features: int, hidden: int, classes: int) -> Any:
    model = keras.Sequential(
        [
            keras.Input(shape=(features,)),
            keras.layers.Dense(hidden, activation="relu"),
            keras.layers.Dense(hidden, activation="relu"),
            keras.layers.Dense(classes),
        ]
    )
    return model


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=8192)
    p.add_argument("--batch-per-replica", type=int, default=64)
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--runs-dir", default=None)
    p.add_argument("--window-s", type=float, default=1.0)
    p.add_argument(
        "--profile",
        default=None,
        metavar="START,STOP",
        help="profile these training steps (computation vs communication in the report)",
    )
    p.add_argument(
        "--compression",
        choices=("none", "fp16"),
        default="none",
        help="horovod: gradient compression of hvd.DistributedOptimizer",
    )
    p.add_argument(
        "--slow-rank",
        type=int,
        default=None,
        help="(tests) this rank sleeps after every step: a straggler the others wait for",
    )
    p.add_argument("--slow-ms", type=float, default=20.0, help="(tests) ... this many milliseconds")
    p.add_argument("--kill-rank", type=int, default=None, help="(tests) this rank kills itself ...")
    p.add_argument(
        "--kill-at-step", type=int, default=5, help="(tests) ... at this step of epoch 1"
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    from advisor.launch import setup_devices

    args = parse(argv)
    role = setup_devices()
    import advisor

    if role.legacy_keras:
        try:
            import tf_keras as keras
        except ImportError:  # TensorFlow <= 2.15 (e.g. Horovod's 2.13): tf.keras is Keras 2
            from tensorflow import keras
    else:
        import keras
    x, y = synthetic(args.samples, args.features, args.classes)
    options: dict[str, Any] = {}
    if args.profile:
        start, stop = (int(v) for v in args.profile.split(","))
        options["profile_steps"] = (start, stop)
    callbacks: list[Any] = [
        advisor.AdvisorCallback(
            runs_dir=args.runs_dir,
            name=f"{role.strategy}-{role.workers}",
            tags=role.tags(),
            window_seconds=args.window_s,
            warmup_steps=5,
            log_every_seconds=None,
            **options,
        )
    ]
    if args.slow_rank is not None and args.slow_rank == role.rank:
        callbacks.append(_sleeper(keras, args.slow_ms / 1000.0))
    if args.kill_rank is not None and args.kill_rank == role.rank:
        callbacks.append(_killer(keras, args.kill_at_step))
    replicas = role.workers
    strategy = role.tf_strategy() if role.strategy != "jax" else None
    data: Any
    if role.strategy in ("jax", "horovod"):
        # Every process feeds its own shard with the per-replica batch.
        part = role.shard(args.samples)
        data = {"x": x[part], "y": y[part], "batch_size": args.batch_per_replica}
    else:
        import tensorflow as tf

        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(args.batch_per_replica * replicas)
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.DATA
        )
        data = {"x": ds.with_options(options).prefetch(2)}
    if role.strategy == "horovod":
        if keras.__name__ == "tf_keras":  # TF >= 2.16: Horovod's callbacks import `keras.backend`
            sys.modules["keras"] = keras
        import horovod.tensorflow.keras as hvd

        hvd.init()
        model = build(keras, args.features, args.hidden, args.classes)
        legacy = getattr(keras.optimizers, "legacy", keras.optimizers)
        compression = hvd.Compression.fp16 if args.compression == "fp16" else hvd.Compression.none
        opt = hvd.DistributedOptimizer(legacy.Adam(1e-3), compression=compression)
        callbacks.insert(0, hvd.callbacks.BroadcastGlobalVariablesCallback(0))
        _compile(keras, model, opt)
    elif strategy is not None:
        with strategy.scope():
            model = build(keras, args.features, args.hidden, args.classes)
            _compile(keras, model, keras.optimizers.Adam(1e-3))
    else:
        model = build(keras, args.features, args.hidden, args.classes)
        _compile(keras, model, keras.optimizers.Adam(1e-3))
    model.fit(**data, epochs=args.epochs, callbacks=callbacks, verbose=0)


def _compile(keras: Any, model: Any, optimizer: Any) -> None:
    model.compile(
        optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )


def _sleeper(keras: Any, seconds: float) -> Any:
    """A callback that sleeps after every training step on this rank only: a straggler (tests)."""
    import time

    class Sleeper(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            time.sleep(seconds)

    return Sleeper()


def _killer(keras: Any, at_step: int) -> Any:
    """A callback that SIGKILLs its own process mid-epoch: a worker dying for real (tests)."""

    class Killer(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if batch >= at_step:
                os.kill(os.getpid(), signal.SIGKILL)

    return Killer()


if __name__ == "__main__":
    main()
