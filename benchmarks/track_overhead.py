"""Overhead of ``advisor.track`` on a plain PyTorch or JAX loop: with and without, alternating.

    python benchmarks/track_overhead.py [--framework torch|jax] [--pairs 9] [--steps 2000]
                                        [--width 256]
    python benchmarks/track_overhead.py --blocks 300 [--block-steps 50]   # interleaved blocks

Each pair runs the same loop (a small MLP, synthetic data, ``--steps`` steps in 2 epochs) once
bare and once inside ``advisor.track`` with every default on (throughput windows, epochs,
telemetry thread), in alternating order. Prints each pair, the median ratio (tracked ÷ bare,
target ≤ 1.01), the median of the second epoch alone, and the advisor's own estimate from the
run's ``end`` record, and the ratio of the fastest run of each arm (interference from other jobs
only adds time, so the minima are the steadiest figure on a shared machine). One framework per
process.

``--blocks N`` measures the markers' cost where whole runs are too noisy (a busy shared machine):
inside one tracked run, blocks of ``--block-steps`` steps with and without ``run.step()``
alternate (order flipped every round), so interference hits both arms alike; the median block
ratio is the per-step cost. The run's fixed cost (start and close) and the telemetry thread's CPU
time are printed beside it, as shares of the run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def torch_loop(width: int, batch: int) -> tuple[Callable[[int], None], str]:
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = torch.randn(batch * 64, 64), torch.randn(batch * 64, 1)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, width), torch.nn.ReLU(), torch.nn.Linear(width, 1)
    )
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step(i: int) -> None:
        j = (i % 64) * batch
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x[j : j + batch]), y[j : j + batch]).backward()
        opt.step()

    return step, f"torch {torch.__version__}"


def jax_loop(width: int, batch: int) -> tuple[Callable[[int], None], str]:
    import jax
    import jax.numpy as jnp

    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    x, y = jax.random.normal(k1, (batch * 64, 64)), jax.random.normal(k2, (batch * 64, 1))
    state = {"p": {"w1": jax.random.normal(k3, (64, width)) * 0.05, "w2": jnp.zeros((width, 1))}}

    @jax.jit
    def update(p: Any, xb: Any, yb: Any) -> Any:
        def loss(q: Any) -> Any:
            return jnp.mean((jax.nn.relu(xb @ q["w1"]) @ q["w2"] - yb) ** 2)

        grads = jax.grad(loss)(p)
        return jax.tree_util.tree_map(lambda a, g: a - 1e-3 * g, p, grads)

    batches = [(x[j * batch : (j + 1) * batch], y[j * batch : (j + 1) * batch]) for j in range(64)]

    def step(i: int) -> None:
        xb, yb = batches[i % 64]
        state["p"] = update(state["p"], xb, yb)
        jax.block_until_ready(state["p"])  # time the step, not its dispatch

    return step, f"jax {jax.__version__}"


def run_loop(
    step: Callable[[int], None], steps: int, batch: int, runs_dir: str | None
) -> tuple[float, float, Any]:
    """(whole loop seconds, second epoch seconds, run path or None): 2 epochs of steps/2 steps."""
    import advisor

    half = steps // 2
    t0 = time.perf_counter()
    if runs_dir is None:
        for i in range(half):
            step(i)
        t1 = time.perf_counter()
        for i in range(half, steps):
            step(i)
        return time.perf_counter() - t0, time.perf_counter() - t1, None
    with advisor.track(batch_size=batch, runs_dir=runs_dir, log_every_seconds=None) as run:
        for i in range(half):
            step(i)
            run.step()
        run.epoch()
        t1 = time.perf_counter()
        for i in range(half, steps):
            step(i)
            run.step()
        run.epoch()
        second = time.perf_counter() - t1
    return time.perf_counter() - t0, second, run.run_path


def blocks(step: Callable[[int], None], rounds: int, size: int, batch: int, runs_dir: str) -> None:
    """Interleaved blocks with and without the markers, inside one tracked run."""
    import advisor

    ratios: list[float] = []
    t_first = time.perf_counter()
    with advisor.track(batch_size=batch, runs_dir=runs_dir, log_every_seconds=None) as first:
        first.step()  # the first run of a process also imports the advisor's modules
    first_s = time.perf_counter() - t_first
    marker = []  # the marker alone, in a tight loop: its cost per call (in a run of its own)
    with advisor.track(
        batch_size=batch, runs_dir=runs_dir, log_every_seconds=None, window_seconds=0.5
    ) as timing:
        for _ in range(7):
            start = time.perf_counter()
            for _ in range(100_000):
                timing.step()
            marker.append((time.perf_counter() - start) / 100_000)
    t_enter = time.perf_counter()
    run = advisor.track(batch_size=batch, runs_dir=runs_dir, log_every_seconds=None)
    run.__enter__()
    fixed = time.perf_counter() - t_enter
    t0 = time.perf_counter()
    i = 0
    for r in range(rounds):
        times = {}
        for arm in ("bare", "marked") if r % 2 == 0 else ("marked", "bare"):
            start = time.perf_counter()
            if arm == "bare":
                for _ in range(size):
                    step(i)
                    i += 1
            else:
                for _ in range(size):
                    step(i)
                    i += 1
                    run.step()
            times[arm] = time.perf_counter() - start
        ratios.append(times["marked"] / times["bare"])
    loop = time.perf_counter() - t0
    t_close = time.perf_counter()
    run.__exit__(None, None, None)
    fixed += time.perf_counter() - t_close
    records = [
        json.loads(line)
        for line in (Path(run.run_path) / "worker-0.jsonl").read_text().splitlines()
    ]
    sampler = [
        r["values"]
        for r in records
        if r["type"] == "context" and "telemetry.sampler_cpu_s" in r["values"]
    ]
    cpu = (
        sampler[-1]["telemetry.sampler_cpu_s"] / max(1e-9, sampler[-1]["telemetry.sampler_wall_s"])
        if sampler
        else None
    )
    q = statistics.quantiles(ratios, n=4)
    step_s = loop / (2 * rounds * size)
    print(
        f"run.step() alone {statistics.median(marker) * 1e6:.2f} µs a call = "
        f"{100 * statistics.median(marker) / step_s:.2f} % of a {step_s * 1000:.3f} ms step"
    )
    print(
        f"{rounds} rounds of {size} steps ({step_s * 1000:.3f} ms a step): "
        f"median block ratio marked ÷ bare {statistics.median(ratios):.4f} "
        f"(quartiles {q[0]:.4f}–{q[2]:.4f}); "
        f"run start + close {fixed * 1000:.1f} ms = {100 * fixed / loop:.2f} % "
        f"of this {loop:.1f} s loop "
        f"(the process's first run, imports included: {first_s * 1000:.0f} ms); telemetry thread "
        f"{'—' if cpu is None else f'{100 * cpu:.2f} % of a core'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=("torch", "jax"), default="torch")
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument(
        "--blocks", type=int, default=0, help="interleaved-block mode: this many rounds"
    )
    parser.add_argument("--block-steps", type=int, default=50)
    args = parser.parse_args()
    step, version = (torch_loop if args.framework == "torch" else jax_loop)(args.width, args.batch)
    for i in range(50):  # compile and warm caches before timing anything
        step(i)
    if args.blocks:
        with tempfile.TemporaryDirectory() as runs_dir:
            print(version, end=": ")
            blocks(step, args.blocks, args.block_steps, args.batch, runs_dir)
        return
    ratios, second_ratios, own = [], [], []
    fastest = {"bare": float("inf"), "tracked": float("inf")}
    with tempfile.TemporaryDirectory() as runs_dir:
        bare_s = 0.0
        for pair in range(args.pairs):
            order = ("bare", "tracked") if pair % 2 == 0 else ("tracked", "bare")
            times: dict[str, tuple[float, float]] = {}
            for arm in order:
                whole, second, path = run_loop(
                    step, args.steps, args.batch, runs_dir if arm == "tracked" else None
                )
                times[arm] = (whole, second)
                fastest[arm] = min(fastest[arm], whole)
                if path is not None:
                    end = [
                        json.loads(line)
                        for line in (Path(path) / "worker-0.jsonl").read_text().splitlines()
                    ][-1]
                    own.append(end["advisor_seconds"] / end["train_seconds"])
            ratio = times["tracked"][0] / times["bare"][0]
            ratios.append(ratio)
            second_ratios.append(times["tracked"][1] / times["bare"][1])
            bare_s = times["bare"][0]
            print(
                f"pair {pair + 1}: bare {times['bare'][0]:.3f} s, "
                f"tracked {times['tracked'][0]:.3f} s, "
                f"ratio {ratio:.4f} (2nd epoch {second_ratios[-1]:.4f})",
                flush=True,
            )
    print(
        f"{version}: {args.steps} steps of {bare_s / args.steps * 1000:.3f} ms; median ratio "
        f"{statistics.median(ratios):.4f} (target ≤ 1.01), "
        f"2nd epoch {statistics.median(second_ratios):.4f}, "
        f"advisor's own estimate {100 * statistics.median(own):.2f} %; "
        f"fastest tracked ÷ fastest bare {fastest['tracked'] / fastest['bare']:.4f}"
    )


if __name__ == "__main__":
    main()
