"""Compile events from real TensorFlow, JAX and torch: custom loops tracked by ``advisor.track``
retrace on purpose (a Python value, a static argument, batch sizes, a partial last batch) or
break their graph, and a Keras fit traces its train function at start-up. Each test checks the
events against the framework's own count, the ``compile`` category of the time budget, and the
rule that names the cause (passing on the same loop written without the mistake)."""

from __future__ import annotations

import time

import pytest

import advisor
from advisor.service import RunService

pytestmark = pytest.mark.slow

STEPS = 12


def _diagnosis(path):
    return RunService().diagnose(path)


def _budget_adds_up(report):
    wall = report.fact("time.wall_seconds")
    parts = [
        report.fact(f"time.{c}.seconds") or 0.0
        for c in (
            "startup",
            "compile",
            "train_steps",
            "validation",
            "epoch_boundary",
            "callbacks",
            "checkpoint",
            "advisor_hooks",
            "advisor_measure",
            "profile",
            "unaccounted",
        )
    ]
    assert all(p >= 0 for p in parts)
    assert sum(parts) == pytest.approx(wall, rel=0.03)


def _status(report, code):
    (finding,) = [f for f in report.findings if f.code == code]
    return finding


def test_a_tensorflow_loop_that_passes_its_step_as_a_python_int(tmp_path):
    tf = pytest.importorskip("tensorflow")
    w = tf.Variable(tf.zeros((16, 1)))

    @tf.function
    def train_step(x, step):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((x @ w) ** 2) * (1.0 + 0.0 * step)
        w.assign_sub(0.01 * tape.gradient(loss, w))
        return loss

    x = tf.ones((8, 16))
    with advisor.track(
        batch_size=8, runs_dir=tmp_path / "bad", telemetry=False, backend="tensorflow"
    ) as run:
        for i in range(STEPS):
            train_step(x, i)  # a new Python value at every step: traced again
            run.step()
    report = _diagnosis(run.run_path)
    assert report.fact("compile.value.retraces") == train_step.experimental_get_tracing_count() - 1
    assert report.fact("compile.value.function") == "train_step"
    assert report.fact("compile.value.detail") == f"step: {STEPS - 2} → {STEPS - 1}"
    assert report.fact("time.compile.seconds") > 0
    _budget_adds_up(report)
    c452 = _status(report, "C452")
    assert c452.status == "fail" and "train_step" in c452.message
    assert _status(report, "C451").status == "fail"  # decided in a custom loop
    # tracing is most of a loop that does nothing else (0.58 of its wall clock measured): C455
    assert report.fact("compile.share") > 0.25 and _status(report, "C455").status == "fail"

    @tf.function
    def fixed_step(x, step):
        return tf.reduce_mean(x) * tf.cast(step, tf.float32)

    with advisor.track(
        batch_size=8, runs_dir=tmp_path / "good", telemetry=False, backend="tensorflow"
    ) as run:
        for i in range(STEPS):
            fixed_step(x, tf.constant(i))  # a tensor: one trace serves every step
            run.step()
    report = _diagnosis(run.run_path)
    assert report.fact("compile.retraces") == 0
    assert _status(report, "C452").status == "pass"
    assert _status(report, "C451").status == "pass"


def _loop_over(tf, data, runs_dir, epochs=2, until_ratio=None):  # type: ignore[no-untyped-def]
    """A custom TF loop over ``data`` for ``epochs``: a new ``tf.function`` step traced by the
    shapes it is given. ``until_ratio``: then keep training until the loop has run that many times
    the first call's time (which holds the step's first trace), so compiling is a small share."""
    w = tf.Variable(tf.zeros((8, 1)))

    @tf.function
    def step(x):
        w.assign_sub(0.01 * tf.reduce_mean(x @ w) * tf.ones((8, 1)))
        return tf.reduce_sum(x @ tf.ones((8, 256)))

    with advisor.track(
        batch_size=16, runs_dir=runs_dir, telemetry=False, backend="tensorflow"
    ) as run:
        t0 = time.perf_counter()
        step(next(iter(data)))  # the first trace
        first = time.perf_counter() - t0
        run.step()
        for _ in range(epochs):
            for x in data:
                step(x)
                run.step(int(x.shape[0]))
            run.epoch()
        while until_ratio and time.perf_counter() - t0 < until_ratio * first:
            for x in data:
                step(x)
                run.step(int(x.shape[0]))
    return run.run_path, step.experimental_get_tracing_count()


def test_a_partial_last_batch_traces_once_and_drop_remainder_does_not(tmp_path):
    """C454 fails on a loop whose last batch is partial (one retrace, named) and passes with
    ``drop_remainder=True``; C453 and C452 pass on both (the batch size does not vary, no Python
    value changes). C455 passes on the second loop, trained for twenty times its first call."""
    tf = pytest.importorskip("tensorflow")
    x = tf.random.normal((100, 8))  # batches of 16: six full, then one of 4

    path, traces = _loop_over(tf, tf.data.Dataset.from_tensor_slices(x).batch(16), tmp_path / "a")
    report = _diagnosis(path)
    assert traces == 2  # (16, 8), then (4, 8) once: the next epoch reuses both
    assert report.fact("compile.partial_batch.retraces") == 1
    assert report.fact("compile.partial_batch.function") == "step"
    assert report.fact("compile.shape.retraces") == 0
    c454 = _status(report, "C454")
    assert c454.status == "fail" and "the partial last batch traced step again 1 times" in (
        c454.message
    )
    assert _status(report, "C453").status == "pass" and _status(report, "C452").status == "pass"
    _budget_adds_up(report)

    data = tf.data.Dataset.from_tensor_slices(x).batch(16, drop_remainder=True)
    path, traces = _loop_over(tf, data, tmp_path / "b", until_ratio=20)
    report = _diagnosis(path)
    assert traces == 1 and report.fact("compile.retraces") == 0
    assert _status(report, "C454").status == "pass"
    assert _status(report, "C451").status == "pass"
    assert report.fact("compile.share") < 0.25 / 2  # under half of C455's threshold
    assert _status(report, "C455").status == "pass"
    _budget_adds_up(report)


def test_a_jax_loop_with_a_changing_static_argument(tmp_path):
    jax = pytest.importorskip("jax")
    from functools import partial

    import jax.numpy as jnp

    @partial(jax.jit, static_argnums=1)
    def step(x, lr):
        return x - lr * jnp.tanh(x)

    x = jnp.ones((4, 4))
    with advisor.track(batch_size=4, runs_dir=tmp_path, telemetry=False, backend="jax") as run:
        for i in range(STEPS):
            x = step(x, 0.01 * (i + 1)).block_until_ready()
            run.step()
    assert not jax.config.jax_explain_cache_misses  # put back as it was
    report = _diagnosis(run.run_path)
    rows = {r["function"]: r for r in report.fact("compile.functions")}
    assert rows["jit(step)"]["count"] == step._cache_size()
    assert report.fact("compile.value.function") == "jit(step)"
    assert report.fact("compile.value.retraces") == step._cache_size() - 1
    assert _status(report, "C452").status == "fail"
    _budget_adds_up(report)


def test_torch_compile_recompiling_for_each_batch_size(tmp_path):
    torch = pytest.importorskip("torch")
    from torch._dynamo.utils import counters

    torch.set_num_threads(1)
    model = torch.nn.Linear(8, 2)
    compiled = torch.compile(lambda x: model(x).square().mean(), dynamic=False, backend="eager")
    graphs = counters["stats"]["unique_graphs"]
    with advisor.track(runs_dir=tmp_path, telemetry=False, backend="torch") as run:
        for i in range(STEPS):
            size = (16, 12, 20, 24)[i // 3]
            compiled(torch.ones(size, 8))
            run.step(size)
    report = _diagnosis(run.run_path)
    compiles = counters["stats"]["unique_graphs"] - graphs
    assert report.fact("compile.events") == compiles
    assert report.fact("compile.shape.retraces") == compiles - 1  # sizes vary: not a last batch
    assert report.fact("compile.partial_batch.retraces") == 0
    assert _status(report, "C453").status == "fail"
    _budget_adds_up(report)


def test_torch_compile_graph_breaks_are_counted_with_their_reasons(tmp_path):
    """A compiled function that breaks its graph (``torch._dynamo.graph_break()``): the breaks
    are counted as Dynamo's own counter counts them, each with its reason."""
    torch = pytest.importorskip("torch")
    from torch._dynamo.utils import counters

    def halves(x):
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos().sum()

    compiled = torch.compile(halves, backend="eager")
    before = dict(counters["graph_break"])
    with advisor.track(runs_dir=tmp_path, telemetry=False, backend="torch") as run:
        for _ in range(STEPS):
            compiled(torch.ones(8))
            run.step(8)
    breaks = {k: v - before.get(k, 0) for k, v in counters["graph_break"].items()}
    breaks = {k: v for k, v in breaks.items() if v > 0}
    assert breaks, "Dynamo counted no graph break"
    report = _diagnosis(run.run_path)
    assert report.fact("compile.graph_breaks") == sum(breaks.values())
    top = max(breaks, key=lambda k: breaks[k])
    assert f"{top[:200]} ×{breaks[top]}" in report.fact("compile.graph_break_reasons")
    _budget_adds_up(report)


def test_a_keras_fit_counts_its_start_up_tracing_as_compile_time(tmp_path):
    pytest.importorskip("tensorflow")
    import keras
    import numpy as np

    if keras.backend.backend() != "tensorflow":
        pytest.skip("the Keras backend of this process is not TensorFlow")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = np.ones((100, 4), "float32"), np.ones((100, 1), "float32")
    callback = advisor.AdvisorCallback(runs_dir=tmp_path, telemetry=False, baseline=None)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[callback])
    (path,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    report = _diagnosis(path)
    rows = {r["function"]: r for r in report.fact("compile.functions")}
    assert rows["multi_step_on_iterator"]["count"] == 1
    assert report.fact("compile.startup_seconds") > 0
    assert report.fact("compile.retraces") == 0
    assert _status(report, "C451").status == "pass"
    _budget_adds_up(report)


def test_a_fits_test_and_predict_functions_are_traced_too(tmp_path):
    """Validation and a predict inside a callback: Keras traces its test function (named as the
    train one) and its predict function once each; nothing is traced again across epochs."""
    pytest.importorskip("tensorflow")
    import keras
    import numpy as np

    if keras.backend.backend() != "tensorflow":
        pytest.skip("the Keras backend of this process is not TensorFlow")
    x, y = np.ones((100, 4), "float32"), np.ones((100, 1), "float32")

    class Predicts(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.predict(x[:8], verbose=0)

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    callback = advisor.AdvisorCallback(runs_dir=tmp_path, telemetry=False, baseline=None)
    model.fit(
        x,
        y,
        batch_size=16,
        epochs=3,
        verbose=0,
        validation_data=(x[:32], y[:32]),
        callbacks=[callback, Predicts()],
    )
    report = _diagnosis(callback.run_path)
    rows = {r["function"]: r for r in report.fact("compile.functions")}
    assert rows["multi_step_on_iterator"]["count"] == 2  # the train and the test function
    assert rows["one_step_on_data_distributed"]["count"] == 1  # predict, reused every epoch
    assert report.fact("compile.retraces") == 0
    assert _status(report, "C451").status == "pass"
    _budget_adds_up(report)
