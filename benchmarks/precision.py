"""Does the precision what-if's measured slowdown match whole fits at each policy? Side by side.

    python benchmarks/precision.py [--backend tensorflow|jax|torch] [--model convnet|lstm]
                                   [--passes 4] [--fit-seconds 3]

The case is ``mixed_float16`` on a CPU: the ``mixed_float16_cpu`` scenario's convnet (default on
TensorFlow) or the ``mixed_float16_cpu_jax``/``_torch`` scenarios' LSTM (``--model lstm``), the
model built under ``mixed_float16`` and trained on 16 cached batches of 64.

First the precision what-if (``advisor.experiments.precision.measure_precision``: each policy in
a fresh process, compute only, rounds interleaved) measures float32, mixed_bfloat16 and
mixed_float16; each policy's speedup over the own (mixed_float16) is the median of its paired
round ratios. Then whole ``model.fit`` calls at each policy, in one fresh process per policy
(``KERAS_BACKEND`` set, the model built under that policy from the same seed): each process warms
(a fit that compiles, then one of the timed size, left out), and then ``--passes`` passes each
time one whole fit of mixed_float16 and one of every other policy in turn, so that each policy's
fit is paired with an own's fit of the same minutes; a fit lasts about ``--fit-seconds`` (its
steps sized from a warm epoch of that policy). The whole-fit speedup is the median of the paired
ratios. Whole fits include Keras's array input (slicing 64 samples: nothing beside a step of tens
of milliseconds); the what-if leaves input out.

The table gives both speedups and their ratio, what-if ÷ whole fit; the target is 1 ± 0.15 for
every policy. The figures are this host's: record them in RESULTS.md with its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from child_lines import PREFIX, answer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
OWN = "mixed_float16"
BATCH, BATCHES = 64, 16
TOLERANCE = 0.15


def data(model: str):  # type: ignore[no-untyped-def]
    import numpy as np

    rng = np.random.default_rng(0)
    shape = (32, 32, 3) if model == "convnet" else (20, 32)
    x = rng.normal(size=(BATCHES * BATCH, *shape)).astype("float32")
    return x, rng.integers(0, 10, size=(BATCHES * BATCH,)).astype("int64")


def build(model: str, policy: str):  # type: ignore[no-untyped-def]
    """The scenario's model under ``policy`` (weights from a fixed seed)."""
    import keras

    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    if model == "convnet":
        layers = [
            keras.Input((32, 32, 3)),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
        ]
    else:
        layers = [keras.Input((20, 32)), keras.layers.LSTM(64)]
    built = keras.Sequential([*layers, keras.layers.Dense(10, dtype="float32")])
    built.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return built


def fit_child(args: argparse.Namespace) -> None:
    """In a fresh process: warm, then one whole fit at ``--policy`` for every ``fit`` line on
    stdin, its samples/s on stdout."""
    if os.environ["KERAS_BACKEND"] == "torch":
        import torch

        torch.set_num_threads(1)
    x, y = data(args.model)
    model = build(args.model, args.policy)
    model.fit(x, y, batch_size=BATCH, epochs=1, steps_per_epoch=2, verbose=0)  # compiling
    started = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, steps_per_epoch=4, verbose=0)
    step = (time.perf_counter() - started) / 4
    steps = max(4, min(BATCHES, round(args.fit_seconds / max(step, 1e-6))))
    epochs = max(1, round(args.fit_seconds / max(step * steps, 1e-6)))
    model.fit(x, y, batch_size=BATCH, epochs=epochs, steps_per_epoch=steps, verbose=0)
    print(PREFIX + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip() != "fit":
            break
        started = time.perf_counter()
        model.fit(x, y, batch_size=BATCH, epochs=epochs, steps_per_epoch=steps, verbose=0)
        rate = epochs * steps * BATCH / (time.perf_counter() - started)
        print(PREFIX + json.dumps({"samples_per_s": rate}), flush=True)
    sys.stdout.flush()
    os._exit(0)


def whole_fits(args: argparse.Namespace) -> dict[str, list[float]]:
    """Each policy's whole-fit samples/s, pass by pass (the own first in each pass)."""
    env = dict(os.environ, KERAS_BACKEND=args.backend, TF_CPP_MIN_LOG_LEVEL="3")
    env.setdefault("OMP_NUM_THREADS", "1")
    procs: dict[str, subprocess.Popen[str]] = {}
    order = [OWN] + [p for p in POLICIES if p != OWN]
    try:
        for policy in order:  # one after another: each warms on its own
            cmd = [sys.executable, __file__, "--child", "--policy", policy]
            cmd += ["--model", args.model, "--fit-seconds", str(args.fit_seconds)]
            procs[policy] = subprocess.Popen(
                cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            if not (answer(procs[policy]) or {}).get("ready"):
                raise SystemExit(f"the {policy} fit process did not start")
        rates: dict[str, list[float]] = {p: [] for p in order}
        for _ in range(args.passes):
            for policy, proc in procs.items():
                assert proc.stdin is not None
                proc.stdin.write("fit\n")
                proc.stdin.flush()
                found = answer(proc)
                if found is None:
                    raise SystemExit(f"the {policy} fit process ended")
                rates[policy].append(float(found["samples_per_s"]))
        return rates
    finally:
        for proc in procs.values():
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=60)


def paired(rates: list[float], own: list[float]) -> list[float]:
    """The paired ratios: each round (or fit) of a policy ÷ the own's of the same pass."""
    return [a / b for a, b in zip(rates, own) if a > 0 and b > 0]


def _spread(ratios: list[float]) -> str:
    return f"{min(ratios):.2f}–{max(ratios):.2f}" if ratios else "—"


def whatif(args: argparse.Namespace) -> dict[str, list[float]]:
    from advisor.experiments.precision import measure_precision

    x, y = data(args.model)
    model = build(args.model, OWN)
    model.fit(x, y, batch_size=BATCH, epochs=1, steps_per_epoch=1, verbose=0)  # built
    result = measure_precision(model, (x, y), batch_size=BATCH, device="cpu")
    print(f"what-if: {result.seconds:.0f} s; {result.summary()}", flush=True)
    return {p: list(r.rounds) for p, r in result.policies.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="tensorflow", choices=["tensorflow", "jax", "torch"])
    parser.add_argument("--model", default="convnet", choices=["convnet", "lstm"])
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument("--fit-seconds", type=float, default=3.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--policy", default=OWN, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        fit_child(args)
        return
    os.environ["KERAS_BACKEND"] = args.backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(f"{args.backend}, {args.model}, load average {os.getloadavg()[0]:.1f}", flush=True)
    measured = whatif(args)
    fits = whole_fits(args)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(
        "| policy | what-if samples/s | whole fit samples/s | what-if × (paired range) "
        "| whole fit × (paired range) | ratio |"
    )
    print("|---|---|---|---|---|---|")
    held = True
    for policy in POLICIES:
        w_ratios = paired(measured.get(policy) or [], measured.get(OWN) or [])
        f_ratios = paired(fits[policy], fits[OWN])
        w = statistics.median(w_ratios) if w_ratios else None
        f = statistics.median(f_ratios) if f_ratios else None
        ratio = w / f if w and f else None
        held = held and ratio is not None and abs(ratio - 1) <= TOLERANCE
        rates = measured.get(policy) or [0.0]
        print(
            f"| {policy} | {statistics.median(rates):.0f} | {statistics.median(fits[policy]):.0f}"
            f" | {w or 0:.2f} ({_spread(w_ratios)}) | {f or 0:.2f} ({_spread(f_ratios)})"
            f" | {ratio or 0:.2f} |"
        )
    print(f"target (every ratio within ±{TOLERANCE:.0%}): {'met' if held else 'NOT met'}")


if __name__ == "__main__":
    main()
