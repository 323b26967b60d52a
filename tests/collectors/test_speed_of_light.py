"""The speed-of-light collector in real fits: every fit's report carries the fraction; the second
fit on the host reads the figure from the store's cache; a microbenchmark that fails costs the fit
nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from advisor.collectors.speed_of_light import MEASUREMENTS

pytestmark = pytest.mark.slow
keras = pytest.importorskip("keras")


def _fit(runs_dir, **options):
    import advisor
    from advisor.analysis.registry import registry
    from advisor.store.reader import RunReader

    model = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile("adam", "mse")
    x = np.random.default_rng(0).normal(size=(2048, 32)).astype("float32")
    y = x[:, :1]
    callback = advisor.AdvisorCallback(
        runs_dir=runs_dir, baseline=None, whatif=None, window_seconds=0.5, **options
    )
    model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=[callback])
    facts, errors = registry().derive(RunReader(callback.run_path).read())
    assert errors == []
    return facts


def test_every_fit_gets_its_fraction_and_the_second_reads_the_cache(tmp_path):
    first = _fit(tmp_path)
    assert first["speed_of_light.cached"] is False
    assert first["speed_of_light.tflops_float32"] > 0
    assert 0 < first["speed_of_light.fraction"] < 1
    assert first["speed_of_light.dtype"] == "float32"
    assert first["model.flops_per_sample"] > 0
    assert (tmp_path / ".speed-of-light.json").is_file()
    # A first figure measured on a loaded machine (far too low here) is measured again by the
    # next fits, which keep the best; from the third measurement on, the cache is read.
    cache = tmp_path / ".speed-of-light.json"
    entries = json.loads(cache.read_text())
    (entry,) = entries.values()
    assert entry["measurements"] == 1
    entry["result"]["tflops"]["float32"] = 1e-9
    cache.write_text(json.dumps(entries))
    second = _fit(tmp_path)
    assert second["speed_of_light.cached"] is False
    assert second["speed_of_light.tflops_float32"] > 1e-9
    (entry,) = json.loads(cache.read_text()).values()
    assert entry["measurements"] == 2
    entry["measurements"] = MEASUREMENTS
    cache.write_text(json.dumps({k: entry for k in entries}))
    third = _fit(tmp_path)
    assert third["speed_of_light.cached"] is True
    assert third["speed_of_light.tflops_float32"] == entry["result"]["tflops"]["float32"]
    assert "speed_of_light.fraction" in third


def test_a_failing_microbenchmark_is_recorded_and_the_fit_goes_on(tmp_path, monkeypatch):
    from advisor.probes import speed_of_light

    def broken(*args, **kwargs):
        raise RuntimeError("no device")

    monkeypatch.setattr(speed_of_light, "measure", broken)
    facts = _fit(tmp_path)
    assert facts["speed_of_light.error"] == "RuntimeError: no device"
    assert "speed_of_light.fraction" not in facts
    assert facts["throughput.samples_per_s"] > 0  # the fit ran to its end


def test_it_is_off_with_speed_of_light_false(tmp_path):
    facts = _fit(tmp_path, speed_of_light=False)
    assert not any(k.startswith("speed_of_light.") for k in facts if k != "speed_of_light.dtype")
