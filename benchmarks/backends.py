"""Does the backend what-if rank backends × compile modes as whole fits do? Side by side.

    python benchmarks/backends.py [--families mlp,cnn,rnn] [--candidates all|jax+jit,torch,...]
                                  [--seconds 3] [--fit-seconds 3] [--torch-threads 1]

For each model family (an MLP, a small CNN, a small LSTM) the script runs the backend what-if
(``advisor.experiments.backends.measure_backends``: cached batches, each candidate in a fresh
process) and then, for every candidate, a whole ``model.fit`` on the same arrays in a fresh
process with ``KERAS_BACKEND`` and ``jit_compile`` set (a warm-up fit, then a fit sized to about
``--fit-seconds`` in three parts; the median of their samples/s). The table gives both speedups over the run's own
(TensorFlow, ``jit_compile`` as Keras resolves it) and their difference; the issue's target is the
same ranking and gains within ±15% where outside noise. Whole fits include Keras's array input
(the what-if leaves input out), so a gap can be the input's share. Timings vary by machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS, BATCH = 4096, 64


def build(family: str):  # type: ignore[no-untyped-def]
    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    if family == "mlp":
        x = rng.random((ROWS, 64), dtype=np.float32)
        layers = [keras.Input((64,)), keras.layers.Dense(256, activation="relu"), keras.layers.Dense(256, activation="relu")]
    elif family == "cnn":
        x = rng.random((ROWS, 16, 16, 3), dtype=np.float32)
        layers = [keras.Input((16, 16, 3)), keras.layers.Conv2D(16, 3, activation="relu"), keras.layers.MaxPooling2D(),
                  keras.layers.Conv2D(32, 3, activation="relu"), keras.layers.GlobalAveragePooling2D()]
    elif family == "rnn":
        x = rng.random((ROWS, 20, 16), dtype=np.float32)
        layers = [keras.Input((20, 16)), keras.layers.LSTM(32)]
    else:
        raise SystemExit(f"unknown family {family!r}: mlp, cnn or rnn")
    model = keras.Sequential(layers + [keras.layers.Dense(10)])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, x, rng.integers(0, 10, ROWS)


def fit_child(args: argparse.Namespace) -> None:
    """In a fresh process: a whole fit of the saved model on the arrays, samples/s to stdout."""
    backend = os.environ["KERAS_BACKEND"]
    if backend == "torch" and args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    import keras
    import numpy as np

    model = keras.saving.load_model(args.model)
    config = dict(model.get_compile_config(), jit_compile=args.jit == "True", steps_per_execution=1)
    model.compile_from_config(config)
    with np.load(args.data) as found:
        x, y = found["x"], found["y"]
    model.fit(x, y, batch_size=BATCH, epochs=1, steps_per_epoch=5, verbose=0)  # compiling
    started = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, steps_per_epoch=10, verbose=0)
    step = (time.perf_counter() - started) / 10
    part = args.fit_seconds / 3  # three timed fits: the median of their rates
    steps = max(10, min(ROWS // BATCH, int(part / max(step, 1e-6))))
    epochs = max(1, int(part / max(step * steps, 1e-6)))
    rates = []
    for _ in range(3):
        started = time.perf_counter()
        model.fit(x, y, batch_size=BATCH, epochs=epochs, steps_per_epoch=steps, verbose=0)
        rates.append(epochs * steps * BATCH / (time.perf_counter() - started))
    print(json.dumps({"samples_per_s": sorted(rates)[1]}))


def whole_fit(model_path: Path, data_path: Path, backend: str, jit: bool, args: argparse.Namespace) -> float | None:
    command = [sys.executable, __file__, "--fit-child", "--model", str(model_path), "--data", str(data_path),
               "--jit", str(jit), "--fit-seconds", str(args.fit_seconds), "--torch-threads", str(args.torch_threads)]
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        return None
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    return float(json.loads(lines[-1])["samples_per_s"]) if lines else None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--families", default="mlp,cnn,rnn")
    parser.add_argument("--candidates", default="all")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--fit-seconds", type=float, default=3.0)
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--fit-child", action="store_true")
    parser.add_argument("--model")
    parser.add_argument("--data")
    parser.add_argument("--jit")
    args = parser.parse_args()
    if args.fit_child:
        fit_child(args)
        return 0
    import numpy as np

    from advisor.experiments.backends import measure_backends

    names = None if args.candidates == "all" else args.candidates.split(",")
    print(f"{'family':<6} {'candidate':<15} {'what-if/s':>10} {'±':>5} {'what-if×':>9} {'fit/s':>10} {'fit×':>7} "
          f"{'diff':>6}  status")
    for family in args.families.split(","):
        model, x, y = build(family)
        result = measure_backends(model, (x, y), names, batch_size=BATCH, seconds=args.seconds,
                                  torch_threads=args.torch_threads, max_seconds=1800)
        with tempfile.TemporaryDirectory() as tmp:
            model_path, data_path = Path(tmp) / "m.keras", Path(tmp) / "d.npz"
            model.save(model_path)
            np.savez(data_path, x=x, y=y)
            fits = {c.name: whole_fit(model_path, data_path, c.config.backend, c.config.jit, args)
                    for c in result.candidates.values() if c.status == "measured"}
        own_fit = fits.get(result.own)
        for c in sorted(result.candidates.values(), key=lambda c: -(c.samples_per_s or 0.0)):
            speed, band, fit = result.speedup(c), c.relative_band, fits.get(c.name)
            fit_speed = fit / own_fit if fit and own_fit else None
            diff = speed / fit_speed - 1 if speed and fit_speed else None
            cells = [f"{c.samples_per_s:.0f}" if c.samples_per_s else "-", f"{band:.0%}" if band is not None else "-",
                     f"{speed:.2f}" if speed else "-", f"{fit:.0f}" if fit else "-",
                     f"{fit_speed:.2f}" if fit_speed else "-", f"{diff:+.0%}" if diff is not None else "-"]
            status = c.status + (f": {c.reason[:60]}" if c.reason else "") + (" (own)" if c.name == result.own else "")
            print(f"{family:<6} {c.name:<15} {cells[0]:>10} {cells[1]:>5} {cells[2]:>9} {cells[3]:>10} "
                  f"{cells[4]:>7} {cells[5]:>6}  {status}", flush=True)
        ranked = [c.name for c in result.measured() if fits.get(c.name)]
        by_fit = sorted(ranked, key=lambda n: -(fits[n] or 0.0))
        print(f"{family:<6} ranking: what-if {' > '.join(ranked)}; fits {' > '.join(by_fit)}; "
              f"{'same' if ranked == by_fit else 'DIFFERENT'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
