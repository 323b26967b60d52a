"""A custom JAX loop whose jitted step takes its learning rate as a static argument, and the
learning rate follows a schedule that changes at every step: every new static value compiles the
step again.

``advisor.track`` counts each compilation from ``jax.monitoring`` (tracing, lowering and the
backend's compile, joined), and once the step compiles a second time reads JAX's own explanation of
the cache miss (``jax_explain_cache_misses``) for its cause: a static argument. C452 names it.
"""

from __future__ import annotations

import os
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

BATCH = 128
WIDTH = 256


def main() -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp

    import advisor

    x, y = common.arrays(BATCH * 8)
    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    params = {
        "w1": jax.random.normal(k1, (common.FEATURES, WIDTH)) * 0.05,
        "w2": jax.random.normal(k2, (WIDTH, common.CLASSES)) * 0.05,
    }

    def loss_fn(p: dict, features: jax.Array, labels: jax.Array) -> jax.Array:
        logits = jax.nn.relu(features @ p["w1"]) @ p["w2"]
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(labels.shape[0]), labels])

    @partial(jax.jit, static_argnums=3)
    def train_step(p: dict, features: jax.Array, labels: jax.Array, lr: float) -> dict:
        grads = jax.grad(loss_fn)(p, features, labels)
        return jax.tree_util.tree_map(lambda w, g: w - lr * g, p, grads)

    batches = [
        (jnp.asarray(x[i : i + BATCH]), jnp.asarray(y[i : i + BATCH]))
        for i in range(0, len(x), BATCH)
    ]
    step = 0
    t0 = time.perf_counter()
    with advisor.track(batch_size=BATCH, backend="jax") as run:
        while time.perf_counter() - t0 < common.SECONDS:
            for features, labels in batches:
                lr = 0.01 * 0.999**step  # a decaying schedule, passed as a static argument
                params = train_step(params, features, labels, lr)
                jax.block_until_ready(params)
                step += 1
                run.step()
            run.epoch()
    print(f"loop: {time.perf_counter() - t0:.2f} s, {step} steps")


if __name__ == "__main__":
    main()
