"""The memory collector in real Keras fits: a callback that keeps 24 MB an epoch is warned about
during the fit (once, with its rate and deadline) and called a leak by ``advisor check``; the same
fit without it is flat; a cache() after an endless repeat() is named as the suspect of its growth.
Device counters are read through FAKES of TensorFlow's, torch's and JAX's
memory APIs (no GPU here), at the library boundary."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from advisor.probes.memory import device_memory
from advisor.service import diagnose
from advisor.store.reader import RunReader
from advisor.store.schema import EventRecord, MemoryRecord

pytestmark = pytest.mark.slow  # trains models

LEAK_MB = 24
EPOCHS_RUN = 10


def fit(runs_dir, leak: bool):
    import keras

    class Keeper(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.kept = []

        def on_epoch_end(self, epoch, logs=None):
            if leak:
                self.kept.append(np.ones(LEAK_MB * 1024 * 1024 // 8))  # written: resident
            if epoch + 1 >= EPOCHS_RUN:
                self.model.stop_training = True

    class Counter(keras.callbacks.Callback):  # innocent hooks beside the leak, after it
        def __init__(self):
            super().__init__()
            self.batches = self.epochs = 0

        def on_train_batch_end(self, batch, logs=None):
            self.batches += 1

        def on_epoch_end(self, epoch, logs=None):
            self.epochs += 1

    class Validator(keras.callbacks.Callback):  # a predict and an evaluate inside a hook
        def on_epoch_end(self, epoch, logs=None):
            self.model.evaluate(x[:64], y[:64], verbose=0)
            self.model.predict(x[:64], verbose=0)

    import advisor

    x = np.random.default_rng(0).normal(size=(256, 16)).astype("float32")
    y = np.zeros(256, dtype="int64")
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(8), keras.layers.Dense(2)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    callback = advisor.AdvisorCallback(runs_dir=runs_dir, baseline=None, whatif=None)
    extra = [Keeper(), Counter()] + ([] if leak else [Validator()])
    # The leaking fit validates: Keras's own evaluate runs outside any hook and is not counted.
    validation = {"validation_data": (x[:64], y[:64])} if leak else {}
    model.fit(
        x, y, batch_size=64, epochs=1000, verbose=0, callbacks=[callback, *extra], **validation
    )
    return callback.run_path


def memory_context(path) -> dict:
    from advisor.store.schema import ContextRecord

    merged: dict = {}
    for record in RunReader(path).read().of_type(ContextRecord):
        merged.update(record.values)
    return merged


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("memory")
    return {"leak": fit(root / "leak", True), "flat": fit(root / "flat", False)}


def test_every_epoch_has_a_memory_record(runs):
    records = RunReader(runs["flat"]).read().of_type(MemoryRecord)
    assert [r.epoch for r in records] == list(range(EPOCHS_RUN))
    assert all(r.rss and r.available and r.rss_begin for r in records)
    assert all(r.rss_peak is None or r.rss_peak >= r.rss for r in records)


def test_a_leak_is_warned_once_during_the_fit_and_called_a_leak(runs):
    warnings = [
        e
        for e in RunReader(runs["leak"]).read().of_type(EventRecord)
        if e.source == "memory" and e.level == "warning"
    ]
    assert len(warnings) == 1
    assert "MB per epoch" in warnings[0].message and "before the fit's 1000 epochs end" in (
        warnings[0].message
    )
    # The memory grew across Keeper's hooks (read at each call of an epoch hook), not Counter's:
    # Keeper is named alone.
    assert "the callback Keeper (the memory grew" in warnings[0].message
    assert "Counter" not in warnings[0].message
    report = diagnose(runs["leak"])
    assert report.fact("memory.growing") is True
    assert abs(report.fact("memory.growth_mb_per_epoch") - LEAK_MB) < LEAK_MB * 0.25
    assert report.fact("memory.exhausted_before_end") is True
    assert report.fact("memory.planned_epochs") == 1000
    (m180,) = [f for f in report.findings if f.code == "M180"]
    assert m180.status == "fail" and m180.severity == "warning"
    first_warning = next(f for f in report.findings if f.status == "fail" and f.severity != "info")
    assert first_warning.code == "M180"
    assert report.fact("memory.suspect").startswith("the callback Keeper ")
    grown = {h["name"]: h for h in memory_context(runs["leak"])["memory.hook_growth"]}
    assert grown["Keeper"]["mb"] >= (EPOCHS_RUN - 1) * LEAK_MB  # each epoch's 24 MB, seen
    assert abs(grown["Counter"]["mb"]) < LEAK_MB


def test_memory_across_hooks_is_sampled_and_predict_inside_a_hook_is_named(runs):
    from advisor.collectors.goodput_wrap import BATCH_SAMPLE_EVERY

    context = memory_context(runs["flat"])
    grown = {h["name"]: h for h in context["memory.hook_growth"]}
    batches = EPOCHS_RUN * 256 // 64
    # Counter's batch hook is read once in BATCH_SAMPLE_EVERY calls, its epoch hook at every call.
    assert grown["Counter"]["sampled"] == len(range(0, batches, BATCH_SAMPLE_EVERY)) + EPOCHS_RUN
    assert grown["Counter"]["hooks"] == ["on_epoch_end", "on_train_batch_end"]
    inner = {c["where"]: c["calls"] for c in context["memory.inner_calls"]}
    assert inner == {
        "Validator.on_epoch_end calls model.evaluate": EPOCHS_RUN,
        "Validator.on_epoch_end calls model.predict": EPOCHS_RUN,
    }
    assert "memory.inner_calls" not in memory_context(runs["leak"])  # Keras's validation


def test_a_fit_that_keeps_nothing_is_flat(runs):
    events = RunReader(runs["flat"]).read().of_type(EventRecord)
    assert not [e for e in events if e.source == "memory"]
    report = diagnose(runs["flat"])
    # it may creep by a fraction of a MB an epoch (the run's own records): not a leak
    assert report.fact("memory.growth_mb_per_epoch") < LEAK_MB / 6
    (m180,) = [f for f in report.findings if f.code == "M180"]
    assert m180.status == "pass"


def test_near_the_limit_is_judged_on_the_measured_peak_fraction(runs):
    """M181 on a real fit's peak fraction: it passes here (a small model on a host with GBs
    free); with its threshold set under the measured fraction, the same facts fail it."""
    from advisor.diagnosis import evaluate, load_rules
    from advisor.service import RunService

    facts = RunService().analyse(runs["flat"]).facts
    fraction = facts["memory.peak_fraction"]
    assert 0 < fraction < 0.9, fraction  # the process's peak ÷ what it could reach
    (rule,) = [r for r in load_rules() if r.code == "M181"]
    assert evaluate(rule, facts).status == "pass"
    lowered = evaluate(rule, facts, {"max_fraction": fraction / 2})
    assert lowered.status == "fail" and f"{fraction:.0%}" in lowered.message


def test_a_cache_after_an_endless_repeat_is_the_suspect(tmp_path):
    """A real tf.data pipeline that caches after ``repeat()``: the cache keeps every element it
    is given (32 KB each, 512 an epoch), so memory grows ~16 MB an epoch, and the suspect is the
    cache, not the step or a callback."""
    tf = pytest.importorskip("tensorflow")
    import keras

    import advisor

    if keras.backend.backend() != "tensorflow":
        pytest.skip("the Keras backend of this process is not TensorFlow")
    features = 8192  # 32 KB a sample
    x = np.random.default_rng(0).normal(size=(256, features)).astype("float32")
    y = np.zeros(256, dtype="int64")
    # the map makes each element new memory, as a decode would (a bare slice of the arrays
    # shares their buffer, and caching it costs nothing)
    source = tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a + 0.0, b))
    data = source.repeat().cache().batch(64)
    model = keras.Sequential([keras.Input((features,)), keras.layers.Dense(2)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    callback = advisor.AdvisorCallback(runs_dir=tmp_path, baseline=None, whatif=None)
    model.fit(data, steps_per_epoch=8, epochs=EPOCHS_RUN, verbose=0, callbacks=[callback])
    report = diagnose(callback.run_path)
    assert report.fact("memory.growing") is True
    assert report.fact("memory.growth_mb_per_epoch") > 8  # 16 MB of elements cached an epoch
    assert "filling" not in report.fact("memory.left_out")  # it never stopped: not a fill
    assert report.fact("memory.suspect").startswith("the input's in-memory cache() after repeat()")
    (m180,) = [f for f in report.findings if f.code == "M180"]
    assert m180.status == "fail" and "cache() after repeat()" in m180.message


# -- device counters: FAKES of the backends' memory APIs (no GPU on this machine) -------------
def fake_tensorflow(peak: int, current: int) -> types.ModuleType:
    resets: list[str] = []
    tf = types.ModuleType("tensorflow")
    experimental = types.SimpleNamespace(
        get_memory_info=lambda name: {"peak": peak, "current": current},
        reset_memory_stats=resets.append,
    )
    tf.config = types.SimpleNamespace(  # type: ignore[attr-defined]
        list_logical_devices=lambda kind: [types.SimpleNamespace(name="/device:GPU:0")],
        experimental=experimental,
    )
    tf.resets = resets  # type: ignore[attr-defined]
    return tf


def test_tensorflow_device_peak_is_read_and_reset(monkeypatch):
    tf = fake_tensorflow(peak=3 << 30, current=1 << 30)
    monkeypatch.setitem(sys.modules, "tensorflow", tf)
    (dev,) = device_memory("tensorflow")
    assert dev == {"device": "/device:GPU:0", "peak": 3 << 30, "in_use": 1 << 30}
    assert tf.resets == ["GPU:0"]


def test_torch_device_peak_is_read_and_reset(monkeypatch):
    resets: list[int] = []
    cuda = types.SimpleNamespace(
        is_initialized=lambda: True,
        device_count=lambda: 1,
        max_memory_allocated=lambda i: 5 << 30,
        memory_allocated=lambda i: 2 << 30,
        get_device_properties=lambda i: types.SimpleNamespace(total_memory=16 << 30),
        reset_peak_memory_stats=resets.append,
    )
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    (dev,) = device_memory("torch")
    assert dev == {"device": "cuda:0", "peak": 5 << 30, "in_use": 2 << 30, "total": 16 << 30}
    assert resets == [0]


def test_jax_device_counters_and_a_cpu_only_run(monkeypatch):
    gpu = types.SimpleNamespace(
        platform="gpu",
        memory_stats=lambda: {
            "bytes_in_use": 1 << 30,
            "peak_bytes_in_use": 2 << 30,
            "bytes_limit": 12 << 30,
        },
        __str__=lambda self: "cuda(id=0)",
    )
    cpu = types.SimpleNamespace(platform="cpu", memory_stats=lambda: None)
    jax = types.SimpleNamespace(local_devices=lambda: [gpu])
    monkeypatch.setitem(sys.modules, "jax", jax)
    (dev,) = device_memory("jax")
    assert dev["peak"] == 2 << 30 and dev["in_use"] == 1 << 30 and dev["total"] == 12 << 30
    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace(local_devices=lambda: [cpu]))
    assert device_memory("jax") == []
    assert device_memory(None) == []
