"""One backend's checks, run in a process of its own by ``test_matrix.py``.

    KERAS_BACKEND=jax python tests/backends/driver.py OUT          # or torch, tensorflow
    TF_USE_LEGACY_KERAS=1 python tests/backends/driver.py OUT      # tf_keras (Keras 2)

The backend must be chosen before Keras is first imported, so each backend needs its own
process; to keep CI time down one process runs every check and writes what it observed to
``OUT/results.json`` (the run directories are under ``OUT/runs``). The test process asserts on
both. Ground truth comes from the model itself: a layer counts, inside the compiled train step,
the samples it trains on, independently of any callback. With ``--kill`` the process ends by
training slowly forever, for the killed-run test to SIGKILL it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
LEGACY = os.environ.get("TF_USE_LEGACY_KERAS") == "1"

import numpy as np  # noqa: E402

if LEGACY:
    import tensorflow as tf

    keras: Any = tf.keras
    BACKEND = "tensorflow"
else:
    import keras

    BACKEND = keras.backend.backend()
FLAVOR = "tf_keras" if LEGACY else BACKEND

if BACKEND == "torch":
    import torch

    torch.set_num_threads(1)

import advisor  # noqa: E402
from advisor.collectors.collector import Collector  # noqa: E402
from advisor.collectors.options import AdvisorOptions  # noqa: E402
from advisor.collectors.registry import build_collectors  # noqa: E402
from advisor.experiments.model_state import ModelState  # noqa: E402

FEATURES = 8
N = 200  # 200 = 6 × 32 + 8: every epoch ends in a partial batch
BATCH = 32
RESULTS: dict[str, Any] = {
    "flavor": FLAVOR,
    "backend": BACKEND,
    "main_thread": threading.get_ident(),
}


def counter_layer() -> Any:
    """Identity layer that adds its batch's size to a weight on every training call."""

    class SampleCounter(keras.layers.Layer):
        def build(self, input_shape: Any) -> None:
            self.count = self.add_weight(
                name="count", shape=(), initializer="zeros", trainable=False, dtype="int32"
            )

        def call(self, x: Any, training: Any = None) -> Any:
            if training:
                if LEGACY:
                    self.count.assign_add(tf.shape(x)[0])
                else:
                    self.count.assign(self.count + keras.ops.cast(keras.ops.shape(x)[0], "int32"))
            return x

    return SampleCounter()


def build(spe: int = 1, counter: Any = None) -> Any:
    layers = [keras.Input((FEATURES,))]
    if counter is not None:
        layers.append(counter)
    layers += [
        keras.layers.Dense(16, activation="relu"),
        keras.layers.BatchNormalization(),
        keras.layers.Dropout(0.1),
        keras.layers.Dense(1),
    ]
    model = keras.Sequential(layers)
    model.compile(optimizer="adam", loss="mse", steps_per_execution=spe)
    return model


def arrays(n: int = N) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, FEATURES)).astype("float32"), rng.normal(size=(n, 1)).astype(
        "float32"
    )


def count(layer: Any) -> int:
    return int(
        np.asarray(keras.ops.convert_to_numpy(layer.count) if not LEGACY else layer.count.numpy())
    )


class ThreadSpy(Collector):
    """Records the threads the batch-end hook ran on (async dispatch puts it on Keras's workers)."""

    name = "thread-spy"
    batch_hook = True
    async_safe = True

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def on_train_batch_end(self, batch: int) -> None:
        self.threads.add(threading.get_ident())


def callback(
    runs: Path,
    name: str,
    extra: list[Collector] | None = None,
    collectors: Any = None,
    **options: Any,
) -> Any:
    options = {"window_seconds": 0.05, "warmup_steps": 2, "log_every_seconds": None, **options}
    if extra:
        collectors = build_collectors(AdvisorOptions(**options)) + extra
    return advisor.AdvisorCallback(runs_dir=runs, name=name, collectors=collectors, **options)


def record(key: str, fn: Any) -> None:
    """Run one check; an exception is recorded, not raised, so the other checks still run."""
    t0 = time.perf_counter()
    try:
        RESULTS[key] = fn()
    except Exception as exc:  # noqa: BLE001
        RESULTS[key] = {
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-3000:],
        }
    RESULTS.setdefault("seconds", {})[key] = round(time.perf_counter() - t0, 2)


# ---------------------------------------------------------------------------------------------
# checks


def check_counts(runs: Path) -> dict[str, Any]:
    """Partial last batch, steps_per_execution, async dispatch: samples vs the layer's count."""
    spe = 1 if BACKEND == "torch" else 4  # Keras's torch trainer runs one step per call
    layer = counter_layer()
    model = build(spe, layer)
    x, y = arrays()
    spy = ThreadSpy()
    cb = callback(runs, "counts", extra=[spy])
    async_safe = bool(getattr(cb, "async_safe", False))
    model.fit(x, y, batch_size=BATCH, epochs=2, callbacks=[cb], verbose=0, shuffle=False)
    return {
        "run": str(cb.run_path),
        "spe": spe,
        "trained": count(layer),
        "iterations": int(
            np.asarray(
                keras.ops.convert_to_numpy(model.optimizer.iterations)
                if not LEGACY
                else model.optimizer.iterations.numpy()
            )
        ),
        "async_safe": async_safe,
        "hook_threads_off_main": sorted({t != RESULTS["main_thread"] for t in spy.threads}),
    }


def check_unknown_length(runs: Path) -> dict[str, Any]:
    """An input whose length nobody can tell (a filtered tf.data pipeline on TensorFlow, a Python
    generator elsewhere), one step per execution, validation after each epoch: Keras 3 on
    TensorFlow counts an extra optimizer step for finding the end; the run must not."""
    layer = counter_layer()
    model = build(1, layer)
    x, y = arrays()
    cb = callback(runs, "unknown-length", baseline=None)
    if BACKEND == "tensorflow":
        import tensorflow as tf

        data = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).filter(lambda a, b: True)
        epochs = 2
    else:
        data = ((x[i : i + BATCH], y[i : i + BATCH]) for i in range(0, N, BATCH))
        epochs = 1  # a generator runs out once
    model.fit(data, epochs=epochs, callbacks=[cb], verbose=0, validation_data=(x[:40], y[:40]))
    return {"run": str(cb.run_path), "trained": count(layer), "epochs": epochs}


def check_whatif_loader_workers() -> dict[str, Any]:
    """Keras on torch: the what-if's DataLoader(num_workers=2) segments are torn down at once
    (left to the garbage collector, each took ~10 s: no three rounds fitted in 30 s)."""
    import torch

    class Slow(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return 1024

        def __getitem__(self, i: int) -> Any:
            time.sleep(0.001)
            return np.ones(FEATURES, "float32"), np.ones(1, "float32")

    loader = torch.utils.data.DataLoader(Slow(), batch_size=BATCH)
    model = build(1)
    t0 = time.perf_counter()
    result = advisor.whatif(model, loader, ["torch_workers"], max_seconds=30, seconds=3, rounds=3)
    candidate = result.candidates["torch_workers"]
    return {
        "status": candidate.status,
        "reason": candidate.reason,
        "rounds": candidate.rounds,
        "seconds": round(time.perf_counter() - t0, 2),
    }


def check_baseline_kinds(runs: Path, model: Any, layer: Any) -> dict[str, Any]:
    """Baseline at train end on every input kind this Keras takes; the counter proves the
    baseline's own training is undone (the model ends as if only the real epochs ran).

    One model trains on every kind in turn, as a user's model may be fitted again on other
    input: its step is compiled once (a fresh model per kind cost JAX nine XLA compilations,
    half of this driver's time), and each kind's ``trained`` is what the counter gained during
    that kind's fit, so the baseline's steps must still be undone exactly."""
    out: dict[str, Any] = {}
    x, y = arrays()
    for kind, make in input_kinds(x, y).items():
        cb = callback(
            runs,
            f"baseline-{kind}",
            baseline="end",
            baseline_steps=6,
            baseline_seconds=0.3,
            baseline_rounds=2,
            telemetry=False,
        )
        data, kwargs = make()
        before = count(layer)
        model.fit(data, **kwargs, epochs=1, callbacks=[cb], verbose=0)
        out[kind] = {
            "run": str(cb.run_path),
            "trained": count(layer) - before,
            "expected": kwargs.get("steps_per_epoch", -(-N // BATCH)) * BATCH
            if kind == "generator"
            else N,
        }
    return out


def input_kinds(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    kinds: dict[str, Any] = {"numpy": lambda: (x, {"y": y, "batch_size": BATCH, "shuffle": False})}

    def tfdata() -> Any:
        import tensorflow as tf

        return tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH), {"shuffle": False}

    kinds["tf.data"] = tfdata
    base = keras.utils.Sequence if LEGACY else keras.utils.PyDataset

    class Batches(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()

        def __len__(self) -> int:
            return -(-N // BATCH)

        def __getitem__(self, i: int) -> Any:
            return x[i * BATCH : (i + 1) * BATCH], y[i * BATCH : (i + 1) * BATCH]

    kinds["pydataset"] = lambda: (Batches(), {"shuffle": False})

    def generator() -> Any:
        def batches() -> Any:
            while True:
                for i in range(0, N - BATCH + 1, BATCH):  # full batches only
                    yield x[i : i + BATCH], y[i : i + BATCH]

        return batches(), {"steps_per_epoch": 5, "shuffle": False}

    kinds["generator"] = generator
    if BACKEND in ("torch", "jax") and importlib.util.find_spec("torch") is not None:

        def loader() -> Any:
            import torch
            from torch.utils.data import DataLoader, TensorDataset

            return (
                DataLoader(
                    TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=BATCH
                ),
                {"shuffle": False},
            )

        kinds["torch"] = loader
    return kinds


def check_measure_input(model: Any) -> dict[str, Any]:
    """The plain API: numbers for arrays, and every training variable bit for bit the same.

    ``model`` is the one the baseline check trained (its step already compiled); one more epoch
    here gives its optimizer fresh state to restore, whatever that check did."""
    from advisor.experiments.baseline.engine import measure_input

    x, y = arrays()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    before = ModelState(model)
    result = measure_input(model, (x, y), steps=6, batch_size=BATCH, seconds=0.3, rounds=2)
    return {
        "unchanged": before.unchanged(),
        "real": result.real_samples_per_s,
        "cached": result.cached_samples_per_s,
        "variables": len(before.variables),
    }


def check_profile(runs: Path) -> dict[str, Any]:
    """Profiler capture of steps 3..27 (25 marked: enough for stable step-time shares) and its
    summary, plus telemetry and FLOPs."""
    model = build(1)
    x, y = arrays(1280)
    cb = callback(runs, "profile", profile_steps=(3, 27), mfu=True, telemetry_interval_seconds=0.2)
    async_safe = bool(getattr(cb, "async_safe", False))
    model.fit(x, y, batch_size=BATCH, epochs=1, callbacks=[cb], verbose=0)
    return {"run": str(cb.run_path), "async_safe": async_safe}


def check_mixed_precision(runs: Path) -> dict[str, Any]:
    """One Keras dtype policy on every backend: the context records it."""
    mp = keras.mixed_precision
    mp.set_global_policy("mixed_bfloat16")
    try:
        model = build(1)
        x, y = arrays(64)
        cb = callback(runs, "mixed", collectors=["context"])
        model.fit(x, y, batch_size=BATCH, epochs=1, callbacks=[cb], verbose=0)
    finally:
        mp.set_global_policy("float32")
    return {"run": str(cb.run_path)}


def check_budget(runs: Path) -> dict[str, Any]:
    """The time budget: a user callback's batch hook and epoch-end saves, timed then put back."""

    class Busy(keras.callbacks.Callback):
        calls = 0

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            type(self).calls += 1
            time.sleep(0.002)

    class Saver(keras.callbacks.Callback):
        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            self.model.save_weights(str(self.path))

    model = build(1)
    x, y = arrays()
    busy, saver = Busy(), Saver(runs / "budget.weights.h5")
    cb = callback(runs, "budget")
    model.fit(
        x,
        y,
        batch_size=BATCH,
        epochs=2,
        callbacks=[cb, busy, saver],
        verbose=0,
        validation_split=0.2,
    )
    left = sorted(
        k
        for obj in (busy, saver, model)
        for k in ("on_train_batch_end", "on_epoch_end", "save", "save_weights")
        if k in vars(obj)
    )
    return {"run": str(cb.run_path), "busy_calls": Busy.calls, "wrappers_left": left}


def train_until_killed(runs: Path) -> None:
    """Slow steps forever (the test SIGKILLs this process once windows are on disk)."""

    class Slow(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            time.sleep(0.01)

    model = build(1)
    x, y = arrays(100_000)
    cb = callback(runs, "killed", window_seconds=0.1, warmup_steps=1, telemetry=False)
    model.fit(x, y, batch_size=8, epochs=1, callbacks=[cb, Slow()], verbose=0)


def main(argv: list[str]) -> int:
    out = Path(argv[1])
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    record("counts", lambda: check_counts(runs))
    record("unknown_length", lambda: check_unknown_length(runs))
    if BACKEND == "torch":
        record("whatif_loader_workers", check_whatif_loader_workers)
    layer = counter_layer()
    model = build(1, layer)  # shared by the baseline and measure_input checks: compiled once
    record("baseline", lambda: check_baseline_kinds(runs, model, layer))
    record("measure_input", lambda: check_measure_input(model))
    record("profile", lambda: check_profile(runs))
    record("mixed_precision", lambda: check_mixed_precision(runs))
    record("budget", lambda: check_budget(runs))
    RESULTS["modules"] = sorted(
        m for m in ("keras.src", "tf_keras", "torch", "jax") if m in sys.modules
    )
    RESULTS["total_seconds"] = round(time.perf_counter() - t0, 2)
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(RESULTS, indent=1, default=str))
    tmp.rename(out / "results.json")
    if "--kill" in argv:
        train_until_killed(out / "killed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
