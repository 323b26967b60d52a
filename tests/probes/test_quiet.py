"""The advisor's hooks keep TensorFlow's retracing notice out of the user's log (and only it)."""

from __future__ import annotations

import logging

import pytest

tf = pytest.importorskip("tensorflow")

from advisor.collectors.collector import Collector, Guard  # noqa: E402
from advisor.probes.quiet import quiet_tracing  # noqa: E402


class _Seen(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def tf_log():
    logger, handler = logging.getLogger("tensorflow"), _Seen()
    logger.addHandler(handler)
    yield handler.messages
    logger.removeHandler(handler)


class _Tracing(Collector):
    """Does what the FLOPs probe and the measurement feeds do once per fit or segment: a
    ``tf.function`` made anew from the same code, traced once."""

    name = "tracing"

    def on_train_begin(self) -> None:
        for _ in range(7):

            @tf.function(autograph=False)
            def step(x):
                return x * 2

            step(tf.constant(1.0))
        logging.getLogger("tensorflow").warning("another TensorFlow warning")


def test_outside_the_advisor_the_notice_is_printed(tf_log):
    """The control: the pattern triggers TensorFlow's notice when nothing filters it (its own
    code: TensorFlow stops warning about a function after a few notices)."""
    for _ in range(7):

        @tf.function(autograph=False)
        def control(x):
            return x * 2

        control(tf.constant(1.0))
    assert any("triggered tf.function retracing" in m for m in tf_log)


def test_the_guard_drops_the_notice_and_nothing_else(tf_log):
    Guard([_Tracing()]).call("on_train_begin")
    assert not any("retracing" in m for m in tf_log), tf_log
    # TensorFlow did decide to warn (its detector counts the notices it logged) — the filter
    # dropped it.
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    (step_code,) = [
        c for c in _Tracing.on_train_begin.__code__.co_consts if getattr(c, "co_name", "") == "step"
    ]
    detectors = polymorphic_function._frequent_tracing_detector_manager._detectors
    assert detectors[step_code]._total_warning_count >= 1
    assert "another TensorFlow warning" in tf_log
    assert logging.getLogger("tensorflow").filters == []  # removed after the hook


def test_quiet_tracing_is_undone_when_the_block_raises():
    with pytest.raises(RuntimeError), quiet_tracing():
        raise RuntimeError("a collector failed")
    assert logging.getLogger("tensorflow").filters == []
