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
    for kwargs, name in (
        ({"window_seconds": 0}, "window_seconds"),
        ({"baseline": "middle"}, "baseline"),
        ({"profile_steps": (5, 2)}, "profile_steps"),
        ({"price_per_hour": -1.0}, "price_per_hour"),
        ({"telemetry_devices": "some"}, "telemetry_devices"),
        ({"warmup_steps": 1.5}, "warmup_steps"),
    ):
        with pytest.raises(UsageError, match=name):
            advisor.AdvisorCallback(**kwargs)


def test_the_signature_and_the_options_model_agree():
    import inspect

    params = [
        p for p in inspect.signature(advisor.AdvisorCallback.__init__).parameters if p != "self"
    ]
    assert tuple(params) == (*OPTION_NAMES, "deprecated")  # **deprecated: the old spellings


@pytest.mark.slow
def test_options_are_recorded_in_the_manifest(tmp_path):
    keras = pytest.importorskip("keras")
    import numpy as np

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = advisor.AdvisorCallback(
        tmp_path, log_every_seconds=None, telemetry=False, profile_steps="3,4", tags={"a": 1}
    )
    model.fit(
        np.zeros((64, 2), "float32"),
        np.zeros((64, 1), "float32"),
        epochs=1,
        verbose=0,
        callbacks=[cb],
    )
    config = json.loads((cb.run_path / "run.json").read_text())["config"]
    assert (
        config["profile_steps"] == [3, 4]
        and config["telemetry"] is False
        and config["tags"] == {"a": "1"}
    )
    # run.json's keys stay what older readers know: the old names of the renamed durations
    assert set(config) == {RECORDED_AS.get(name, name) for name in OPTION_NAMES}
    assert config["log_every_s"] is None and "log_every_seconds" not in config


def test_recorded_options_name_collector_objects():
    from advisor.collectors.epochs import EpochCollector

    recorded = AdvisorOptions(collectors=("throughput", EpochCollector())).recorded()
    assert recorded["collectors"] == ["throughput", "epochs"]


# An explicit argument beats its environment variable, and the variable beats the default: one case
# per variable an option reads (docs/collectors.md, "Where settings come from").
@pytest.mark.parametrize(
    "make", [advisor.AdvisorCallback, advisor.track], ids=["callback", "track"]
)
def test_runs_dir_argument_beats_advisor_runs_dir(tmp_path, monkeypatch, make):
    from advisor.store.paths import resolve_runs_dir, store_url

    monkeypatch.setenv("ADVISOR_RUNS_DIR", "s3://bucket/from-env")
    given = make(runs_dir=tmp_path / "given").options.runs_dir
    assert given == str(tmp_path / "given") and store_url(given) is None
    assert resolve_runs_dir(given) == tmp_path / "given"
    assert store_url(make().options.runs_dir) == "s3://bucket/from-env"


@pytest.mark.parametrize(
    "make", [advisor.AdvisorCallback, advisor.track], ids=["callback", "track"]
)
def test_instance_type_argument_beats_advisor_instance_type(monkeypatch, make):
    from advisor.probes.instance import detect_instance_type

    monkeypatch.setenv("ADVISOR_INSTANCE_TYPE", "p4d.24xlarge")
    assert make(instance_type="g5.xlarge").options.instance_type == "g5.xlarge"
    assert make().options.instance_type == "p4d.24xlarge"
    env = {"ADVISOR_INSTANCE_TYPE": "p4d.24xlarge"}
    assert detect_instance_type("g5.xlarge", env=env) == ("g5.xlarge", "argument")
    assert detect_instance_type(None, env=env) == ("p4d.24xlarge", "env")


@pytest.mark.parametrize(
    "make", [advisor.AdvisorCallback, advisor.track], ids=["callback", "track"]
)
def test_pricing_argument_beats_advisor_pricing(monkeypatch, make):
    monkeypatch.setenv("ADVISOR_PRICING", "aws")
    assert make(pricing="table").options.pricing == "table"
    assert make().options.pricing == "aws"
    monkeypatch.delenv("ADVISOR_PRICING")
    assert make().options.pricing == "table"


def test_instance_metadata_argument_beats_advisor_instance_metadata(monkeypatch):
    monkeypatch.setenv("ADVISOR_INSTANCE_METADATA", "1")
    assert advisor.AdvisorCallback(instance_metadata=False).options.instance_metadata is False
    assert advisor.AdvisorCallback().options.instance_metadata is True
    monkeypatch.setenv("ADVISOR_INSTANCE_METADATA", "0")
    assert advisor.AdvisorCallback(instance_metadata=True).options.instance_metadata is True
    assert advisor.AdvisorCallback().options.instance_metadata is False


def test_profile_timeout_argument_beats_advisor_trace_timeout(tmp_path, monkeypatch):
    from advisor.traces import summarize as summarize_module

    (tmp_path / "host.xplane.pb").write_bytes(b"x")
    used: list[float] = []

    def worker(inputs, out_dir, timeout, memory, where):
        used.append(timeout)
        raise RuntimeError("stop here")

    monkeypatch.setattr(summarize_module, "_run_worker", worker)
    monkeypatch.setenv("ADVISOR_TRACE_TIMEOUT_S", "7")
    for given in (30.0, None):
        with pytest.raises(RuntimeError, match="stop here"):
            summarize_module.summarize(tmp_path, timeout_s=given)
    assert used == [30.0, 7.0]
    # The profiler hands its option to summarize as timeout_s.
    from advisor.collectors.options import AdvisorOptions
    from advisor.collectors.registry import build_collectors

    profiler = build_collectors(
        AdvisorOptions(collectors=("profiler",), profile_steps=(1, 2), profile_timeout_seconds=30.0)
    )[0]
    assert profiler.timeout_s == 30.0


def test_true_is_auto_for_baseline_and_whatif():
    options = AdvisorOptions(baseline=True, whatif=True)
    assert (options.baseline, options.whatif) == ("auto", "auto")
    assert options.whatif.mode == "auto" and AdvisorOptions(whatif=False).whatif is None
    assert (
        AdvisorOptions(baseline=False).baseline is None
        and AdvisorOptions(baseline="end").baseline == "end"
    )
