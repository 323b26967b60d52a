"""Regenerate the committed profile fixtures (run from the repository root; ~20 s on 2 cores).

    python tests/data/traces/make_fixture.py

``input_bound/``: 30 marked training steps of a tiny model whose tf.data pipeline sleeps 8 ms per
batch in a ``tf.py_function`` (no prefetch), captured with plain ``tf.profiler`` — no advisor — as
any TensorBoard user would. The session folder and the host file get fixed names so that tests
and docs can name them. The xplane is ~0.3 MB.

``gpu_h200_jax/`` is not made here: it holds XProf's tool outputs and the advisor's timeline
analysis (``events.json``) of the float32 capture that ``scripts/gpu_trace_check.sh`` took on an
NVIDIA H200 (Keras on JAX 0.11, XProf 2.24.2), copied from that script's ``$OUT``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = Path(__file__).resolve().parent
SESSION = "2026_01_01_00_00_00"
STEPS = 30


def input_bound(target: Path) -> None:
    import keras
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.random((640, 16), dtype=np.float32)
    y = rng.random((640, 1), dtype=np.float32)

    def slow_decode(a, b):
        time.sleep(0.008)
        return a, b

    def load(a, b):
        a, b = tf.py_function(slow_decode, [a, b], [tf.float32, tf.float32])
        return tf.ensure_shape(a, [None, 16]), tf.ensure_shape(b, [None, 1])

    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16).map(load).repeat()
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile("adam", "mse")
    model.fit(ds, steps_per_epoch=3, epochs=1, verbose=0)  # trace and warm up outside the profile

    class Marked(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.marker = tf.profiler.experimental.Trace("train", step_num=batch + 1, _r=1)
            self.marker.__enter__()

        def on_train_batch_end(self, batch, logs=None):
            self.marker.__exit__(None, None, None)

    with tempfile.TemporaryDirectory() as tmp:
        tf.profiler.experimental.start(tmp)
        model.fit(ds, steps_per_epoch=STEPS, epochs=1, verbose=0, callbacks=[Marked()])
        tf.profiler.experimental.stop()
        produced = sorted(Path(tmp).rglob("*.xplane.pb"))
        assert len(produced) == 1, produced
        if target.exists():
            shutil.rmtree(target)
        session = target / "plugins" / "profile" / SESSION
        session.mkdir(parents=True)
        fixture = session / "fixture.xplane.pb"
        shutil.copyfile(produced[0], fixture)
    print(f"wrote {fixture} ({fixture.stat().st_size} bytes)")


if __name__ == "__main__":
    input_bound(HERE / "input_bound")
    sys.exit(0)
