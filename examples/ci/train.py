"""A short training run for CI (docs/ci.md): a few seconds of a small Keras model with the callback.

    python examples/ci/train.py --epochs 2 [--name ci-abc1234] [--slow-input-ms 0]

Synthetic data through a tf.data pipeline (parallel map, prefetch), one ``AdvisorCallback`` run in
``$ADVISOR_RUNS_DIR``. In your project, this is your own training script with a CI-sized
``--epochs`` / ``--steps``: what matters is that ``fit`` runs with ``advisor.AdvisorCallback()``.
``--slow-input-ms`` (or ``$CI_SLOW_INPUT_MS``) adds a per-batch delay to the input: a regression
for the gate to catch (tests/test_ci_recipe.py does).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--name", default="ci")
    p.add_argument(
        "--slow-input-ms",
        type=float,
        default=float(os.environ.get("CI_SLOW_INPUT_MS", "0")),
        help="sleep this long per batch in the input (default $CI_SLOW_INPUT_MS or 0)",
    )
    args = p.parse_args(argv)

    import keras
    import numpy as np
    import tensorflow as tf

    import advisor

    rng = np.random.default_rng(0)
    x = rng.normal(size=(args.samples, 32)).astype("float32")
    y = (x[:, :1] > 0).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(args.batch)
    if args.slow_input_ms > 0:
        delay = args.slow_input_ms / 1000.0

        def slow(xb: np.ndarray, yb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            time.sleep(delay)
            return xb, yb

        # one batch after the other: the delay is the input's cost per batch, whatever the cores
        ds = ds.map(lambda a, b: tf.numpy_function(slow, [a, b], (tf.float32, tf.float32)))
    ds = ds.map(
        lambda a, b: (tf.ensure_shape(a, [None, 32]), tf.ensure_shape(b, [None, 1])),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    ds = ds.prefetch(tf.data.AUTOTUNE)
    model = keras.Sequential(
        [
            keras.Input((32,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", keras.losses.BinaryCrossentropy(from_logits=True))
    callback = advisor.AdvisorCallback(
        name=args.name,
        window_seconds=1.0,
        log_every_seconds=None,
        tags={"git_sha": os.environ.get("GITHUB_SHA", "local")[:12]},
    )
    model.fit(ds, epochs=args.epochs, verbose=0, callbacks=[callback])
    print(f"run {callback.writer.run_id} in {callback.writer.runs_dir}")


if __name__ == "__main__":
    main()
