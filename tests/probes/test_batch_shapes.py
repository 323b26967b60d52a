"""The shapes of the first batches, read beside training when a tf.data spec leaves dimensions
open: windows of one length pass G504, padded batches of changing length fail it."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from advisor.analysis.pipeline_advice import pipeline_facts, seen_shape_facts  # noqa: E402
from advisor.collectors.pipeline import describe_input, reads_shapes  # noqa: E402
from advisor.diagnosis import evaluate, load_rules  # noqa: E402
from advisor.probes.batch_shapes import BatchShapes  # noqa: E402

G504 = next(r for r in load_rules() if r.code == "G504")


class _Data:
    kind = "tf.data"

    def __init__(self, dataset):
        self.dataset = dataset


def _g504(dataset) -> tuple[dict, object]:
    values = describe_input(_Data(dataset))
    assert reads_shapes(values)
    shapes = BatchShapes(dataset).start()
    assert shapes.wait(60) and shapes.error is None
    facts = pipeline_facts({**values, "shapes_seen": shapes.shapes})
    return facts, evaluate(G504, {**facts, "context.jit_compile": True})


def test_timeseries_windows_have_an_open_spec_and_one_length():
    series = np.random.default_rng(0).random((3000, 4)).astype("float32")
    windows = keras.utils.timeseries_dataset_from_array(
        series[:-120], series[120:, 0], sequence_length=120, batch_size=64
    )
    assert windows.element_spec[0].shape.as_list() == [None, None, 4]
    facts, finding = _g504(windows)
    assert facts["pipeline.dynamic_dims"] == 1 and facts["pipeline.batches_seen"] == 8
    assert facts["pipeline.varying_dims"] == 0
    assert facts["pipeline.shapes_seen"] == ["(64, 120, 4) + (64,)"]
    assert finding.status == "pass" and "first 8 batches read" in finding.message


def test_padded_batches_of_changing_length_fail():
    lengths = [5, 17, 9, 40, 3, 22, 11, 30, 8, 14] * 8
    sequences = tf.data.Dataset.from_tensor_slices(tf.ragged.constant([[1] * n for n in lengths]))
    padded = sequences.map(lambda r: r).padded_batch(8)  # padded to each batch's longest
    facts, finding = _g504(padded)
    assert facts["pipeline.varying_dims"] == 1
    assert finding.status == "fail" and finding.severity == "warning"
    assert "changed size within the first 8 batches" in finding.message


def test_fixed_specs_and_generator_sources_are_not_read_twice():
    fixed = tf.data.Dataset.from_tensor_slices(np.zeros((32, 3), "float32")).batch(4)
    assert not reads_shapes(describe_input(_Data(fixed)))
    gen = tf.data.Dataset.from_generator(
        lambda: iter([np.zeros(n, "float32") for n in (3, 4)]),
        output_signature=tf.TensorSpec((None,), tf.float32),
    ).batch(1)
    assert not reads_shapes(describe_input(_Data(gen)))


def test_shape_arithmetic_by_hand():
    same = seen_shape_facts([[[32, 10], [32]], [[32, 10], [32]], [[7, 10], [7]]])
    assert same["pipeline.varying_dims"] == 0  # only the batch axis changed
    ragged = seen_shape_facts([[[32, None]], [[32, None]]])
    assert ragged["pipeline.varying_dims"] == 1
    ranks = seen_shape_facts([[[32, 10]], [[32, 10, 2]]])
    assert ranks["pipeline.varying_dims"] >= 1
