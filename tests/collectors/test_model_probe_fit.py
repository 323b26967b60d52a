"""Real fits read as users write them: the model's own layers (augmentation inside, a custom layer
Keras cannot rebuild), fix texts for a numpy input, no retracing notice from the advisor in the
user's log, the shapes of timeseries windows, and a host shared with a CPU-burning process."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

keras = pytest.importorskip("keras")

import advisor  # noqa: E402
from advisor.analysis.registry import registry  # noqa: E402
from advisor.collectors.collector import Collector  # noqa: E402
from advisor.diagnosis import evaluate, load_rules  # noqa: E402
from advisor.diagnosis.rules import fix_contexts  # noqa: E402
from advisor.store.reader import RunReader  # noqa: E402

pytestmark = pytest.mark.slow  # trains models and starts a process

RULES = {r.code: r for r in load_rules()}
QUIET = {"baseline": None, "whatif": None, "log_every_seconds": None}


class Lookup(keras.layers.Layer):
    """A per-channel table given as an array, no get_config: model.save cannot write it."""

    def __init__(self, table, **kwargs):
        super().__init__(**kwargs)
        self.table = np.asarray(table, dtype="float32")

    def call(self, x):
        return x * self.table


def _image_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Rescaling(1 / 255),
            keras.layers.RandomFlip("horizontal"),
            keras.layers.RandomRotation(0.1),
            Lookup(np.ones(3)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _facts(run_path: Path) -> dict:
    facts, errors = registry().derive(RunReader(run_path).read())
    assert errors == []
    return facts


class _Seen(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


class _TracesAgain(Collector):
    """Stands for the advisor's own graph work at an epoch's end (a measurement feed's pull made
    anew per segment): a ``tf.function`` built again from the same code and traced once each time,
    which makes TensorFlow's detector log its retracing notice."""

    name = "traces_again"

    def on_epoch_end(self, epoch, logs):
        import tensorflow as tf

        for _ in range(6):

            @tf.function(autograph=False)
            def pull(x):
                return x + 1

            pull(tf.constant(0))


def test_a_numpy_image_fit_reads_the_model_and_prints_no_retracing_notice(tmp_path, capfd):
    seen = _Seen()
    logging.getLogger("tensorflow").addHandler(seen)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (64, 16, 16, 3)).astype("float32")
    y = rng.integers(0, 10, 64)
    model = _image_model()
    names = ["throughput", "epochs", "context", "goodput", "telemetry", "pipeline"]
    cb = advisor.AdvisorCallback(
        tmp_path, collectors=[*names, _TracesAgain()], telemetry_interval_seconds=0.5, **QUIET
    )
    try:
        model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[cb])
    finally:
        logging.getLogger("tensorflow").removeHandler(seen)
    assert not any("retracing" in m for m in seen.messages), seen.messages
    assert "retracing" not in capfd.readouterr().err
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    detectors = polymorphic_function._frequent_tracing_detector_manager._detectors
    notices = [d for code, d in detectors.items() if getattr(code, "co_name", "") == "pull"]
    assert any(d._total_warning_count >= 1 for d in notices)  # TensorFlow did try to warn

    facts = _facts(cb.run_path)
    assert facts["model.augmentation_layers"] == ["RandomFlip", "RandomRotation"]
    assert facts["model.preprocessing_layers"] == ["Rescaling", "RandomFlip", "RandomRotation"]
    assert facts["model.config_problem_count"] == 1
    p705 = evaluate(RULES["P750"], facts)
    assert p705.status == "fail" and "Lookup (layer): no get_config()" in p705.message
    assert evaluate(RULES["C403"], facts).status == "n/a"  # augmentation is already inside
    assert facts["context.input_kind"] == "numpy"
    assert fix_contexts(facts)[0] == "input:numpy"
    epoch_fix = RULES["M154"].fix_in(facts).source
    assert "from_tensor_slices((x, y))" in epoch_fix and "persistent_workers" not in epoch_fix
    with pytest.raises(NotImplementedError):  # what P750 says: Keras cannot save it
        model.save(tmp_path / "model.keras")


def test_timeseries_windows_pass_g504_on_the_shapes_seen(tmp_path):
    series = np.random.default_rng(1).random((2000, 4)).astype("float32")
    windows = keras.utils.timeseries_dataset_from_array(
        series[:-120], series[120:, 0], sequence_length=120, batch_size=64
    )
    model = keras.Sequential([keras.Input((120, 4)), keras.layers.LSTM(4), keras.layers.Dense(1)])
    model.compile("adam", "mse", jit_compile=False)
    cb = advisor.AdvisorCallback(tmp_path, telemetry=False, **QUIET)
    model.fit(windows, epochs=2, verbose=0, callbacks=[cb])
    facts = _facts(cb.run_path)
    assert facts["pipeline.dynamic_dims"] == 1  # the spec: (None, None, 4)
    assert facts["pipeline.batches_seen"] == 8 and facts["pipeline.varying_dims"] == 0
    assert facts["pipeline.shapes_seen"] == ["(64, 120, 4) + (64,)"]
    assert evaluate(RULES["G504"], facts).status == "pass"


BURNER = "import time\nwhile True:\n    sum(i * i for i in range(10000))\n"


def test_a_cpu_burning_neighbour_is_measured_and_named(tmp_path):
    """A process burning a core beside a short fit: the share other processes took is at least
    most of what the burner used (the machine's other load adds to it), and I250 says so."""
    rng = np.random.default_rng(2)
    x, y = rng.random((4096, 64)).astype("float32"), rng.random((4096, 1)).astype("float32")
    model = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(256, "relu"), keras.layers.Dense(1)]
    )
    model.compile("adam", "mse")

    class StopAfter(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.t0 = time.monotonic()

        def on_epoch_end(self, epoch, logs=None):
            if time.monotonic() - self.t0 > 4.0:
                self.model.stop_training = True

    burner = subprocess.Popen([sys.executable, "-c", BURNER])
    try:
        proc = psutil.Process(burner.pid)
        t0, cpu0 = time.monotonic(), sum(proc.cpu_times()[:2])
        cb = advisor.AdvisorCallback(tmp_path, telemetry_interval_seconds=0.25, **QUIET)
        model.fit(x, y, batch_size=32, epochs=100, verbose=0, callbacks=[StopAfter(), cb])
        burner_share = (sum(proc.cpu_times()[:2]) - cpu0) / (time.monotonic() - t0)
    finally:
        burner.kill()
        burner.wait()
    burner_share /= psutil.cpu_count()
    facts = _facts(cb.run_path)
    others = facts["host.others_cpu_fraction"]
    assert burner_share > 0, burner_share  # the neighbour ran (how much depends on the load)
    assert others >= 0.5 * burner_share, (others, burner_share)
    i204 = evaluate(RULES["I250"], facts)
    shared = max(others, facts["host.others_cpu_p90"]) >= 0.10
    assert i204.status == ("fail" if shared else "pass"), (i204.status, others)
    assert f"other processes used {others:.0%} of the host's CPU" in i204.message
