"""A custom loop's speed of light: ``advisor.track(model=..., sample=...)`` or
``flops_per_sample=`` gives its FLOPs, counted at the loop's end, and G552 decides on it."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import advisor
from advisor.errors import UsageError
from advisor.service import RunService

FEATURES, HIDDEN, CLASSES, BATCH = 64, 256, 10, 64
# Two dense layers (biases and element-wise ops are not counted): the forward pass, the gradients
# of both weights and the hidden layer's input gradient (the input needs none), 2 FLOPs per
# multiply-add.
FORWARD = 2 * (FEATURES * HIDDEN + HIDDEN * CLASSES)
EXPECTED_FLOPS = FORWARD + 2 * FEATURES * HIDDEN + 2 * 2 * HIDDEN * CLASSES
QUIET = dict(log_every_seconds=None, telemetry=False, window_seconds=0.2, warmup_steps=3)


def _data(n=2048, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, FEATURES)).astype("float32")
    y = rng.integers(0, CLASSES, n)
    return x, y


def _analysed(tmp_path, run):
    manifest = json.loads((run.run_path / "run.json").read_text())
    assert manifest["status"] == "finished"
    service = RunService(tmp_path)
    facts = service.analyse(run.run_id).facts
    g552 = next(f for f in service.diagnose(run.run_id).findings if f.code == "G552")
    return facts, g552


def _assert_speed_of_light(facts, g552, method):
    assert facts["model.flops_method"] == method
    assert facts["model.flops_per_sample"] == pytest.approx(EXPECTED_FLOPS, rel=1e-6)
    assert facts["speed_of_light.dtype"] == "float32"
    assert 0 < facts["speed_of_light.fraction"] < 1
    achieved = EXPECTED_FLOPS * facts["throughput.samples_per_s"] / 1e12
    assert facts["speed_of_light.achieved_tflops"] == pytest.approx(achieved, rel=1e-6)
    assert g552.status in ("pass", "fail"), g552.message  # decided, whichever way


def _torch_model(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES)
    )


@pytest.mark.slow
def test_a_torch_loop_gets_its_speed_of_light_from_the_module_and_a_sample(tmp_path):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    x, y = (torch.from_numpy(a) for a in _data())
    model = _torch_model(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with advisor.track(
        BATCH, tmp_path, backend="torch", model=model, sample=x[:BATCH], **QUIET
    ) as run:
        for _ in range(3):
            for i in range(0, len(x), BATCH):
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x[i : i + BATCH]), y[i : i + BATCH])
                loss.backward()
                opt.step()
                run.step()
            run.epoch()
        weights = [p.detach().clone() for p in model.parameters()]
    # counting at the loop's end changed no weight
    assert all(torch.equal(a, b) for a, b in zip(weights, model.parameters()))
    _assert_speed_of_light(*_analysed(tmp_path, run), "torch-flop-counter")


@pytest.mark.slow
def test_a_jax_loop_gets_its_speed_of_light_from_the_jitted_step(tmp_path):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x, y = _data()
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    params = {
        "w1": jax.random.normal(k1, (FEATURES, HIDDEN)) * 0.05,
        "w2": jax.random.normal(k2, (HIDDEN, CLASSES)) * 0.05,
    }

    def loss(p, xb, yb):
        logits = jnp.maximum(xb @ p["w1"], 0.0) @ p["w2"]
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(xb.shape[0]), yb])

    @jax.jit
    def step(p, xb, yb):
        value, grads = jax.value_and_grad(loss)(p, xb, yb)
        return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads), value

    sample = (params, x[:BATCH], y[:BATCH])
    with advisor.track(BATCH, tmp_path, backend="jax", model=step, sample=sample, **QUIET) as run:
        for _ in range(3):
            for i in range(0, len(x), BATCH):
                params, value = step(params, x[i : i + BATCH], y[i : i + BATCH])
                value.block_until_ready()
                run.step()
            run.epoch()
    _assert_speed_of_light(*_analysed(tmp_path, run), "jaxpr-op-count")


@pytest.mark.slow
def test_a_gradient_tape_loop_gets_its_speed_of_light_from_the_keras_model(tmp_path):
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("a GradientTape loop needs Keras on TensorFlow")
    x, y = _data()
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(HIDDEN, activation="relu"),
            keras.layers.Dense(CLASSES),
        ]
    )
    opt = keras.optimizers.SGD(0.01)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        opt.apply_gradients(
            zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        )
        return loss

    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
    with advisor.track(BATCH, tmp_path, backend="tensorflow", model=model, **QUIET) as run:
        for _ in range(3):
            for xb, yb in dataset:
                step(xb, yb).numpy()
                run.step()
            run.epoch()
    _assert_speed_of_light(*_analysed(tmp_path, run), "tf-graph-op-count")


@pytest.mark.slow
def test_a_counting_error_is_recorded_and_never_stops_the_loop(tmp_path, caplog):
    torch = pytest.importorskip("torch")
    x, y = (torch.from_numpy(a) for a in _data(256))
    model = _torch_model(torch)
    wrong = torch.zeros(BATCH, FEATURES + 1)  # a sample the module cannot take
    steps = 0
    with caplog.at_level("WARNING", logger="advisor"):
        with advisor.track(
            BATCH, tmp_path, backend="torch", model=model, sample=wrong, **QUIET
        ) as run:
            for i in range(0, len(x), BATCH):
                torch.nn.functional.cross_entropy(model(x[i : i + BATCH]), y[i : i + BATCH])
                run.step()
                steps += 1
    assert steps == 4 and run.steps == 4
    assert len([r for r in caplog.records if "FLOPs not counted" in r.getMessage()]) == 1
    facts, g552 = _analysed(tmp_path, run)
    assert facts["speed_of_light.error"].startswith("FLOPs not counted: RuntimeError")
    assert "speed_of_light.fraction" not in facts and facts["speed_of_light.tflops_float32"] > 0
    assert g552.status == "unknown" and "FLOPs not counted" in g552.message


def test_a_loop_without_its_flops_leaves_g552_unknown_naming_the_option(tmp_path):
    with advisor.track(8, tmp_path, **QUIET) as run:
        for _ in range(12):
            run.step()
    facts, g552 = _analysed(tmp_path, run)
    assert "speed_of_light.tflops_float32" not in facts  # nothing measured without FLOPs
    assert g552.status == "unknown" and g552.missing == ["speed_of_light.fraction"]
    assert "advisor.track(model=" in g552.measure and "flops_per_sample=" in g552.measure
    assert "AdvisorCallback" not in g552.measure


@pytest.mark.slow
def test_g552_fails_a_loop_that_waits_far_more_than_it_computes(tmp_path):
    """A one-weight model and a 20 ms wait per step: millions of times below any CPU's matmul
    rate, far under G552's 0.1%, busy machine or not."""
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(4, 1)
    x = torch.randn(8, 4)
    with advisor.track(8, tmp_path, backend="torch", model=model, sample=x, **QUIET) as run:
        for _ in range(15):
            model(x).sum().backward()
            time.sleep(0.02)
            run.step()
    facts, g552 = _analysed(tmp_path, run)
    assert facts["model.flops_per_sample"] == 2 * 4 * 2  # forward and weight gradient
    assert facts["speed_of_light.fraction"] < 1e-4
    assert g552.status == "fail" and g552.message.startswith("training reaches")


@pytest.mark.slow
def test_flops_per_sample_given_outright_is_used_as_is(tmp_path):
    torch = pytest.importorskip("torch")
    x = torch.randn(1024, FEATURES)
    w = torch.randn(FEATURES, HIDDEN)
    with advisor.track(
        BATCH, tmp_path, backend="torch", flops_per_sample=2 * FEATURES * HIDDEN, **QUIET
    ) as run:
        for _ in range(3):
            for i in range(0, len(x), BATCH):
                (x[i : i + BATCH] @ w).sum().item()
                run.step()
    facts, g552 = _analysed(tmp_path, run)
    assert facts["model.flops_method"] == "given"
    assert facts["model.flops_per_sample"] == 2 * FEATURES * HIDDEN
    assert facts["speed_of_light.dtype"] == "float32"  # assumed when the loop does not say
    assert 0 < facts["speed_of_light.fraction"] < 1 and g552.status in ("pass", "fail")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(flops_per_sample=-1.0), "flops_per_sample must be a positive number"),
        (dict(flops_per_sample=float("nan")), "flops_per_sample must be a positive number"),
        (dict(sample=np.zeros((2, 3))), "pass model= too"),
        (dict(model="resnet"), "model= takes a Keras model"),
    ],
)
def test_wrong_flop_arguments_are_usage_errors_when_the_run_is_made(tmp_path, kwargs, words):
    with pytest.raises(UsageError, match=words):
        advisor.track(8, tmp_path, **kwargs)


def test_a_torch_module_or_jax_step_without_a_sample_is_a_usage_error(tmp_path):
    torch = pytest.importorskip("torch")
    with pytest.raises(UsageError, match="needs sample="):
        advisor.track(8, tmp_path, model=torch.nn.Linear(2, 2))
    advisor.track(8, tmp_path, model=torch.nn.Linear(2, 2), flops_per_sample=8.0)  # given: fine
