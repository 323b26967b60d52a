"""AdvisorCallback's options are typed: misspellings and bad values are caught when it is made."""

from __future__ import annotations

import json

import pytest

import advisor
from advisor.collectors.options import OPTION_NAMES, RECORDED_AS, AdvisorOptions
from advisor.errors import UsageError


def test_a_misspelled_option_names_the_closest():
    with pytest.raises(TypeError, match=r"unexpected option 'baselin'; did you mean 'baseline'\?"):
        advisor.AdvisorCallback(baselin="end")
    with pytest.raises(TypeError, match="did you mean 'profile_steps'"):
        advisor.ProfilerCallback(profile_step=(1, 2))


def test_bad_values_are_usage_errors_naming_the_option():
    for kwargs, name in (({"window_seconds": 0}, "window_seconds"), ({"baseline": "middle"}, "baseline"),
                         ({"profile_steps": (5, 2)}, "profile_steps"), ({"price_per_hour": -1.0}, "price_per_hour"),
                         ({"telemetry_devices": "some"}, "telemetry_devices"), ({"warmup_steps": 1.5}, "warmup_steps")):
        with pytest.raises(UsageError, match=name):
            advisor.AdvisorCallback(**kwargs)


def test_the_signature_and_the_options_model_agree():
    import inspect

    params = [p for p in inspect.signature(advisor.AdvisorCallback.__init__).parameters if p != "self"]
    assert tuple(params) == (*OPTION_NAMES, "deprecated")  # **deprecated: the old spellings


@pytest.mark.slow
def test_options_are_recorded_in_the_manifest(tmp_path):
    keras = pytest.importorskip("keras")
    import numpy as np

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = advisor.AdvisorCallback(tmp_path, log_every_seconds=None, telemetry=False, profile_steps="3,4", tags={"a": 1})
    model.fit(np.zeros((64, 2), "float32"), np.zeros((64, 1), "float32"), epochs=1, verbose=0, callbacks=[cb])
    config = json.loads((cb.run_path / "run.json").read_text())["config"]
    assert config["profile_steps"] == [3, 4] and config["telemetry"] is False and config["tags"] == {"a": "1"}
    # run.json's keys stay what older readers know: the old names of the renamed durations
    assert set(config) == {RECORDED_AS.get(name, name) for name in OPTION_NAMES}
    assert config["log_every_s"] is None and "log_every_seconds" not in config


def test_recorded_options_name_collector_objects():
    from advisor.collectors.epochs import EpochCollector

    recorded = AdvisorOptions(collectors=("throughput", EpochCollector())).recorded()
    assert recorded["collectors"] == ["throughput", "epochs"]
