"""The fastest rate a baseline record may hold, per arm. A training step takes at least a
microsecond; pulling a batch from an input alone (data-only) can take less: an in-memory
sequence that returns array views (a tf_keras ``Sequence`` is read by index, without workers)
gives a batch in about half a microsecond. Such a data-only rate (3.7e7 samples/s of 32-sample
batches, seen in the backend matrix under tf_keras) is a real measurement: it is written and read,
while a rate beyond what its arm can reach is left out by the writer and refused by the reader.
No training here: the data-only feed of a Python sequence needs no framework."""

from __future__ import annotations

import time

import numpy as np

from advisor.experiments.baseline.result import InputBaseline
from advisor.experiments.feeds.python import pydataset_feeds
from advisor.store.ranges import RunBounds, baseline_rate_ceiling

ROWS, BATCH = 200, 32
X = np.zeros((ROWS, 4), "float32")
Y = np.zeros((ROWS, 1), "float32")


class ArrayViews:
    """A sequence as the backend matrix writes it for tf_keras: batches are views of arrays."""

    def __len__(self) -> int:
        return -(-ROWS // BATCH)

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        rows = slice(i * BATCH, (i + 1) * BATCH)
        return X[rows], Y[rows]


def _doubt(record) -> str | None:
    now = time.time()
    return RunBounds(created=now - 60, end=now + 60, now=now).doubt(record)


def test_a_data_only_rate_of_an_in_memory_sequence_is_written_and_read():
    feeds = pydataset_feeds(ArrayViews(), backend="jax")  # jax: the cached feed is plain Python
    assert feeds.data_only is not None
    segment = feeds.data_only(1, 0.05, 2, time.perf_counter() + 30)
    assert segment is not None and segment.steps > 0
    rate = segment.rate(BATCH)
    result = InputBaseline(input_kind="pydataset", batch_size=BATCH, steps=40, warmup_steps=1)
    result.real_samples_per_s, result.cached_samples_per_s = 5_000.0, 9_000.0
    result.data_only_samples_per_s = rate
    result.round_rates = {"data_only": [rate, rate]}
    record = result.to_record("end")
    # whatever this host measured (about 5e7 samples/s on the 2-core VM: above a batch a
    # microsecond), it is kept and the reader reads the record
    assert (
        record.data_only_samples_per_s == rate and record.data_only_rounds == [round(rate, 3)] * 2
    )
    assert _doubt(record) is None


def test_a_rate_beyond_its_arm_is_not_written_and_the_rest_is_read():
    """3.7e7 samples/s of 32-sample batches is a training step of 0.86 µs: no training arm runs
    that fast; 1e12 is a batch in 32 ps: no input does."""
    result = InputBaseline(input_kind="pydataset", batch_size=BATCH, steps=40, warmup_steps=2)
    result.real_samples_per_s, result.cached_samples_per_s = 3.73e7, 9_000.0
    result.data_only_samples_per_s = 1e12
    result.round_rates = {"real": [3.73e7, 4_000.0], "data_only": [1e12, 3.73e7]}
    record = result.to_record("auto")
    assert record.real_samples_per_s is None and record.real_rounds == [None, 4_000.0]
    assert record.data_only_samples_per_s is None and record.data_only_rounds == [None, 3.73e7]
    assert record.cached_samples_per_s == 9_000.0
    assert _doubt(record) is None


def test_the_reader_refuses_a_rate_beyond_its_arm():
    result = InputBaseline(input_kind="numpy", batch_size=BATCH, steps=40, warmup_steps=2)
    result.real_samples_per_s, result.cached_samples_per_s = 5_000.0, 9_000.0
    record = result.to_record("auto")
    too_fast_step = record.model_copy(update={"cached_samples_per_s": 3.73e7})
    assert "cached_samples_per_s (3.73e+07) is more than a batch a microsecond" in (
        _doubt(too_fast_step) or ""
    )
    too_fast_pull = record.model_copy(update={"data_only_samples_per_s": 1e12})
    assert "is more than a batch in 10 ns" in (_doubt(too_fast_pull) or "")
    assert baseline_rate_ceiling("data_only_samples_per_s", BATCH) == BATCH / 1e-8
    assert baseline_rate_ceiling("real_samples_per_s", None) == 2**31 / 1e-6
