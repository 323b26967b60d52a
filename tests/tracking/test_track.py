"""Custom training loops: ``advisor.track`` and ``@advisor.tracked`` write what ``fit`` would."""

from __future__ import annotations

import json
import logging
import time

import pytest

import advisor
from advisor.service import RunService


def _records(run_path):
    return [json.loads(line) for line in (run_path / "worker-0.jsonl").read_text().splitlines()]


def _of(records, kind):
    return [r for r in records if r["type"] == kind]


@pytest.mark.slow
def test_a_plain_pytorch_loop_is_diagnosed_without_fit(tmp_path):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = torch.randn(1000, 16), torch.randn(1000, 1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    # backend= is given: other tests may have imported JAX too, and then it is not guessed.
    with advisor.track(
        batch_size=64,
        runs_dir=tmp_path,
        window_seconds=0.05,
        warmup_steps=3,
        log_every_seconds=None,
        telemetry_interval_seconds=0.1,
        backend="torch",
    ) as run:
        assert advisor.current_run() is run
        for _ in range(3):
            for i in range(0, 1000, 64):  # 15 full batches and one of 40
                xb, yb = x[i : i + 64], y[i : i + 64]
                opt.zero_grad()
                torch.nn.functional.mse_loss(model(xb), yb).backward()
                opt.step()
                run.step(len(xb))
            with run.validation():
                with torch.no_grad():
                    model(x)
                time.sleep(0.3)  # a slow evaluation: far above the 35% validation-share threshold
            run.epoch()
    assert advisor.current_run() is None
    records = _records(run.run_path)
    manifest = json.loads((run.run_path / "run.json").read_text())
    assert manifest["status"] == "finished" and manifest["framework"]["backend"] == "torch"
    assert manifest["config"]["loop"] == "custom" and manifest["global_batch_size"] == 64
    epochs = _of(records, "epoch")
    assert [e["steps"] for e in epochs] == [16, 16, 16] and {e["samples"] for e in epochs} == {1000}
    assert all(e["val_seconds"] >= 0.3 and e["train_seconds"] < e["seconds"] for e in epochs)
    windows = _of(records, "window")
    assert windows[0]["warmup"] and windows[0]["steps"] == 3
    assert sum(w["steps"] for w in windows) == 48 and sum(w["samples"] for w in windows) == 3000
    assert _of(records, "first_step") and _of(records, "host"), "time to first step and telemetry"
    analysis = RunService(tmp_path).analyse(run.run_id)
    assert (
        analysis.facts["context.backend"] == "torch" and analysis.facts["context.device"] == "cpu"
    )
    measured = [w for w in windows if not w["warmup"]]
    rate = sum(w["samples"] for w in measured) / sum(w["seconds"] for w in measured)
    assert analysis.facts["throughput.samples_per_s"] == pytest.approx(rate, rel=1e-6)
    report = RunService(tmp_path).diagnose(run.run_id)
    status = {f.code: f.status for f in report.findings}
    assert status["D607"] == "fail", "validation time was excluded from training and judged"
    assert not [f for f in report.findings if f.status == "error"]
    assert report.summary.passed > 0 and report.summary.fail > 0
    # Advice in the loop's own terms: no Keras compile settings or callbacks, Keras-only rules n/a.
    d607 = next(f for f in report.findings if f.code == "D607")
    assert "validation_freq" not in d607.fix and "every N epochs" in d607.fix
    for f in report.findings:
        assert "AdvisorCallback" not in (f.fix or "") + (f.measure or ""), f.code
        assert "model.compile" not in (f.fix or ""), f.code
    assert status["C450"] == status["C460"] == "n/a"


@pytest.mark.slow
def test_a_plain_jax_loop_is_diagnosed_without_fit(tmp_path):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (512, 8))
    y = x @ jnp.arange(8.0).reshape(8, 1)
    params = {"w": jnp.zeros((8, 1)), "b": jnp.zeros((1,))}

    @jax.jit
    def train_step(p, xb, yb):
        def loss(q):
            return jnp.mean((xb @ q["w"] + q["b"] - yb) ** 2)

        value, grads = jax.value_and_grad(loss)(p)
        return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads), value

    @advisor.tracked(
        batch_size=32,
        runs_dir=tmp_path,
        window_seconds=0.05,
        warmup_steps=2,
        log_every_seconds=None,
        backend="jax",
    )
    def train(p, run=None):
        assert run is advisor.current_run() and run is not None
        for _ in range(2):
            for i in range(0, 512, 32):
                p, value = train_step(p, x[i : i + 32], y[i : i + 32])
                value.block_until_ready()  # time the step, not its dispatch
                run.step()
            run.epoch()
        return p, run

    params, run = train(params)
    assert float(params["w"][7, 0]) > 0  # it trained
    records = _records(run.run_path)
    assert [e["steps"] for e in _of(records, "epoch")] == [16, 16]
    facts = RunService(tmp_path).analyse(run.run_id).facts
    assert facts["context.backend"] == "jax" and facts["context.framework"] == "custom"
    assert facts["throughput.measured_steps"] == 30 and facts["run.epochs"] == 2
    report = RunService(tmp_path).diagnose(run.run_id)
    assert not [f for f in report.findings if f.status == "error"]


def test_a_loop_without_epoch_markers_is_one_epoch_and_an_exception_fails_the_run(tmp_path):
    with advisor.track(
        batch_size=4, runs_dir=tmp_path, telemetry=False, warmup_steps=0, log_every_seconds=None
    ) as run:
        for _ in range(10):
            run.step()
        run.step(2)  # a last, partial batch
    records = _records(run.run_path)
    (epoch,) = _of(records, "epoch")
    assert epoch["steps"] == 11 and epoch["samples"] == 42
    assert not any(w["warmup"] for w in _of(records, "window"))

    @advisor.tracked(batch_size=4, runs_dir=tmp_path / "b", telemetry=False)
    def train():
        advisor.current_run().step()
        raise RuntimeError("diverged")

    with pytest.raises(RuntimeError, match="diverged"):
        train()
    (failed,) = (tmp_path / "b").iterdir()
    assert json.loads((failed / "run.json").read_text())["status"] == "failed"
    events = _of(_records(failed), "event")
    assert any("training raised RuntimeError: diverged" in e["message"] for e in events)


def test_without_a_batch_size_steps_are_counted_and_samples_unknown(tmp_path):
    with advisor.track(
        runs_dir=tmp_path, telemetry=False, warmup_steps=0, log_every_seconds=None
    ) as run:
        for _ in range(4):
            run.step()
    (epoch,) = _of(_records(run.run_path), "epoch")
    assert epoch["steps"] == 4 and "samples" not in epoch  # absent, never zero
    facts = RunService(tmp_path).analyse(run.run_id).facts
    assert "throughput.samples_per_s" not in facts and facts["throughput.steps_per_s"] > 0


def test_tracking_that_cannot_start_never_stops_the_loop(tmp_path, caplog):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the store should be")
    with caplog.at_level(logging.WARNING, logger="advisor"):
        with advisor.track(batch_size=8, runs_dir=blocker, telemetry=False) as run:
            for _ in range(5):
                run.step()
            run.epoch()
            with run.validation():
                pass
    assert run.run_path is None and run.steps == 0
    assert "could not start the run" in caplog.text
    with advisor.track(
        batch_size=8, runs_dir=tmp_path / "ok", telemetry=False, log_every_seconds=None
    ) as run:
        run.step()
        run.step("many")  # a mistake in the loop's call: recording stops, the loop does not
        run.step()
    events = _of(_records(run.run_path), "event")
    assert any("failed in step" in e["message"] for e in events)
    assert json.loads((run.run_path / "run.json").read_text())["status"] == "finished"


def test_the_backend_is_found_from_imported_frameworks_or_left_unknown():
    from advisor.tracking.context import detect_backend as _detect_backend

    assert _detect_backend({"torch": 1, "tensorflow": 1}) == "torch"  # tf.data feeding a torch loop
    assert _detect_backend({"jax": 1, "tensorflow": 1}) == "jax"
    assert _detect_backend({"tensorflow": 1}) == "tensorflow"
    assert _detect_backend({"torch": 1, "jax": 1}) is None
    assert _detect_backend({}) is None


def test_bad_arguments_are_usage_errors():
    from advisor.errors import UsageError

    with pytest.raises(UsageError, match="batch_size"):
        advisor.track(batch_size=0)
    with pytest.raises(UsageError, match="backend"):
        advisor.track(batch_size=8, backend="mxnet")
    with pytest.raises(TypeError):
        advisor.track(batch_size=8, window=3)


def test_the_epoch_end_work_is_the_advisors_not_the_next_step(tmp_path, monkeypatch):
    """What the advisor does at an epoch's end (its records, the memory reading, the flush) is
    timed as its own hooks' time between windows: the next epoch's first step does not carry it
    (it read as a step outlier per epoch, and as ever-slower steps while the memory judgement grew
    with the epochs). The epoch-end work is made 0.3 s here; the loop's steps do nothing."""
    from advisor.collectors.memory import MemoryCollector

    pause = 0.3
    ended = MemoryCollector.on_epoch_end
    monkeypatch.setattr(
        MemoryCollector, "on_epoch_end", lambda self, *a: (time.sleep(pause), ended(self, *a))
    )
    with advisor.track(
        batch_size=4, runs_dir=tmp_path, telemetry=False, warmup_steps=0, log_every_seconds=None
    ) as run:
        for _ in range(4):
            for _ in range(5):
                run.step()
            run.epoch()
    records = _records(run.run_path)
    windows = _of(records, "window")
    assert len(windows) == 4 and all(w["step_time_max"] < pause / 2 for w in windows), windows
    budget = _of(records, "budget")[-1]
    assert budget["seconds"]["advisor_hooks"] >= 4 * pause
    assert abs(sum(budget["seconds"].values()) - budget["wall_seconds"]) < 1e-3


def test_the_memory_growth_is_judged_on_a_schedule_over_many_epochs(tmp_path, monkeypatch):
    """Every epoch's end up to 64 epochs, then each time the epochs grew by 1/32: a loop of
    thousands of short epochs does not sort every reading at every epoch's end."""
    import advisor.growth
    from advisor.collectors.memory import JUDGE_EVERY_UP_TO

    judged: list[int] = []
    analyse = advisor.growth.analyse
    monkeypatch.setattr(
        advisor.growth, "analyse", lambda e, v, *a: (judged.append(len(v)), analyse(e, v, *a))[1]
    )
    with advisor.track(
        batch_size=4, runs_dir=tmp_path, telemetry=False, warmup_steps=0, log_every_seconds=None
    ) as run:
        for _ in range(400):
            run.step()
            run.epoch()
    assert judged[:JUDGE_EVERY_UP_TO] == list(range(1, JUDGE_EVERY_UP_TO + 1))
    assert len(judged) < 160 and judged[-1] > 385, judged[-5:]
    gaps = [b - a for a, b in zip(judged, judged[1:])]
    assert all(gap <= b // 32 + 1 for gap, b in zip(gaps, judged[1:])), gaps
