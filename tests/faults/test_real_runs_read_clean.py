"""The semantic checks of the reader (advisor/store/validate.py) raise no doubt about runs that
real fits write: several fits of a tiny Keras model, in the shapes that make windows and epochs
awkward (a partial last batch, several steps per execution, validation, a tf.data input, early
stopping, short windows, an input baseline trained after the fit), each read back with no
problem at all."""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import advisor  # noqa: E402
from advisor.store.reader import RunReader  # noqa: E402
from advisor.store.schema import BaselineRecord, EpochRecord, WindowRecord  # noqa: E402

pytestmark = pytest.mark.slow  # trains a model


def _data(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 8)).astype("float32"), rng.normal(size=(n, 1)).astype("float32")


def _model(spe: int) -> keras.Model:
    model = keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=spe)
    return model


FITS = {
    "partial-batch": (1, {"batch_size": 64, "epochs": 3}),
    "steps-per-execution-4": (4, {"batch_size": 32, "epochs": 3}),
    "validation": (1, {"batch_size": 32, "epochs": 3, "validation_split": 0.25}),
    "early-stopping": (
        2,
        {
            "batch_size": 32,
            "epochs": 8,
            "validation_split": 0.2,
            "callbacks": [keras.callbacks.EarlyStopping(patience=0, min_delta=10.0)],
        },
    ),
    "tf-data": (1, {"epochs": 3}),
    "baseline-at-the-end": (1, {"batch_size": 32, "epochs": 2}),  # trains more after the fit
}


@pytest.mark.parametrize("name", sorted(FITS))
def test_a_real_fit_reads_back_without_doubt(runs_dir, name):
    spe, kwargs = FITS[name]
    x, y = _data(1000)
    extra = {"baseline": "end"} if name == "baseline-at-the-end" else {}
    cb = advisor.AdvisorCallback(
        runs_dir=runs_dir, window_seconds=0.02, warmup_steps=2, log_every_seconds=None, **extra
    )
    kwargs = dict(kwargs)
    callbacks = [cb, *kwargs.pop("callbacks", [])]
    if name == "tf-data":
        data = tf.data.Dataset.from_tensor_slices((x, y)).batch(48)
        _model(spe).fit(data, callbacks=callbacks, verbose=0, **kwargs)
    else:
        _model(spe).fit(x, y, callbacks=callbacks, verbose=0, **kwargs)
    run = RunReader(cb.run_path).read()
    assert run.problems == [] and run.warnings == []
    assert run.status == "finished"
    windows, epochs = run.of_type(WindowRecord), run.of_type(EpochRecord)
    assert len(windows) > len(epochs) >= 1  # several windows an epoch: the checks had work to do
    if extra:
        (baseline,) = run.of_type(BaselineRecord)
        assert baseline.skipped is None and baseline.error is None, baseline
