"""Under a strategy that spans workers, the advisor never reads a sync-on-read variable.

Reading one (a metric's count) all-reduces it across the workers. The advisor reads at moments
of its own (a throughput window's time is up), which differ between workers, so such a read on
one worker paired with training's next collective on the other and broke a real two-worker
MultiWorkerMirroredStrategy sweep ("Collective instance 132 expected ... data_type 9 but got
data_type 1", tests/launch/test_sweep_real.py under a heavily loaded host). Here: a one-worker
MultiWorkerMirroredStrategy in this process (a real strategy, no cluster), beside the default one.
"""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from advisor.collectors.session import Session  # noqa: E402


class _Model:
    def __init__(self, strategy):
        self.distribute_strategy = strategy
        with strategy.scope():
            self.count = tf.Variable(
                64.0,
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.SUM,
            )
            self.mirrored = tf.Variable(3, dtype=tf.int64)


def _session(model) -> Session:
    session = Session.__new__(Session)
    session.model = model
    return session


def test_sync_on_read_is_not_read_across_workers():
    model = _Model(tf.distribute.MultiWorkerMirroredStrategy())
    session = _session(model)
    assert session._read_is_collective(model.count)
    assert not session._read_is_collective(model.mirrored)  # a mirrored variable reads locally


def test_the_same_variable_is_read_on_one_worker():
    model = _Model(tf.distribute.get_strategy())
    session = _session(model)
    assert not session._read_is_collective(model.count)
    assert int(model.count.numpy()) == 64
