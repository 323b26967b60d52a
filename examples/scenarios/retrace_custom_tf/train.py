"""A custom TensorFlow loop whose ``tf.function`` step is traced again at every call: the step
counter goes in as a Python int (for a learning-rate warm-up), and every new Python value traces
the function again (TensorFlow's own warning says "triggered tf.function retracing").

Tracking the loop with ``advisor.track`` counts each trace with its cause ("step: 41 → 42"), its
seconds move into the ``compile`` category of the time budget, and C452 names the function.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

BATCH = 128
WIDTH = 256


def main() -> None:
    import tensorflow as tf

    import advisor

    x, y = common.arrays(BATCH * 8)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True).cache()
    init = tf.keras.initializers.GlorotUniform(seed=0)
    w1 = tf.Variable(init((common.FEATURES, WIDTH)))
    w2 = tf.Variable(init((WIDTH, common.CLASSES)))

    @tf.function
    def train_step(features: tf.Tensor, labels: tf.Tensor, step: int) -> tf.Tensor:
        lr = 0.01 * min(1.0, (step + 1) / 100)  # a warm-up computed from a Python int
        with tf.GradientTape() as tape:
            logits = tf.nn.relu(features @ w1) @ w2
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            )
        grads = tape.gradient(loss, [w1, w2])
        for var, grad in zip([w1, w2], grads):
            var.assign_sub(lr * grad)
        return loss

    step = 0
    t0 = time.perf_counter()
    with advisor.track(batch_size=BATCH, backend="tensorflow") as run:
        while time.perf_counter() - t0 < common.SECONDS:
            for features, labels in ds:
                train_step(features, labels, step)
                step += 1
                run.step()
            run.epoch()
    print(f"loop: {time.perf_counter() - t0:.2f} s, {step} steps")


if __name__ == "__main__":
    main()
