"""Shared test setup: quiet TensorFlow, one thread per op pool (2-core machines), tiny models."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "2")
# torch (and OpenMP BLAS) with one thread, here and in the processes tests start: on a
# shared 2-core machine torch's 2-thread OpenMP pool turned a 2.5 ms step into 10–140 ms.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402


def _hypothesis_profiles() -> None:
    """Property tests draw the same examples on every run of the suite and in CI (``replay``:
    derandomized, no example database written into the checkout, no deadline on a busy
    machine), or new ones with ``ADVISOR_HYPOTHESIS=explore`` (random, ten times the examples,
    the failing example's blob printed to replay it). docs/testing.md says how to use them."""
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:  # the test extra is not installed: no property tests run
        return
    from property_examples import profile

    common = {
        "database": None,
        "deadline": None,
        "print_blob": True,
        "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    }
    settings.register_profile("replay", derandomize=True, **common)
    settings.register_profile("explore", derandomize=False, max_examples=1000, **common)
    settings.load_profile(profile())
    if profile() == "replay":
        _without_local_constants()


def _without_local_constants() -> None:
    """Hypothesis mixes constants of the code loaded so far into its draws: which modules a
    process has loaded when a test draws depends on the tests before it, so two runs of the
    same command drew different examples. Replaying draws without them (exploring keeps them:
    they find edge cases). Hypothesis has no setting for this; its provider's lookup is
    replaced, and a Hypothesis without it is left alone."""
    from hypothesis.internal.conjecture import providers

    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        empty = providers.Constants()
        providers._get_local_constants = lambda: empty


_hypothesis_profiles()

# What a test prints for the reader of the run (the range corpus's copies per family): recorded
# with ``record_property(PRINTED, text)`` and printed in the summary by the controller. Under
# pytest-xdist (the suite's default two workers) a worker's own output is never shown, not even
# with ``capsys.disabled()``; its reports, user properties included, reach the controller.
PRINTED = "printed"
_printed: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _printed.extend(str(value) for name, value in report.user_properties if name == PRINTED)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _printed and not hasattr(config, "workerinput"):  # the controller (or -n 0) prints
        terminalreporter.section("printed by the tests")
        for text in _printed:
            terminalreporter.write_line(text)


# Files whose tests share the session's killed processes (below): one unit of work under xdist.
SHARED_PROCESS_FILES = frozenset(
    {
        "tests/collectors/test_killed.py",
        "tests/faults/test_killed_runs.py",
        "tests/launch/test_sweep_real.py",
    }
)


# The longest units of work (seconds of a busy 2-core host, `--durations`), handed out first so
# that none of them starts last while the other worker idles; the rest keep their file order.
LONGEST_FIRST = (
    # 150-165 s: a two-node cluster, five sweeps; last in file order, it was the tail of the suite,
    # ~70 s with the other worker idle (a simulation over `--durations=0`)
    "tests/launch/test_ray_real.py",
    # 3-4 min each (long): the range corpus's two halves, one per worker
    "tests/faults/test_range_corpus.py",
    "tests/faults/test_range_corpus_second.py",
    "killed-processes",
    "tests/experiments/test_whatif.py",
    "tests/backends/test_matrix.py",
    "tests/scenarios/test_scenarios.py",
    # 90-160 s: each candidate a fresh process importing its backend
    "tests/experiments/test_backends.py",
    "tests/diagnosis/test_default_coverage.py",
    "tests/backends/test_demo_backends.py",
    "tests/experiments/test_baseline.py",
    "tests/test_ci_recipe.py",
    "tests/diagnosis/test_end_to_end.py",
    "tests/collectors/test_profiler.py",
    "tests/launch/test_slurm_real.py",  # ~70 s, mostly waiting on its Slurm jobs
)


def _unit(item: pytest.Item) -> str:
    path = item.nodeid.split("::", 1)[0]
    return "killed-processes" if path in SHARED_PROCESS_FILES else path


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``-n 2 --dist loadgroup``, pyproject.toml) each test file is one unit
    of work, run whole on one worker, so that a module fixture that trains runs once; the files
    that share the killed processes of this conftest are one unit, so that those start once. The
    longest units come first (``--no-loadscope-reorder`` keeps this order)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    rank = {unit: i for i, unit in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(_unit(item), len(rank)))  # stable: file order otherwise
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_unit(item)))


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    """A fresh store for the test; ADVISOR_RUNS_DIR points at it."""
    path = tmp_path / "runs"
    monkeypatch.setenv("ADVISOR_RUNS_DIR", str(path))
    return path


@pytest.fixture
def threads_left():
    """Call it after the work under test: the names of the threads started since the test began
    that are still running, after waiting up to ``wait_s`` for them to end (a closed pool's
    threads end on their own, soon). The advisor's one heartbeat thread per process is not one."""
    import threading

    before = set(threading.enumerate())

    def left(wait_s: float = 20.0) -> list[str]:
        deadline = time.monotonic() + wait_s
        for thread in set(threading.enumerate()) - before:
            thread.join(max(0.0, deadline - time.monotonic()))
        return sorted(
            t.name for t in set(threading.enumerate()) - before if t.name != "advisor-heartbeat"
        )

    return left


# A real sweep whose JAX configuration loses worker 1 (it SIGKILLs itself at step 3 of epoch 1),
# followed by a one-process mirrored configuration: tests/launch/test_sweep_real.py checks the
# sweep (the failure and that it went on) and tests/faults/test_killed_runs.py the lost worker's
# run. Both are `cluster` tests (`-m cluster`, CI's own step); the README's command, which leaves
# them out, starts only the killed fit below. Two JAX processes started once for both; the sweep
# id is unique to this test process (a shared CI host may run another suite, whose processes must
# not count as our leftovers).
# `advisor scale` runs as a process of its own, so that it can run beside the fit killed mid-window
# below (see `_killed_processes`).
class _KilledWorkerSweep:
    """The sweep above, started; ``result()`` waits for it: (sweep id, runs directory, result)."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        train = str(Path(__file__).resolve().parents[1] / "examples" / "scaling" / "train.py")
        self.sweep_id = f"kill{os.getpid()}"
        folder = tmp_path_factory.mktemp("killed-sweep")
        self.runs = folder / "runs"
        self.out, self.err = folder / "scale.out", folder / "scale.err"
        argv = [
            sys.executable,
            "-m",
            "advisor.cli.main",
            "--runs-dir",
            str(self.runs),
            "scale",
            "--workers",
            "2",
            "--strategy",
            "jax",
            "--strategy",
            "mirrored",
            "--timeout",
            "90",
            "--sweep-id",
            self.sweep_id,
            "--no-report",
            "--",
            sys.executable,
            train,
            "--epochs",
            "2",
            "--samples",
            "1024",
            "--hidden",
            "32",
            "--batch-per-replica",
            "32",
            "--kill-rank",
            "1",
            "--kill-at-step",
            "3",
        ]
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONIOENCODING": "utf-8"},
            )

    def result(self) -> tuple[str, Path, SimpleNamespace]:
        """Wait for the sweep (two configurations of ≤ 90 s each); what CliRunner would give."""
        self.proc.wait(timeout=300)
        stdout, stderr = self.out.read_text(encoding="utf-8"), self.err.read_text(encoding="utf-8")
        return (
            self.sweep_id,
            self.runs,
            SimpleNamespace(
                exit_code=self.proc.returncode, stdout=stdout, stderr=stderr, output=stdout + stderr
            ),
        )

    def stop(self) -> None:
        """Stop it if it still runs: SIGINT first, on which `advisor scale` ends its workers."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _wanted(request: pytest.FixtureRequest, fixture: str) -> bool:
    """Some test of this session uses ``fixture``."""
    return any(fixture in getattr(item, "fixturenames", ()) for item in request.session.items)


@pytest.fixture(scope="session")
def _killed_processes(request, tmp_path_factory):
    """(the killed fit, the killed-worker sweep) below, each started only when a test of this
    session uses it, side by side (each start of TensorFlow or JAX costs several seconds of one
    core, and the killed fit sleeps most of its time); None for one that is not used. Both have
    ended when this returns: no other test runs beside them."""
    sweep = None
    if _wanted(request, "killed_worker_sweep") and importlib.util.find_spec("jax") is not None:
        sweep = _KilledWorkerSweep(tmp_path_factory)
    try:
        fit = _kill_mid_window(tmp_path_factory) if _wanted(request, "killed_mid_window") else None
        return fit, sweep.result() if sweep is not None else None
    finally:
        if sweep is not None:
            sweep.stop()


@pytest.fixture(scope="session")
def killed_worker_sweep(_killed_processes, tmp_path_factory):
    """(sweep id, runs directory, the ``advisor scale`` result: exit_code, stdout, stderr and
    output) of the sweep above."""
    if importlib.util.find_spec("jax") is None:  # not importorskip: JAX is for the workers only
        pytest.skip("needs jax (CPU)")
    swept = _killed_processes[1]
    if swept is None:  # asked for by a test that does not name it (request.getfixturevalue)
        sweep = _KilledWorkerSweep(tmp_path_factory)
        try:
            swept = sweep.result()
        finally:
            sweep.stop()
    return swept


KILLED_SCRIPT = textwrap.dedent("""
    import os, time
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np, keras, advisor

    class Slow(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            time.sleep(0.01)

    x = np.random.rand(100000, 4).astype("float32"); y = np.random.rand(100000, 1).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = advisor.AdvisorCallback(window_seconds=0.4, warmup_steps=1, log_every_seconds=None)
    model.fit(x, y, batch_size=8, epochs=1, callbacks=[cb, Slow()], verbose=0)
""")


@pytest.fixture(scope="session")
def killed_mid_window(_killed_processes, tmp_path_factory):
    """(store, windows on disk before the kill) of a training process SIGKILLed mid-epoch, in the
    middle of a 0.4 s window, once at least five windows were flushed. Shared by
    tests/collectors/test_killed.py and tests/faults/test_killed_runs.py: one process for both."""
    fit = _killed_processes[0]
    if fit is None:  # asked for by a test that does not name it (request.getfixturevalue)
        fit = _kill_mid_window(tmp_path_factory)
    return fit


def _kill_mid_window(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    from advisor.store.reader import list_run_dirs

    runs_dir = tmp_path_factory.mktemp("killed") / "runs"
    env = {**os.environ, "ADVISOR_RUNS_DIR": str(runs_dir)}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_SCRIPT],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        windows = 0
        while time.monotonic() < deadline and windows < 5:
            time.sleep(0.1)
            dirs = list_run_dirs(runs_dir)
            if dirs and (dirs[0] / "worker-0.jsonl").exists():
                windows = (dirs[0] / "worker-0.jsonl").read_text().count('"type":"window"')
            assert proc.poll() is None, "training ended before it was killed"
        assert windows >= 5, "no windows were written in time"
        time.sleep(0.2)  # about half of a 0.4 s window: the kill lands mid-window
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return runs_dir, windows
