"""A windowed LSTM forecaster on ``timeseries_dataset_from_array``, mapped, as in the Keras
weather-forecasting example.

A multivariate series (14 features, hourly, random of realistic shape) is cut into windows of
the past 10 days and the day ahead, every hour, by
``keras.utils.timeseries_dataset_from_array``; a ``map`` normalizes each batch of windows and
splits it into the inputs (one reading in twelve) and the temperature one day ahead. The
windows are gathered again at every epoch, on a small LSTM's step: the input costs a large share
of step time. The fix that works is ``.cache()`` after the map (the windows are deterministic);
the default what-if must measure it and show it as the measured fix, not a parallel map or the
tf.data options (the pipeline is parallel already).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

FEATURES = 14
PAST = 240  # hours of history in a window
AHEAD = 24  # hours ahead to forecast
RATE = 12  # one reading in twelve: a window holds PAST // RATE time steps
BATCH = 256


def dataset(series):
    import keras
    import tensorflow as tf

    mean, std = series.mean(axis=0), series.std(axis=0)
    windows = keras.utils.timeseries_dataset_from_array(
        series, None, sequence_length=PAST + AHEAD, batch_size=BATCH
    )

    def split(window):
        window = (window - mean) / std
        past = window[:, :PAST:RATE, :]  # one reading in RATE: the model sees PAST // RATE steps
        return past, window[:, -1, 1:2]  # temperature, a day ahead

    return windows.map(split, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def model():
    import keras

    inputs = keras.Input((PAST // RATE, FEATURES))
    outputs = keras.layers.Dense(1)(keras.layers.LSTM(16)(inputs))
    forecaster = keras.Model(inputs, outputs)
    forecaster.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    return forecaster


def main() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    hours = 60_000
    trend = np.sin(np.arange(hours)[:, None] * 2 * np.pi / 24.0)
    series = (trend + 0.3 * rng.normal(size=(hours, FEATURES))).astype("float32")
    common.fit(model(), dataset(series), seconds=common.family_seconds(150))


if __name__ == "__main__":
    main()
