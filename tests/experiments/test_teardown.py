"""A measured segment's input is torn down before the next segment starts (baseline and what-if).

A ``fit`` stopped mid-epoch leaves its tf.data iterator to the garbage collector, and its
prefetch thread goes on producing batches meanwhile: on a CPU-bound pipeline the next segment
(the cached input's, in the baseline) ran at half its speed beside it (36k against 67–73k
samples/s on the heavy-augmentation pipeline, 2 CPUs). ``tear_down`` destroys it at once.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

pytestmark = pytest.mark.slow

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from advisor.experiments.cleanup import own_garbage, tear_down
from advisor.experiments.segments import fit_segment  # noqa: E402

FEATURES = 4


def _model() -> keras.Model:
    model = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def _counted_input(calls: list[float]) -> tf.data.Dataset:
    """An endless input whose every element runs Python (and is counted), with a prefetch buffer
    far larger than a segment reads: left alone, its thread keeps filling it."""

    def produce(i):
        calls.append(time.perf_counter())
        return np.full(FEATURES, float(i), "float32")

    def element(i):
        x = tf.py_function(produce, [i], tf.float32)
        x.set_shape([FEATURES])
        return x, tf.reduce_sum(x, keepdims=True)

    return tf.data.Dataset.range(10**9).map(element).batch(4).prefetch(2000)


def _segment(model: keras.Model, dataset: tf.data.Dataset) -> None:
    segment = fit_segment(
        model,
        {"x": dataset},
        finite=False,
        warm=2,
        seconds=0.2,
        min_steps=5,
        deadline=time.perf_counter() + 30,
        what="the counted input",
        error=RuntimeError,
    )
    assert segment is not None and segment.steps >= 5


def _produced_within(calls: list[float], seconds: float) -> int:
    before = len(calls)
    time.sleep(seconds)
    return len(calls) - before


@pytest.mark.parametrize("torn_down", [False, True])
def test_a_stopped_segments_input_stops_working_only_when_torn_down(torn_down):
    model, calls = _model(), []
    with own_garbage():
        _segment(model, _counted_input(calls))
        if torn_down:
            tear_down("tensorflow")
        produced = _produced_within(calls, 0.5)
    if torn_down:
        assert produced <= 2, produced  # at most the element in flight when it was destroyed
    else:  # the control: the stopped fit's iterator is still at work
        assert produced > 20, produced
