"""The collectors, the baseline and the profiler on all four: Keras 3 on TensorFlow, JAX and
torch, and tf_keras (Keras 2).

The backend is fixed when Keras is first imported, so each one runs ``driver.py`` in a process
of its own (one process per backend does every check, to keep CI time down) and the tests here
assert on what it wrote: its observations in ``results.json`` and its run directories. Ground
truth for sample counts is a layer inside the compiled train step that counts what it trains
on. On JAX the driver ends by training slowly and is killed with SIGKILL mid-epoch.

The drivers are independent, so all of them start at once (``drivers``) and each backend's
tests wait only for their own: much of a driver's time is spent importing frameworks, compiling
and in time-boxed baseline segments, and on two cores four drivers side by side take about half
the time of four in a row. Nothing they check depends on being alone on the machine (the
baseline figures are only asserted to be positive), and their deadline allows for the sharing.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from processes import kill_leftovers

from advisor.analysis.registry import registry
from advisor.store.reader import RunReader, list_run_dirs
from advisor.store.schema import (
    BaselineRecord,
    BudgetRecord,
    ContextRecord,
    EpochRecord,
    FirstStepRecord,
    HostSample,
    TraceRecord,
    WindowRecord,
)

DRIVER = Path(__file__).with_name("driver.py")
FLAVORS: dict[str, dict[str, str]] = {
    "tensorflow": {"KERAS_BACKEND": "tensorflow"},
    "jax": {"KERAS_BACKEND": "jax"},
    "torch": {"KERAS_BACKEND": "torch"},
    "tf_keras": {"KERAS_BACKEND": "tensorflow", "TF_USE_LEGACY_KERAS": "1"},
}
AVAILABLE = {"jax": "jax", "torch": "torch", "tf_keras": "tf_keras", "tensorflow": "tensorflow"}
DRIVER_TIMEOUT_S = (
    600  # from the start of all drivers together; one alone takes 15–30 s on 2 idle cores
)
N, BATCH = 200, 32  # as in driver.py
FLOPS_PER_SAMPLE = 2 * (2 * 8 * 16) + 3 * (2 * 16 * 1)  # Dense 8→16 (no input gradient), Dense 16→1

# starts a training process per backend (a minute or more each with a core busy): CI's own step
pytestmark = [pytest.mark.slow, pytest.mark.long]


@dataclass
class Matrix:
    flavor: str
    out: Path
    results: dict[str, Any]
    killed: dict[str, Any] | None = None

    def run(self, key: str, sub: str | None = None) -> Any:
        entry = self.results[key] if sub is None else self.results[key][sub]
        assert "error" not in entry, entry.get("traceback", entry["error"])
        return RunReader(entry["run"]).read()


@dataclass
class Driver:
    """One backend's driver process, started by ``drivers`` and awaited by ``matrix``."""

    out: Path
    proc: subprocess.Popen[bytes]
    log: Any
    deadline: float


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _start(flavor: str, out: Path, deadline: float) -> Driver:
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "TF_USE_LEGACY_KERAS")}
    env.update(FLAVORS[flavor])
    env.update({"TF_CPP_MIN_LOG_LEVEL": "3", "ADVISOR_RUNS_DIR": str(out / "unused")})
    args = [sys.executable, str(DRIVER), str(out)] + (["--kill"] if flavor == "jax" else [])
    log = (out / "driver.log").open("w")
    proc = subprocess.Popen(
        args, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
    )
    return Driver(out, proc, log, deadline)


@pytest.fixture(scope="module")
def drivers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Every selected, installed backend's driver, all started at once (see the module's
    docstring); a backend whose tests were deselected (``-k torch``) is not started."""
    selected = {
        item.callspec.params["matrix"]
        for item in request.session.items
        if item.path == request.path
        and "matrix" in getattr(getattr(item, "callspec", None), "params", {})
    }
    deadline = time.monotonic() + DRIVER_TIMEOUT_S
    started: dict[str, Driver] = {}
    try:
        for flavor in FLAVORS:
            if flavor in selected and _installed(AVAILABLE[flavor]):
                started[flavor] = _start(
                    flavor, tmp_path_factory.mktemp(f"matrix-{flavor}"), deadline
                )
        yield started
    finally:
        kill_leftovers(driver.proc for driver in started.values())
        for driver in started.values():
            driver.log.close()


# JAX first: after its results its driver trains slowly until killed; waiting for it first keeps
# that stretch short (it would end by itself after a few minutes), while the others go on.
@pytest.fixture(scope="module", params=sorted(FLAVORS, key=lambda flavor: flavor != "jax"))
def matrix(request: pytest.FixtureRequest, drivers: dict[str, Driver]) -> Any:
    flavor = request.param
    if not _installed(AVAILABLE[flavor]):
        pytest.skip(f"{AVAILABLE[flavor]} is not installed")
    driver = drivers[flavor]
    out, proc = driver.out, driver.proc
    killed = None
    try:
        while not (out / "results.json").exists():
            if proc.poll() is not None or time.monotonic() > driver.deadline:
                pytest.fail(
                    f"{flavor} driver ended without results (exit {proc.poll()}):\n"
                    + (out / "driver.log").read_text()[-4000:]
                )
            time.sleep(0.2)
        if flavor == "jax":
            killed = _kill_mid_epoch(proc, out / "killed", driver.deadline)
        else:
            proc.wait(timeout=max(1.0, driver.deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    results = json.loads((out / "results.json").read_text())
    return Matrix(flavor, out, results, killed)


def _kill_mid_epoch(proc: subprocess.Popen[bytes], runs: Path, deadline: float) -> dict[str, Any]:
    """SIGKILL the driver once its slow run has flushed at least five windows."""
    seen = 0
    while seen < 5:
        assert proc.poll() is None, "the slow run ended before it was killed"
        assert time.monotonic() < deadline, "the slow run flushed no windows in time"
        time.sleep(0.2)
        dirs = list_run_dirs(runs) if runs.exists() else []
        if dirs and (dirs[0] / "worker-0.jsonl").exists():
            seen = (dirs[0] / "worker-0.jsonl").read_text().count('"type":"window"')
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return {"runs": runs, "windows_seen": seen}


# ---------------------------------------------------------------------------------------------


def test_sample_counts_are_exact(matrix: Matrix) -> None:
    run = matrix.run("counts")
    entry = matrix.results["counts"]
    assert entry["trained"] == 2 * N  # the layer's own count: two epochs, partial last batches
    windows, epochs = run.of_type(WindowRecord), run.of_type(EpochRecord)
    assert sum(w.samples for w in windows) == entry["trained"]
    assert [e.samples for e in epochs] == [N, N]
    assert (
        sum(w.steps for w in windows) == sum(e.steps for e in epochs) == entry["iterations"] == 14
    )
    assert (
        run.manifest.steps_per_execution == entry["spe"] == (1 if matrix.flavor == "torch" else 4)
    )
    assert len(run.of_type(FirstStepRecord)) == 1 and run.status == "finished"
    assert len(windows) >= 2  # each epoch's end closes a window: else there is no seam to check
    for before, after in itertools.pairwise(windows):
        assert after.step_begin == before.step_end


def test_an_input_of_unknown_length_is_counted_as_it_trained(matrix: Matrix) -> None:
    run = matrix.run("unknown_length")
    entry = matrix.results["unknown_length"]
    assert entry["trained"] == entry["epochs"] * N  # the layer's count (validation does not train)
    epochs = run.of_type(EpochRecord)
    assert [(e.steps, e.samples) for e in epochs] == [(7, N)] * entry["epochs"]  # 6 × 32 + 8
    assert sum(w.samples for w in run.of_type(WindowRecord)) == entry["trained"]


def test_whatif_dataloader_workers_on_keras_torch(matrix: Matrix) -> None:
    if matrix.flavor != "torch":
        pytest.skip("Keras on torch iterates a DataLoader itself; elsewhere tf.data owns it")
    entry = matrix.results["whatif_loader_workers"]
    assert entry["status"] == "measured", entry
    assert len(entry["rounds"]) == 3 and None not in entry["rounds"], entry  # every round fitted


def test_batch_hooks_run_async_where_keras_allows(matrix: Matrix) -> None:
    entry = matrix.results["counts"]
    assert entry["async_safe"] is True  # throughput and epochs are safe off the training thread
    if matrix.flavor in ("jax", "torch"):
        # Keras dispatched the batch-end hooks to its worker threads, and the counts above held.
        assert entry["hook_threads_off_main"] == [True]
    else:  # TensorFlow and tf_keras call every hook on the training thread
        assert entry["hook_threads_off_main"] == [False]
    assert matrix.results["profile"]["async_safe"] is False  # step markers need the training thread


def test_context_names_framework_backend_and_defaults(matrix: Matrix) -> None:
    facts, errors = registry().derive(matrix.run("counts"))
    assert errors == []
    backend = "tensorflow" if matrix.flavor == "tf_keras" else matrix.flavor
    assert facts["context.backend"] == backend
    assert facts["context.framework"] == ("tf_keras" if matrix.flavor == "tf_keras" else "keras3")
    assert facts["context.legacy_keras"] is (matrix.flavor == "tf_keras")
    # XLA by default: on JAX always; TensorFlow only with an accelerator (this is a CPU); never
    # on torch.
    assert facts["context.jit_compile_default"] is (matrix.flavor == "jax")
    assert facts["context.jit_compile"] is (matrix.flavor == "jax")
    assert facts["context.device"] == "cpu" and facts["context.device_count"] >= 1
    assert facts["context.dtype_policy"] == "float32" and facts["context.mixed_precision"] is False
    assert facts["context.input_kind"] == "numpy" and facts["context.global_batch_size"] == BATCH
    # The partial last batch is a new input shape: one retrace (TF) or one more compile (JAX).
    if matrix.flavor == "torch":
        assert "context.graph_retraces" not in facts  # eager torch has no graph to retrace
    else:
        assert facts["context.graph_retraces"] == 1
    if matrix.flavor == "tf_keras":  # a tf_keras job never loads Keras 3 because of us
        assert "keras.src" not in matrix.results["modules"]
    mixed, _ = registry().derive(matrix.run("mixed_precision"))
    assert (
        mixed["context.dtype_policy"] == "mixed_bfloat16"
        and mixed["context.mixed_precision"] is True
    )


def test_baseline_on_every_input_kind_restores_the_model(matrix: Matrix) -> None:
    kinds = matrix.results["baseline"]
    assert "error" not in kinds, kinds.get("traceback")
    with_loader = matrix.flavor in ("jax", "torch") and _installed("torch")
    expected = {"numpy", "tf.data", "pydataset", "generator"} | (
        {"torch"} if with_loader else set()
    )
    assert set(kinds) == expected
    for kind, entry in kinds.items():
        run = matrix.run("baseline", kind)
        (record,) = run.of_type(BaselineRecord)
        assert record.error is None, f"{kind}: {record.error}"
        assert record.input_kind == kind and record.batch_size == BATCH
        assert record.cached_samples_per_s and record.cached_samples_per_s > 0
        if kind == "generator":  # a generator cannot be replayed: its real rate comes from training
            assert record.real_samples_per_s is None
        else:
            assert record.real_samples_per_s and record.real_samples_per_s > 0
        # The baseline trained the same model; its state was restored, counter included.
        assert entry["trained"] == entry["expected"], kind
        facts, errors = registry().derive(run)
        assert errors == [] and facts["baseline.cached_samples_per_s"] > 0
    measured = matrix.results["measure_input"]
    assert "error" not in measured, measured.get("traceback")
    assert measured["unchanged"] is True and measured["real"] > 0 and measured["cached"] > 0


def test_profile_capture_and_summary(matrix: Matrix) -> None:
    if matrix.flavor != "torch" and not _installed("xprof"):
        pytest.skip("XProf profiles are summarised with xprof (pip install xprof)")
    run = matrix.run("profile")
    records = [r for r in run.of_type(TraceRecord) if r.error is None]
    assert records and records[-1].summary, [r.error for r in run.of_type(TraceRecord)]
    folder = run.path / records[-1].path
    pattern = "*.pt.trace.json" if matrix.flavor == "torch" else "*.xplane.pb"
    assert list(folder.glob(pattern)), sorted(p.name for p in folder.iterdir())
    facts, errors = registry().derive(run)
    assert errors == []
    assert facts["trace.present"] is True and facts["trace.steps_marked"] is True
    assert facts["trace.marked_steps"] == 25
    assert facts["trace.steps"] >= 20  # 25 marked; XProf may drop steps cut by the capture's edges
    assert "trace.withheld" not in facts
    assert facts["trace.step_time_ms.mean"] > 0 and facts["trace.hardware"] == "CPU_ONLY"
    if matrix.flavor == "jax":
        # XProf has no op table for XLA:CPU, and sees no input outside tf.data: both unknown.
        assert "trace.top_ops" not in facts and "trace.input_percent" not in facts
    else:
        assert facts["trace.top_ops"] and 0 <= facts["trace.input_percent"] <= 100
    if matrix.flavor == "torch":  # shares of the step cycle add up
        parts = (
            facts["trace.input_percent"]
            + facts["trace.host_compute_percent"]
            + facts["trace.all_others_percent"]
        )
        assert parts == pytest.approx(100, abs=0.1)
        assert any(op["name"].startswith("aten::") for op in facts["trace.top_ops"])
    windows = run.of_type(WindowRecord)
    assert any(w.profiled for w in windows) and not all(w.profiled for w in windows)


def test_telemetry_and_flops(matrix: Matrix) -> None:
    run = matrix.run("profile")
    assert run.of_type(HostSample)
    values: dict[str, Any] = {}
    for record in run.of_type(ContextRecord):
        values.update(record.values)
    assert values["telemetry.samples"] >= 2 and values["telemetry.gpu_present"] is False
    method = {
        "tensorflow": "tf-graph-op-count",
        "tf_keras": "tf-graph-op-count",
        "jax": "jaxpr-op-count",
        "torch": "torch-flop-counter",
    }[matrix.flavor]
    assert values["model.flops_method"] == method
    assert values["model.flops_per_sample"] == pytest.approx(FLOPS_PER_SAMPLE)


def test_the_budget_times_callbacks_and_saves_and_puts_them_back(matrix: Matrix) -> None:
    entry = matrix.results["budget"]
    run = matrix.run("budget")
    final = [b for b in run.of_type(BudgetRecord) if b.final]
    assert len(final) == 1
    budget = final[0]
    # Every second is charged once: the categories add up to the wall clock.
    assert sum(budget.seconds.values()) == pytest.approx(budget.wall_seconds, abs=1e-4)
    assert budget.seconds["unaccounted"] <= 0.01 * budget.wall_seconds
    rows = {(r.name, r.hook): r for r in budget.callbacks}
    busy = rows[("Busy", "on_train_batch_end")]
    assert (
        busy.calls == entry["busy_calls"] > 0
    )  # Busy is not async-safe: every call on the training thread
    assert busy.seconds >= 0.002 * busy.calls
    assert budget.checkpoint.count == 2 and budget.checkpoint.by == {"Saver.on_epoch_end": 2}
    assert budget.checkpoint.bytes and budget.checkpoint.bytes > 0
    assert budget.seconds["validation"] > 0 and budget.seconds["train_steps"] > 0
    assert entry["wrappers_left"] == []  # the originals are back after the fit
    facts, errors = registry().derive(run)
    assert errors == [] and facts["callbacks.slowest"] == "Busy.on_train_batch_end"
    assert 0 < facts["goodput"] < 1


def test_killed_run_keeps_flushed_records(matrix: Matrix) -> None:
    if matrix.killed is None:
        pytest.skip("the killed-run check runs on JAX")
    (run_dir,) = list_run_dirs(matrix.killed["runs"])
    run = RunReader(run_dir).read()
    assert run.status == "killed"
    windows = run.of_type(WindowRecord)
    assert len(windows) >= matrix.killed["windows_seen"]
    for before, after in itertools.pairwise(windows):
        assert after.step_begin == before.step_end
    assert all(w.samples == w.steps * 8 for w in windows)
    facts, errors = registry().derive(run)
    assert errors == [] and facts["run.status"] == "killed"
