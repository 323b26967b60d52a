"""Write the real runs that tests/faults/corpus/real holds (the range mutations start from them).

    PYTHONPATH=. python tests/faults/real_runs.py tests/faults/corpus/real

Each is a real fit of a tiny Keras model with ``AdvisorCallback`` at its defaults but for short
windows: one on in-memory arrays with validation, one on tf.data with a profile captured and
summarised (a trace record and its ``advisor-summary.json``). The run directories are copied
as written, with their ids made stable.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path


def _fit(store: Path, name: str, profile: bool) -> Path:
    import keras
    import numpy as np
    import tensorflow as tf

    import advisor

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2048, 16)).astype("float32")
    y = rng.normal(size=(2048, 1)).astype("float32")
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(optimizer="adam", loss="mse")
    extra = {"profile_steps": (5, 30)} if profile else {}
    cb = advisor.AdvisorCallback(
        runs_dir=store, name=name, window_seconds=0.2, log_every_seconds=None, **extra
    )
    if profile:
        data = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).prefetch(2)
        model.fit(data, epochs=3, callbacks=[cb], verbose=0)
    else:
        model.fit(x, y, batch_size=32, epochs=3, validation_split=0.2, callbacks=[cb], verbose=0)
    return Path(cb.run_path)


def main() -> None:
    target = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        for name, profile in (("arrays", False), ("tfdata-profiled", True)):
            run = _fit(Path(tmp), name, profile)
            shutil.rmtree(target / name, ignore_errors=True)
            shutil.copytree(run, target / name)


if __name__ == "__main__":
    main()
