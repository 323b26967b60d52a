"""How a what-if segment is timed on a finite input whose epochs are longer than the segment.

Every segment is a nested ``fit`` that starts a new epoch: a new iterator, which for a pipeline
that opens files costs time before the first step. A segment stopped inside that epoch used to
be timed as if the epoch were whole — its start weighed against a handful of steps (the
what-if's unchanged arm read 20% slow on the tf.data guide's pipeline, and every cache 17–21%
high). Now the partial epoch is timed from its warm-up, and the epoch's start is charged at its
share: measured steps ÷ steps in an epoch. The scenario is decisive: the epoch's start sleeps
2 s, its 60 steps take a few milliseconds each."""

from __future__ import annotations

import time

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from advisor.experiments.segments import fit_segment  # noqa: E402
from advisor.experiments.whatif.trials import unchanged_trial  # noqa: E402

OPEN_S = (
    2.0  # the epoch's start: "opening the file" (a step is ~3 ms: OPEN_S / STEPS is ten of them)
)
STEPS = 60  # steps in an epoch
FEATURES = 4


def opening_dataset() -> tf.data.Dataset:
    """A finite pipeline whose every new iterator sleeps OPEN_S before its first batch."""

    def generator():
        time.sleep(OPEN_S)
        rng = np.random.default_rng(0)
        for _ in range(STEPS):
            time.sleep(0.002)
            yield rng.normal(size=(8, FEATURES)).astype("float32"), np.zeros((8,), "int64")

    signature = (tf.TensorSpec((8, FEATURES), tf.float32), tf.TensorSpec((8,), tf.int64))
    data = tf.data.Dataset.from_generator(generator, output_signature=signature)
    return data.apply(tf.data.experimental.assert_cardinality(STEPS))


def model() -> keras.Model:
    m = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(2)])
    m.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def segment(m: keras.Model, epoch_length: int | None):
    return fit_segment(
        m,
        {"x": opening_dataset()},
        finite=True,
        warm=2,
        seconds=0.05,
        min_steps=10,
        deadline=time.perf_counter() + 60,
        what="test",
        error=RuntimeError,
        whole_epochs=True,
        epoch_length=epoch_length,
    )


@pytest.mark.slow
def test_a_segment_inside_a_long_epoch_charges_the_epochs_start_at_its_share():
    m = model()
    m.fit(opening_dataset(), epochs=1, verbose=0)  # compiled: the segments time steps, not tracing

    plain = segment(m, None)
    assert plain is not None and 10 <= plain.steps < STEPS  # stopped inside its first epoch
    # The partial epoch is not timed as a whole one: its 2 s start is not in it.
    assert plain.restart == 0.0 and plain.seconds < OPEN_S, plain

    charged = segment(m, STEPS)
    assert charged is not None and 10 <= charged.steps < STEPS
    share = charged.steps / STEPS
    # at least the sleep's share (the sleep is a floor; a busy host only adds to the start)
    assert charged.restart >= 0.9 * OPEN_S * share, (charged, share)
    # and the charge is all the difference: without it the charged segment's rate is the plain one's
    # (within what a busy host changes between two segments of a few milliseconds a step)
    stepping = (charged.seconds - charged.restart) / charged.steps
    assert stepping < OPEN_S / STEPS  # far below what a whole-epoch timing would read per step


def test_a_finite_inputs_epoch_length_is_known_for_each_kind():
    m = model()
    data = tf.data.Dataset.from_tensor_slices(
        (np.zeros((100, FEATURES), "float32"), np.zeros(100, "int64"))
    )
    batched = unchanged_trial(
        m, "tf.data", dataset=data.batch(8), batch_size=8, steps_per_epoch=None, spe=1
    )
    assert (
        batched.finite and batched.epoch_length == 13
    )  # 100 rows in batches of 8: 12 full and one short
    unknown = data.batch(8).filter(lambda x, y: True)  # tf.data cannot tell its length
    told = unchanged_trial(m, "tf.data", dataset=unknown, batch_size=8, steps_per_epoch=11, spe=1)
    assert told.epoch_length == 11  # the caller's steps_per_epoch (or, in training, the steps seen)
    assert (
        unchanged_trial(
            m, "tf.data", dataset=unknown, batch_size=8, steps_per_epoch=None, spe=1
        ).epoch_length
        is None
    )
    endless = unchanged_trial(
        m, "tf.data", dataset=data.batch(8).repeat(), batch_size=8, steps_per_epoch=5, spe=1
    )
    assert not endless.finite and endless.epoch_length is None and endless.epoch_steps == 5
    rows = {
        "x": np.zeros((100, FEATURES), "float32"),
        "y": np.zeros(100, "int64"),
        "batch_size": 32,
    }
    assert (
        unchanged_trial(
            m, "numpy", arrays=rows, batch_size=32, steps_per_epoch=None, spe=1
        ).epoch_length
        == 4
    )

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return 7

        def __getitem__(self, index):
            return np.zeros((4, FEATURES), "float32"), np.zeros(4, "int64")

    assert (
        unchanged_trial(
            m, "pydataset", py_dataset=Batches(), batch_size=4, steps_per_epoch=None, spe=1
        ).epoch_length
        == 7
    )
