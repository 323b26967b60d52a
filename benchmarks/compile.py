"""Compile events against the frameworks' own counts: does ``compile`` time agree with what
TensorFlow, JAX and torch say they spent compiling?

Each backend runs a small custom loop tracked by ``advisor.track`` in a fresh process, retracing on
purpose (TensorFlow: a Python int argument; JAX: a static argument; torch.compile: a batch size
that changes). The run's compile events are then set beside the framework's own figure:

- TensorFlow: the ``/tensorflow/core/tf_function/graph_building_time_usecs`` counter (its change
  over the loop) and the function's ``experimental_get_tracing_count()``;
- JAX: the durations ``jax.monitoring`` reports for the three compile stages, summed by a listener
  of the benchmark's own, and the jitted function's cache size;
- torch: Dynamo's ``compilation_time_metrics`` (the ``_compile.compile_inner`` entries) and its
  ``unique_graphs`` counter.

    python benchmarks/compile.py            # all three; a markdown table
    python benchmarks/compile.py --only tensorflow
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

STEPS = 40

TF = """
import time, tensorflow as tf, advisor
from tensorflow.python.eager.polymorphic_function import tracing_compilation as tc
cell = tc._graph_building_time_counter.get_cell()
w = tf.Variable(tf.zeros((64, 10)))
@tf.function
def step(x, n):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ w) ** 2) * (1.0 + 0.0 * n)
    w.assign_sub(0.01 * tape.gradient(loss, w))
    return loss
x = tf.random.normal((128, 64))
before = cell.value()
with advisor.track(batch_size=128, backend="tensorflow", runs_dir=RUNS, telemetry=False) as run:
    for i in range(STEPS):
        step(x, i)
        run.step()
print(json.dumps({"framework_seconds": (cell.value() - before) / 1e6,
                  "framework_count": step.experimental_get_tracing_count()}))
"""

JAX = """
import jax, jax.numpy as jnp, advisor
from functools import partial
from jax import monitoring
stages = ("/jax/core/compile/jaxpr_trace_duration",
          "/jax/core/compile/jaxpr_to_mlir_module_duration",
          "/jax/core/compile/backend_compile_duration")
spent = {"seconds": 0.0}
def listen(event, duration, **kwargs):
    if event in stages and kwargs.get("fun_name") == "jit(step)":
        spent["seconds"] += duration
monitoring.register_event_duration_secs_listener(listen)
@partial(jax.jit, static_argnums=1)
def step(x, lr):
    return x - lr * jnp.tanh(x @ x.T) @ x
x = jnp.ones((128, 64))
with advisor.track(batch_size=128, backend="jax", runs_dir=RUNS, telemetry=False) as run:
    for i in range(STEPS):
        x = step(x, 0.001 * (1 + i)).block_until_ready()
        run.step()
print(json.dumps({"framework_seconds": spent["seconds"], "framework_count": step._cache_size(),
                  "function": "jit(step)"}))
"""

TORCH = """
import torch, advisor
from torch._dynamo.utils import compilation_time_metrics, counters
torch.set_num_threads(1)
model = torch.nn.Linear(64, 10)
def step(x):
    return model(x).square().mean()
compiled = torch.compile(step, dynamic=False, backend="aot_eager")
with advisor.track(backend="torch", runs_dir=RUNS, telemetry=False) as run:
    for i in range(STEPS):
        size = (32, 40, 48, 56, 64)[(i // 8) % 5]
        compiled(torch.ones(size, 64)).backward()
        run.step(size)
inner = sum(v for k, vs in compilation_time_metrics.items() if "compile_inner" in k for v in vs)
print(json.dumps({"framework_seconds": inner,
                  "framework_count": counters["stats"]["unique_graphs"], "function": "step"}))
"""

SCRIPTS = {"tensorflow": TF, "jax": JAX, "torch": TORCH}


def measure(backend: str, runs: Path) -> dict:
    prelude = f"import json\nRUNS = {str(runs)!r}\nSTEPS = {STEPS}\n"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", JAX_PLATFORMS="cpu")
    done = subprocess.run(
        [sys.executable, "-c", prelude + SCRIPTS[backend]],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    if done.returncode != 0:
        raise SystemExit(f"{backend}: exit {done.returncode}\n{done.stderr[-2000:]}")
    own = json.loads(done.stdout.strip().splitlines()[-1])
    from advisor.store.reader import RunReader
    from advisor.store.schema import CompileRecord

    (path,) = [p for p in runs.iterdir() if p.is_dir()]
    run = RunReader(path).read()
    events = [e for r in run.chief_of_type(CompileRecord) for e in r.events]
    name = own.get("function")
    mine = [e for e in events if e.kind != "graph_break" and (name is None or e.function == name)]
    if backend == "tensorflow":  # the counter counts every tf.function the process traced
        mine = [e for e in events if e.kind == "trace"]
        forward = [e for e in mine if e.function == "step"]
    else:
        forward = [e for e in mine if e.kind != "backward"]
    seconds = sum(e.seconds for e in mine)
    return {
        "backend": backend,
        "events": len(forward),
        "framework_count": own["framework_count"],
        "seconds": seconds,
        "framework_seconds": own["framework_seconds"],
        "ratio": seconds / own["framework_seconds"] if own["framework_seconds"] else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(SCRIPTS))
    args = parser.parse_args()
    rows = []
    for backend in args.only or list(SCRIPTS):
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(measure(backend, Path(tmp)))
    print("| backend | events (framework's count) | compile s (framework's) | ratio |")
    print("|---|---|---|---|")
    for r in rows:
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "n/a"
        print(
            f"| {r['backend']} | {r['events']} ({r['framework_count']}) | "
            f"{r['seconds']:.3f} ({r['framework_seconds']:.3f}) | {ratio} |"
        )


if __name__ == "__main__":
    main()
