"""The run's own backend measured in this process, on the live model, when the model cannot be
written for fresh processes (a subclassed model or layer whose constructor arguments Keras did not
keep, and no ``get_config``): both compile modes of its own backend (e.g. TensorFlow with and
without XLA) train on the same cached batches as a candidate would, their rounds interleaved.

The user's model is put back as it was (``experiments.model_state``: weights, metric and optimizer
variables bit for bit, ``history``, ``stop_training``), and its ``jit_compile`` and train
function too.
"""

from __future__ import annotations

from typing import Any

from advisor.experiments.backends.child import Feed, fit_steps, reason_line, warm
from advisor.experiments.backends.result import FAILED, MEASURED, BackendCandidate, Config
from advisor.experiments.model_state import ModelState


def _save(model: Any) -> tuple[ModelState, Any, Any]:
    return ModelState(model), getattr(model, "jit_compile", None), model.train_function


def _restore(model: Any, saved: tuple[ModelState, Any, Any]) -> None:
    state, jit, function = saved
    state.restore()  # every variable a step changes, bit for bit; history, stop_training
    if jit is not None:
        model.jit_compile = jit
    model.train_function = function


def _prepare(model: Any, config: Config, feed: Feed, keras: Any, warmup: float) -> Any:
    """Compile mode ``config`` on the live model: its train function, warm, and its pace."""
    model.jit_compile = config.jit
    model.train_function = None
    fit_steps(model, feed, keras, 1)
    pace, _ = warm(lambda steps: fit_steps(model, feed, keras, steps), warmup)
    return model.train_function, pace


def measure_live(
    model: Any,
    x: Any,
    y: Any,
    batch_size: int,
    batches: int,
    configs: list[Config],
    *,
    seconds: float,
    rounds: int,
    warmup: float,
) -> dict[str, BackendCandidate]:
    """``configs`` (compile modes of the model's own backend) measured on the live model, a
    round of each in turn; the model restored after."""
    import time

    import keras

    feed = Feed(x, y, batch_size, batches)
    found = {c.name: BackendCandidate(c, FAILED, "not reached") for c in configs}
    prepared: dict[str, tuple[Any, int]] = {}
    saved = _save(model)
    try:
        for config in configs:
            began = time.perf_counter()
            try:
                function, pace = _prepare(model, config, feed, keras, warmup)
            except Exception as exc:  # noqa: BLE001 — this mode cannot train: its reason
                found[config.name].reason = f"cannot train in this process: {reason_line(exc)}"
                continue
            steps = max(2, int(seconds / max(1, rounds) / max(pace, 1e-6)))
            prepared[config.name] = (function, steps)
            found[config.name].compile_seconds = time.perf_counter() - began
        for _ in range(rounds):
            for config in configs:
                if config.name not in prepared:
                    continue
                function, steps = prepared[config.name]
                model.jit_compile, model.train_function = config.jit, function
                try:
                    done, took = fit_steps(model, feed, keras, steps)
                except Exception as exc:  # noqa: BLE001 — a failed round ends this mode
                    found[config.name].reason = f"a measured round failed: {reason_line(exc)}"
                    found[config.name].rounds.clear()
                    del prepared[config.name]
                    continue
                found[config.name].rounds.append(done * batch_size / took)
                found[config.name].steps += done
                found[config.name].seconds += took
    finally:
        _restore(model, saved)
    for candidate in found.values():
        if candidate.rounds:
            candidate.status, candidate.reason = MEASURED, "measured in this process"
    return found
