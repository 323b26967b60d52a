"""The advisor's own measurements must not make TensorFlow retrace: a numpy-fed fit whose
baseline measures the input alone in every round once built a graph loop (and a dataset) per
data-only segment, and TensorFlow warned "triggered tf.function retracing" on the user's stderr.
One loop per process now pulls every segment (``feeds.tfdata.shared_puller``)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

pytestmark = pytest.mark.slow

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import advisor  # noqa: E402
from advisor.experiments.feeds import tfdata  # noqa: E402


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _arrays_baseline(rounds: int) -> tuple[list[str], object]:
    """A small model on arrays, measured by the plain baseline (cached, real, data-only) in
    ``rounds`` rounds; what TensorFlow logged meanwhile."""
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(512, 8)).astype("float32"), rng.normal(size=(512, 1)).astype("float32")
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    logger = logging.getLogger("tensorflow")
    lines = Lines()
    logger.addHandler(lines)
    try:
        result = advisor.measure_input(
            model, (x, y), steps=2 * rounds, batch_size=32, seconds=0.2 * rounds, rounds=rounds
        )
    finally:
        logger.removeHandler(lines)
    return lines.lines, result


def test_a_numpy_fed_baseline_does_not_make_tensorflow_retrace(monkeypatch):
    loop = tfdata.shared_puller()._pull
    before = loop.experimental_get_tracing_count()
    made = []
    init = tfdata.GraphPuller.__init__

    def counted(self):
        made.append(self)
        init(self)

    monkeypatch.setattr(tfdata.GraphPuller, "__init__", counted)
    logged, result = _arrays_baseline(rounds=8)
    assert not made  # no loop of its own per segment (each one traced again)
    measured = [r for r in result.round_rates["data_only"] if r is not None]
    assert len(measured) >= 3  # the input alone was measured, round after round
    # one trace for the arrays' batch structure, whatever the number of segments
    assert loop.experimental_get_tracing_count() - before <= 1
    assert not [line for line in logged if "retracing" in line], logged
