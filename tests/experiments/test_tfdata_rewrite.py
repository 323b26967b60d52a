"""Rebuilding a tf.data pipeline with one change: same elements, the change really made, the
user's dataset untouched (no training here)."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from advisor.experiments.feeds.rewrite import (  # noqa: E402
    RewriteError,
    cache_after,
    parallel_interleaves,
    parallel_maps,
    rebuild,
)
from advisor.probes.tfdata import inspect_dataset  # noqa: E402

CALLS: list[int] = []


def _count(x):
    CALLS.append(1)
    return x


def counted(x):
    y = tf.py_function(_count, [x], tf.int64)
    y.set_shape([])
    return y


def _stages(ds, kind):
    return [s for s in inspect_dataset(ds)["stages"] if s["kind"] == kind]


def _values(ds):
    return [int(v) for v in ds.as_numpy_iterator()]


@pytest.mark.parametrize("calls", [None, 1])
def test_a_sequential_map_becomes_parallel_and_keeps_its_order(calls):
    ds = tf.data.Dataset.range(20).map(lambda x: x * 2, num_parallel_calls=calls).batch(4)
    stage = _stages(ds, "map")[0]
    rebuilt = rebuild(ds, parallel_maps({stage["node"]}))
    new = _stages(rebuilt, "map")[0]
    assert new["parallel"] is True and new["num_parallel_calls"] == -1
    assert [list(b) for b in rebuilt.as_numpy_iterator()] == [
        list(b) for b in ds.as_numpy_iterator()
    ]
    assert _stages(ds, "map")[0]["parallel"] is False  # the user's pipeline is unchanged


@pytest.mark.parametrize("calls", [None, 1])
def test_a_sequential_interleave_becomes_parallel_with_the_same_elements(calls):
    ds = tf.data.Dataset.range(3).interleave(
        lambda i: tf.data.Dataset.range(i * 10, i * 10 + 4),
        cycle_length=3,
        num_parallel_calls=calls,
    )
    stage = _stages(ds, "interleave")[0]
    rebuilt = rebuild(ds, parallel_interleaves({stage["node"]}))
    assert _stages(rebuilt, "interleave")[0]["parallel"] is True
    assert _values(rebuilt) == _values(ds)  # deterministic by default: the same order too


def test_a_cache_after_a_map_serves_the_second_pass_from_memory():
    ds = tf.data.Dataset.range(8).map(counted).batch(4)
    stage = _stages(ds, "map")[0]
    rebuilt = rebuild(ds, cache_after(stage["node"], None))
    CALLS.clear()
    first = _values(rebuilt.unbatch())
    assert len(CALLS) == 8
    second = _values(rebuilt.unbatch())  # a new iterator of the same dataset: the cache is shared
    assert first == second == list(range(8)) and len(CALLS) == 8
    assert rebuilt.cardinality() == ds.cardinality()


def test_a_bounded_cache_repeats_its_elements_forever():
    ds = tf.data.Dataset.range(100).map(counted).batch(5)
    stage = _stages(ds, "map")[0]
    rebuilt = rebuild(ds, cache_after(stage["node"], 10))
    CALLS.clear()
    batches = [list(b) for b in rebuilt.take(6).as_numpy_iterator()]
    assert batches[:2] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]] and batches[2:4] == batches[:2]
    assert len(CALLS) <= 11  # the first ten elements (and at most one read ahead)


def test_options_survive_the_rebuild():
    options = tf.data.Options()
    options.autotune.enabled = False
    ds = tf.data.Dataset.range(4).map(lambda x: x + 1).with_options(options)
    rebuilt = rebuild(ds, parallel_maps({_stages(ds, "map")[0]["node"]}))
    assert rebuilt.options().autotune.enabled is False


def test_nothing_to_change_and_unserializable_pipelines():
    ds = tf.data.Dataset.range(4).batch(2)
    assert rebuild(ds, parallel_maps({"no such node"})) is None
    with pytest.raises(RewriteError, match="not a tf.data.Dataset"):
        rebuild(np.arange(3), parallel_maps(set()))
