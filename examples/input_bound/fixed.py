"""The same job as ``naive.py`` with the input pipeline repaired.

The decode runs in TensorFlow ops (no Python per element), the map is parallel with AUTOTUNE,
the decoded data is cached before the (random) shuffle, and a prefetch at the end overlaps input
with training.
"""

from __future__ import annotations

import argparse
from typing import Any

try:
    from .naive import BATCH_SIZE, NUM_SAMPLES, build_model, synthetic_arrays
except ImportError:  # run as a script
    from naive import BATCH_SIZE, NUM_SAMPLES, build_model, synthetic_arrays  # type: ignore[no-redef]


def make_dataset(n: int = NUM_SAMPLES) -> Any:
    import tensorflow as tf

    x, y = synthetic_arrays(n)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.map(lambda xi, yi: (tf.identity(xi), yi), num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.cache().shuffle(n, seed=0).batch(BATCH_SIZE)
    return ds.prefetch(tf.data.AUTOTUNE)


def train(callbacks: list[Any] | None = None, epochs: int = 3, verbose: int = 0) -> Any:
    model = build_model()
    model.fit(
        make_dataset(), epochs=epochs, callbacks=callbacks or [], verbose=verbose, shuffle=False
    )
    return model


def main(argv: list[str] | None = None) -> None:
    import advisor

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--runs-dir", default=None)
    parser.add_argument("--instance-type", default="g5.xlarge")
    args = parser.parse_args(argv)
    cb = advisor.AdvisorCallback(
        runs_dir=args.runs_dir,
        instance_type=args.instance_type,
        name="input-bound-fixed",
        window_seconds=2.0,
        baseline="end",
    )
    train([cb], epochs=args.epochs, verbose=2)


if __name__ == "__main__":
    main()
