"""A multi-replica profile: MirroredStrategy over two logical CPU devices shows its all-reduce.

Logical devices must be configured before TensorFlow initialises its devices, so the fit runs in
a child process (this test process may have initialised TensorFlow already).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts a training process

pytest.importorskip("tensorflow")
pytest.importorskip("xprof")

from advisor.analysis.registry import registry
from advisor.store.reader import RunReader
from advisor.store.schema import TraceRecord
from advisor.store.trace_summary import load_summary

CHILD = textwrap.dedent(
    """
    import os, sys
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    from advisor.collectors.singles import ProfilerCallback

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    rng = np.random.default_rng(0)
    x = rng.random((1024, 32), dtype=np.float32)
    y = rng.random((1024, 1), dtype=np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).cache().repeat().prefetch(2)
    with strategy.scope():
        model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(128, activation="relu"),
                                  keras.layers.Dense(1)])
        model.compile("adam", "mse")
    cb = ProfilerCallback(runs_dir=sys.argv[1], profile_steps=(4, 29))  # 26 marked: >= 20 found
    model.fit(ds, steps_per_epoch=32, epochs=1, verbose=0, callbacks=[cb])
    print(cb.run_path)
    """
)


@pytest.fixture(scope="module")
def mirrored_run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(runs)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=root,
        env={**__import__("os").environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return RunReader(done.stdout.strip().splitlines()[-1]).read()


def test_collectives_show_in_the_summary(mirrored_run):
    record = mirrored_run.of_type(TraceRecord)[-1]
    summary = load_summary(mirrored_run.path / record.summary)
    assert summary.steps > 0
    assert any("Collective" in name for name in summary.collective_ops)
    assert summary.communication_percent is not None and summary.communication_percent > 0
    assert any(op.type.startswith("Collective") for op in summary.top_ops)
    assert summary.communication_overlap is not None and 0.0 <= summary.communication_overlap <= 1.0
    # Keras 3 all-reduces the gradients after the whole backward pass: bunched at the step's end.
    assert summary.communication_at_end is True


def test_communication_facts(mirrored_run):
    facts, errors = registry().derive(mirrored_run)
    assert not [e for e in errors if "trace" in e]
    assert facts["trace.communication_percent"] > 0
    assert facts["trace.communication_at_end"] is True
    assert 0.0 <= facts["trace.communication_overlap"] <= 1.0
