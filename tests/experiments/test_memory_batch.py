"""The memory what-if on real Keras models (CPU: the process's resident peak): peaks grow with
the batch, the line through them predicts the peak at a larger batch, and the model and the global
random generators are put back exactly; in a fit (``batch_memory=True``) its result reaches the
facts and M182. On a GPU the peaks are the device allocator's: that path runs here through a FAKE
of ``torch.cuda``'s memory counters (no GPU on this machine), at the library boundary, beside a
real Keras model trained at each size (scripts/gpu_check.py runs it on a real GPU)."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import numpy as np
import pytest

from advisor.experiments.memory import fit_line, measure_batch_memory
from advisor.experiments.memory.batch import MARGIN, MemoryPoint, resize_batch
from advisor.experiments.model_state import ModelState

pytestmark = pytest.mark.slow  # trains models

FEATURES = 64
WIDTH = 8192  # wide and shallow: ~100 KB of activations a sample, little compute


def wide_mlp():
    import keras

    model = keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(WIDTH, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def batch(n: int):
    rng = np.random.default_rng(1)
    return rng.normal(size=(n, FEATURES)).astype("float32"), rng.integers(0, 10, n)


def in_a_fresh_process(test: str) -> bool:
    """Run ``test`` of this module in a fresh process (True: it ran there and passed; the caller
    returns). On the CPU the peak is the resident high-water mark, and a test worker that already
    grew to gigabytes reuses its freed memory without raising it."""
    if os.environ.get("ADVISOR_MEMORY_FRESH") == "1":
        return False
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
        + ["-m", "long or not long", f"{__file__}::{test}"],  # the suite's -m leaves long out
        env={**os.environ, "ADVISOR_MEMORY_FRESH": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and " passed" in done.stdout, done.stdout[-4000:]
    return True


@pytest.mark.long  # a fresh process and a what-if: a minute or more with a core busy
def test_peaks_grow_with_the_batch_and_the_line_predicts_a_larger_one():
    """In a fresh process (:func:`in_a_fresh_process`)."""
    if in_a_fresh_process("test_peaks_grow_with_the_batch_and_the_line_predicts_a_larger_one"):
        return
    model = wide_mlp()
    x, y = batch(64)
    model.fit(x, y, batch_size=64, epochs=1, verbose=0)
    before = ModelState(model)
    np.random.seed(7)
    draw = np.random.random()
    np.random.seed(7)
    result = measure_batch_memory(model, (x, y), 256, backend="tensorflow", limit_bytes=12 << 30)
    assert result.error is None and result.where == "host"
    peaks = [p.peak_bytes for p in result.points]
    assert [p.batch for p in result.points] == [256, 512, 1024]
    # an 8192-wide activation (and its gradient and temporaries) per sample: tens of KB a sample
    assert peaks[2] - peaks[0] > 20 * 2**20 and result.per_sample_bytes > 20_000
    assert result.largest_batch and result.largest_batch > 1024
    assert result.check_batch and 1024 < result.check_batch <= 2048
    error = (
        result.check_measured_bytes - result.check_predicted_bytes
    ) / result.check_predicted_bytes
    assert abs(error) < 0.25, (result.points, result.check_batch, error)
    assert before.unchanged()
    assert np.random.random() == draw  # the global generator was put back


def test_the_line_and_the_batch_resizing():
    assert fit_line([MemoryPoint(1, 10), MemoryPoint(3, 30)]) == (0.0, 10.0)
    assert fit_line([MemoryPoint(2, 10)]) is None
    x, y = batch(3)
    bigger = resize_batch((x, {"y": y}), 7)
    assert bigger[0].shape == (7, FEATURES) and bigger[1]["y"].shape == (7,)
    assert np.array_equal(bigger[0][3], x[0])


@pytest.mark.long  # a fresh process and a what-if: a minute or more with a core busy
def test_in_a_fit_the_largest_batch_reaches_the_facts(tmp_path):
    """In a fresh process (:func:`in_a_fresh_process`): in a test worker that had grown, a
    suite run beside another read "the peaks did not grow with the batch"."""
    if in_a_fresh_process("test_in_a_fit_the_largest_batch_reaches_the_facts"):
        return
    import advisor
    from advisor.service import diagnose

    model = wide_mlp()
    x, y = batch(512)
    callback = advisor.AdvisorCallback(
        runs_dir=tmp_path, baseline=None, whatif=None, batch_memory=True
    )
    model.fit(x, y, batch_size=128, epochs=2, verbose=0, callbacks=[callback])
    report = diagnose(callback.run_path)
    assert report.fact("memory.batch.error") is None, report.fact("memory.batch.error")
    assert report.fact("memory.batch.largest") > 4 * 128
    assert report.fact("memory.batch.where") == "host"
    assert len(report.fact("memory.batch.points")) == 3
    (m182,) = [f for f in report.findings if f.code == "M182"]
    assert m182.status == "fail" and "samples" in m182.message


def fake_cuda(seen: list[int], fixed: int, per_sample: int, total: int):  # type: ignore[no-untyped-def]
    """FAKE ``torch.cuda`` counters (no GPU here): the allocator's peak is ``fixed`` plus
    ``per_sample`` bytes for each sample of the batch the model last saw (``seen``)."""
    resets: list[int] = []
    cuda = types.SimpleNamespace(
        is_initialized=lambda: True,
        device_count=lambda: 1,
        max_memory_allocated=lambda i: fixed + per_sample * seen[-1],
        memory_allocated=lambda i: fixed,
        get_device_properties=lambda i: types.SimpleNamespace(total_memory=total),
        reset_peak_memory_stats=resets.append,
    )
    return types.SimpleNamespace(cuda=cuda), resets


def test_on_a_device_the_allocators_peaks_and_total_size_the_batch(monkeypatch):
    """The device path: the peak is reset and read through the backend's counters before and
    after each size, the limit is the device's memory, and the check reads the device again."""
    import keras

    seen: list[int] = []

    class NoteBatch(keras.layers.Layer):  # the batch each step trains on (eager: every call)
        def call(self, x):  # type: ignore[no-untyped-def]
            if x.shape[0] is not None:  # not when Keras builds the model symbolically
                seen.append(int(x.shape[0]))
            return x

    model = keras.Sequential([keras.Input((FEATURES,)), NoteBatch(), keras.layers.Dense(10)])
    model.compile(
        "adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True
    )
    fixed, per_sample, total = 300 << 20, 40_000, 16 << 30
    torch, resets = fake_cuda(seen, fixed, per_sample, total)
    monkeypatch.setitem(sys.modules, "torch", torch)
    x, y = batch(32)
    model.train_on_batch(x, y)
    before = ModelState(model)
    result = measure_batch_memory(model, (x, y), 32, backend="torch", steps=2)
    assert result.error is None and result.where == "device"
    assert [(p.batch, p.peak_bytes) for p in result.points] == [
        (b, fixed + per_sample * b) for b in (32, 64, 128)
    ]
    assert result.per_sample_bytes == pytest.approx(per_sample)
    assert result.fixed_bytes == pytest.approx(fixed, abs=1)
    assert result.limit_bytes == total
    assert result.largest_batch == int((total * (1 - MARGIN) - fixed) // per_sample)
    # checked at twice the largest measured (the predicted batch is far beyond it), on the device
    assert result.check_batch == 256 and seen[-1] == 256
    assert result.check_measured_bytes == fixed + per_sample * 256
    assert result.check_predicted_bytes == pytest.approx(result.check_measured_bytes)
    assert resets == [0, 0, 0, 0]  # before each of the three sizes and the check
    assert before.unchanged()
