"""The backend what-if's parts without processes: candidate names, the batch sample and its file,
the result's speedups and table, the child's one-line reasons, and how ``whatif(["backends"])`` is
wired."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.errors import UsageError
from advisor.experiments.backends.child import reason_line
from advisor.experiments.backends.export import read_batches, sample_batches, write_batches
from advisor.experiments.backends.result import (
    FAILED,
    MEASURED,
    BackendCandidate,
    BackendsResult,
    Config,
    all_configs,
)
from advisor.experiments.backends.runner import choose


def test_config_names_and_changes() -> None:
    assert [c.name for c in all_configs()] == [
        "tensorflow+jit",
        "tensorflow",
        "jax+jit",
        "jax",
        "torch+jit",
        "torch",
    ]
    assert Config.parse("torch+jit") == Config("torch", True)
    assert Config("torch", True).label == "torch (torch.compile)"
    assert Config("jax", False).change == "KERAS_BACKEND=jax, jit_compile=False"
    with pytest.raises(UsageError, match="unknown backend candidate"):
        Config.parse("mxnet")
    with pytest.raises(UsageError):
        Config.parse("jax+xla")


def test_the_runs_own_comes_first_once() -> None:
    own = Config("tensorflow", False)
    assert [c.name for c in choose(["jax", "tensorflow", "jax"], own)] == ["tensorflow", "jax"]
    assert len(choose(None, own)) == 6 and choose("all", own)[0] == own


def test_arrays_sample_whole_batches() -> None:
    x, y = np.arange(100, dtype=np.float32).reshape(50, 2), np.arange(50)
    xs, ys, size, batches = sample_batches((x, y), 8, count=4)
    assert (size, batches, xs.shape, ys.shape) == (8, 4, (32, 2), (32,))
    xs, ys, size, batches = sample_batches((x, y), 16, count=32)
    assert batches == 3 and len(xs) == 48  # the short last batch is left out
    with pytest.raises(Exception, match="at least one batch"):
        sample_batches((x[:4], y[:4]), 8)


def test_iterables_of_batches_and_nested_inputs_round_trip(tmp_path) -> None:
    batches = [
        ({"a": np.ones((4, 3)) * i, "b": np.zeros((4, 1))}, np.full((4,), i)) for i in range(5)
    ]
    batches.append(
        ({"a": np.ones((2, 3)), "b": np.zeros((2, 1))}, np.ones(2))
    )  # a short last batch
    x, y, size, count = sample_batches(iter(batches), None, count=10)
    assert (size, count) == (4, 5)
    write_batches(tmp_path / "b.npz", x, y, size)
    found, size = read_batches(tmp_path / "b.npz")
    assert size == 4 and len(found) == 5
    assert (
        found[3][0]["a"].tolist() == (np.ones((4, 3)) * 3).tolist()
        and found[3][1].tolist() == [3] * 4
    )


def test_tf_data_is_sampled_without_touching_the_dataset() -> None:
    tf = pytest.importorskip("tensorflow")
    ds = tf.data.Dataset.from_tensor_slices((np.ones((40, 2), np.float32), np.zeros(40))).batch(8)
    x, y, size, count = sample_batches(ds, None, count=3)
    assert (size, count, x.shape) == (8, 3, (24, 2))
    assert sum(1 for _ in ds) == 5


def _measured(name: str, rounds: list[float]) -> BackendCandidate:
    return BackendCandidate(Config.parse(name), MEASURED, rounds=rounds, compile_seconds=0.5)


def test_speedup_band_and_table() -> None:
    result = BackendsResult("tensorflow", 64, 8)
    result.candidates = {
        "tensorflow": _measured("tensorflow", [100, 101, 99, 100]),
        "jax+jit": _measured("jax+jit", [200, 204, 196, 200]),
        "torch": BackendCandidate(
            Config("torch", False), FAILED, "cannot rebuild the model on torch: X"
        ),
    }
    jax = result.candidates["jax+jit"]
    assert result.speedup(jax) == pytest.approx(2.0)
    assert result.speedup_band(jax) == pytest.approx(
        0.0101, abs=1e-4
    )  # the paired ratios 2.0, 2.02, 1.98, 2.0
    assert [c.name for c in result.measured()] == ["jax+jit", "tensorflow"]
    assert result.summary() == "jax+jit 2.00× (±1%); tensorflow 1.00× (±0%) (own)"
    rows = {r["candidate"]: r for r in result.to_dict()["candidates"]}
    assert rows["torch"]["reason"].startswith("cannot rebuild") and rows["jax+jit"]["rounds"] == [
        200,
        204,
        196,
        200,
    ]
    text = result.render()
    assert (
        "tensorflow *" in text
        and "2.00×" in text
        and "failed: cannot rebuild the model on torch" in text
    )


def test_paired_rounds_cancel_the_machine_slowing_down_and_unpaired_ones_add_their_bands() -> None:
    result = BackendsResult("tensorflow", 64, 8)
    # every second pass ran on a machine 40% slower, for both: the paired ratios are all 2.0
    result.candidates = {
        "tensorflow": _measured("tensorflow", [100, 60] * 3),
        "jax+jit": _measured("jax+jit", [200, 120] * 3),
    }
    jax = result.candidates["jax+jit"]
    assert jax.relative_band == pytest.approx(0.25) and result.candidates[
        "tensorflow"
    ].relative_band == pytest.approx(0.25)
    assert result.paired_ratios(jax) == [2.0] * 6
    assert result.speedup(jax) == pytest.approx(2.0) and result.speedup_band(jax) == pytest.approx(
        0.0
    )
    # a stalled round (under a third of the arm's median) is left out of the pairs
    result.candidates["jax+jit"] = jax = _measured("jax+jit", [200, 120, 200, 120, 200, 20])
    assert result.paired_ratios(jax) == [2.0] * 5
    # rounds that do not pair up (a candidate with fewer): the ratio of the medians, the bands added
    result.candidates["jax+jit"] = jax = _measured("jax+jit", [200, 204, 196])
    result.candidates["tensorflow"] = _measured("tensorflow", [100, 101, 99, 100])
    assert result.paired_ratios(jax) is None
    assert result.speedup(jax) == pytest.approx(2.0) and result.speedup_band(jax) == pytest.approx(
        0.01 + 0.02
    )


def test_child_reasons_are_one_clean_line() -> None:
    exc = RuntimeError(
        "Exception encountered when calling L.call().\n\n\x1b[1mboom\x1b[0m\n\n"
        "Arguments received by L.call(): x"
    )
    assert reason_line(exc) == "RuntimeError: Exception encountered when calling L.call(). boom"
    assert reason_line(ValueError("x" * 1000)) == "ValueError: " + "x" * 1000  # whole, not cut


def test_whatif_backends_only_runs_the_backend_whatif(monkeypatch) -> None:
    keras = pytest.importorskip("keras")
    import advisor
    import advisor.experiments.backends as backends

    calls = []
    fake = BackendsResult("tensorflow", 32, 4)
    monkeypatch.setattr(backends, "measure_backends", lambda *a, **k: calls.append(k) or fake)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    result = advisor.whatif(
        model, (np.ones((64, 2)), np.ones(64)), candidates=["backends"], backends_max_seconds=42
    )
    assert result.backends is fake and calls[0]["max_seconds"] == 42 and not result.candidates
    assert result.summary() == "backends: no backend measured"


def test_stopping_a_candidate_whose_process_has_gone_does_not_raise(tmp_path):
    """A candidate's process that exited on its own (killed by a loaded host's timeout, a crash)
    leaves the "stop" line unsent in the pipe's buffer; closing the pipe must not raise
    BrokenPipeError out of the what-if (seen beside a busy core on a fresh clone). A real
    process."""
    import subprocess
    import sys

    from advisor.experiments.backends.process import Child
    from advisor.experiments.backends.result import BackendCandidate, Config

    proc = subprocess.Popen(
        [sys.executable, "-c", "pass"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    proc.wait()
    child = Child(BackendCandidate(Config("jax", True)), proc, tmp_path / "stderr.txt")
    child.send("stop")  # the pipe is broken: the line stays in its buffer
    child.stop()  # no BrokenPipeError
    assert proc.stdin is not None and proc.stdin.closed


def test_the_warm_up_paces_segments_by_its_last_fit_not_a_second_compile() -> None:
    """torch.compile compiles again on the second ``fit`` call: a pace that counted it made 2-step
    segments running at half the compiled speed. A scripted ``fit`` (step 1 ms, its first call here
    2 s slower) stands for the child's own, which needs a backend."""
    from advisor.experiments.backends.child import warm

    calls: list[int] = []

    def fit(steps: int) -> tuple[int, float]:
        calls.append(steps)
        return steps, steps * 0.001 + (2.0 if len(calls) == 1 else 0.0)

    pace, recompile = warm(fit, warmup=0.0)
    assert calls == [3, 6]  # one fit after the slow one, even when the warm-up time is spent
    assert pace == pytest.approx(0.001) and recompile == pytest.approx(2.0)
    pace, recompile = warm(lambda steps: (steps, steps * 0.001), warmup=0.0)
    assert pace == pytest.approx(0.001) and recompile == pytest.approx(0.0)


def test_backends_candidates_are_checked_before_anything_starts() -> None:
    keras = pytest.importorskip("keras")
    import advisor

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    data = (np.ones((64, 2)), np.ones(64))
    with pytest.raises(UsageError, match="unknown backend candidate 'jax\\+xla'"):
        advisor.whatif(model, data, candidates=["backends"], backends_candidates=["jax+xla"])
    with pytest.raises(UsageError, match="non-empty list"):
        advisor.whatif(model, data, candidates=["backends"], backends_candidates="torch")


@pytest.mark.slow
@pytest.mark.long
def test_backends_candidates_measure_only_those_beside_the_own() -> None:
    """A real backend what-if asked for one candidate: that one and the model's own backend are
    measured, each in a fresh process, and no other backend is started."""
    keras = pytest.importorskip("keras")
    pytest.importorskip("jax")
    import advisor

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    rng = np.random.default_rng(0)
    x, y = rng.random((512, 8), dtype=np.float32), rng.random((512, 1), dtype=np.float32)
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    result = advisor.whatif(
        model,
        (x, y),
        candidates=["backends"],
        batch_size=32,
        backends_candidates=["jax+jit"],
        backends_max_seconds=120,
    )
    found = result.backends.candidates
    assert set(found) == {result.backends.own, "jax+jit"}, found
    assert found["jax+jit"].status == MEASURED, found["jax+jit"].reason
