"""What counting a custom loop's FLOPs costs at its end, per backend, and whether the methods agree.

    python benchmarks/loop_flops.py [--runs 3]

In ``--runs`` fresh processes per kind, builds the same two-layer MLP (256 → 512 → 10, batch 128)
as a torch ``nn.Module``, a ``jax.jit`` train step (run once, as a loop would have) and a Keras
model on TensorFlow, and times ``FlopSource.count`` twice (the process's first count, then
again), as ``advisor.track(model=..., sample=...)`` runs it at the loop's end. Prints the cost
(median and maximum seconds) and the FLOPs per sample each method finds; the exact figure is
2 × (256·512 + 512·10) forward + the same for the weight gradients + 2 × 512·10 for the hidden
layer's input gradient = 555,008. The numbers are this host's: record them in RESULTS.md with the
host and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

EXACT = 2 * (256 * 512 + 512 * 10) * 2 + 2 * 512 * 10
CHILD = """
import json, time
import numpy as np
from advisor.tracking.flop_source import FlopSource
x = np.random.rand(128, 256).astype("float32"); y = np.random.randint(0, 10, 128)
kind = "{kind}"
if kind == "torch":
    import torch
    m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    source = FlopSource.of(m, torch.from_numpy(x), None, 128)
elif kind == "jax":
    import jax, jax.numpy as jnp
    p = {{"w1": jnp.zeros((256, 512)), "w2": jnp.zeros((512, 10))}}
    def loss(p, x, y):
        logits = jnp.maximum(x @ p["w1"], 0) @ p["w2"]
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(128), y])
    @jax.jit
    def step(p, x, y):
        return jax.tree_util.tree_map(lambda a, g: a - 0.1 * g, p, jax.grad(loss)(p, x, y))
    step(p, x, y)
    source = FlopSource.of(step, (p, x, y), None, 128)
else:
    import keras
    m = keras.Sequential([keras.Input((256,)), keras.layers.Dense(512, activation="relu"),
                          keras.layers.Dense(10)])
    source = FlopSource.of(m, None, None, 128)
for _ in range(2):
    t = time.perf_counter()
    values, dtype = source.count(128)
    print("@" + json.dumps({{"seconds": time.perf_counter() - t, **values, "dtype": dtype}}))
"""


def one(kind: str) -> list[dict]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow")
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(kind=kind)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return [json.loads(line[1:]) for line in done.stdout.splitlines() if line.startswith("@")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"exact FLOPs per sample: {EXACT:,}")
    print("| kind | method | FLOPs/sample | first count median (max) | again median (max) |")
    print("|---|---|---|---|---|")
    for kind in ("torch", "jax", "keras"):
        runs = [one(kind) for _ in range(args.runs)]
        first = [r[0]["seconds"] for r in runs]
        again = [r[1]["seconds"] for r in runs]
        flops = {r[0]["model.flops_per_sample"] for r in runs}
        method = runs[0][0]["model.flops_method"]
        print(
            f"| {kind} | {method} | {', '.join(f'{f:,.0f}' for f in sorted(flops))} | "
            f"{statistics.median(first):.3f} s ({max(first):.3f}) | "
            f"{statistics.median(again):.3f} s ({max(again):.3f}) |"
        )


if __name__ == "__main__":
    main()
