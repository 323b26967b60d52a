"""One backend candidate, in a fresh process: ``KERAS_BACKEND=jax python -m
advisor.experiments.backends.child --model M --batches B --jit true --out R.json``.

Rebuilds the model from what ``export.py`` wrote, recompiles it with the ``jit_compile`` asked
for, trains on the cached batches (the first step timed apart: compiling, with a second compile
on the second ``fit`` as ``torch.compile`` does), warms up, then
measures ``--rounds`` short segments of about ``--seconds / rounds`` each, and writes JSON to
``--out``: samples/s per round, or the stage that failed and why in one line. Imports nothing of
``advisor`` but this package's ``export`` (numpy only), so that the backend's own import is all
the process pays for.

With ``--serve`` it measures no round by itself: once warm it writes one line
``@advisor {...}`` (status "ready" and the preparation's figures) to stdout, then measures one
segment for every ``round`` line read from stdin and answers each with ``@advisor {"rate": …}``,
until ``stop`` or the end of stdin. The parent holds every candidate warm this way and runs their
rounds in turn, so that a round of each candidate and of the run's own see the same minutes of a
shared machine.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from advisor.experiments.backends.custom import load_modules

BACKEND_MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}


ANSI = re.compile(r"\x1b\[[0-9;]*m")


LIBRARY_PARTS = ("site-packages", "dist-packages", "/lib/python", "advisor/experiments")
DUMPS = ("Full object config: ", "config=")


def _drop_dumps(text: str) -> str:
    """``text`` without the config dictionaries Keras's errors print whole (kilobytes of JSON)."""
    for marker in DUMPS:
        start = text.find(marker + "{")
        while start >= 0:
            depth, end = 0, start + len(marker)
            for end in range(start + len(marker), len(text)):
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                if depth == 0:
                    break
            text = text[: start + len(marker)] + "{…}" + text[end + 1 :]
            start = text.find(marker + "{", start + len(marker) + 3)
    return text


def _where(exc: BaseException) -> str:
    """Where the user's own code raised ``exc`` (its last frame outside the libraries), or ""."""
    found, seen = "", set()
    chain: BaseException | None = exc
    while chain is not None and id(chain) not in seen:  # Keras re-raises with the cause chained
        seen.add(id(chain))
        for frame in traceback.extract_tb(chain.__traceback__):
            if frame.filename and not any(p in frame.filename for p in LIBRARY_PARTS):
                code = f": {frame.line.strip()}" if frame.line else ""
                found = f" (in {Path(frame.filename).name}:{frame.lineno}, {frame.name}{code})"
        chain = chain.__cause__ or chain.__context__
    return found


def reason_line(exc: BaseException) -> str:
    """One line, whole: Keras's colour codes, its "Arguments received by" tail and the config
    dictionaries its errors print are left out; where the user's code raised it is added."""
    text = " ".join(ANSI.sub("", str(exc)).split()).split(" Arguments received by ")[0]
    text = _drop_dumps(text) or type(exc).__name__
    if not text.startswith(type(exc).__name__):
        text = f"{type(exc).__name__}: {text}"
    return text + _root(exc) + _where(exc)


def _root(exc: BaseException) -> str:
    """The first sentence of the error at the end of ``exc``'s chain, when it is another kind
    (Keras's "'str' object has no attribute …" hides JAX's TracerArrayConversionError)."""
    root, seen = exc, {id(exc)}
    while (root.__cause__ or root.__context__) is not None:
        root = root.__cause__ or root.__context__  # type: ignore[assignment]
        if id(root) in seen:
            break
        seen.add(id(root))
    if root is exc or type(root) is type(exc):
        return ""
    text = " ".join(ANSI.sub("", str(root)).split()).split(". ")[0].rstrip(".")
    return f"; caused by {type(root).__name__}" + (f": {text}" if text else "")


class Stop(Exception):
    """A stage failed: ``status`` and a one-line ``reason`` for the parent."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def _load(path: Path, keras: Any, custom: dict[str, Any]) -> Any:
    if path.suffix == ".keras":
        return keras.saving.load_model(path, custom_objects=custom, compile=True)
    with keras.saving.custom_object_scope(custom):
        return _from_config(path)


def _from_config(path: Path) -> Any:
    document = json.loads(path.read_text())
    module, _, name = document["class"].partition(":")
    cls = importlib.import_module(module)
    for part in name.split("."):
        cls = getattr(cls, part)
    model = cls.from_config(document["config"])
    model.load_weights(path.with_name("model.weights.h5"))
    if document.get("compile"):
        model.compile_from_config(document["compile"])
    return model


def _recompile(model: Any, jit: bool) -> None:
    config = model.get_compile_config() if hasattr(model, "get_compile_config") else None
    if not config:
        raise Stop(
            "failed", "the model was not compiled: compile it (optimizer, loss) before measuring"
        )
    config = dict(config)
    config.update(jit_compile=jit, run_eagerly=False, steps_per_execution=1)
    model.compile_from_config(config)


TILE_BYTES = (
    64 * 2**20
)  # the cached sample is repeated up to this size: long epochs, few epoch starts
TILE_BATCHES = 256


def _nbytes(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return int(value.nbytes)


def _tile(value: Any, times: int) -> Any:
    import numpy as np

    if value is None or times <= 1:
        return value
    if isinstance(value, dict):
        return {k: _tile(v, times) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_tile(v, times) for v in value)
    return np.concatenate([value] * times)


class Feed:
    """The cached batches as arrays for ``fit``, repeated so that an epoch holds many steps."""

    def __init__(self, x: Any, y: Any, batch_size: int, batches: int) -> None:
        size = max(1, _nbytes(x) + _nbytes(y))
        times = max(1, min(-(-TILE_BATCHES // batches), TILE_BYTES // size))
        self.x, self.y, self.batch_size, self.batches = (
            _tile(x, times),
            _tile(y, times),
            batch_size,
            batches * times,
        )


def _clock(keras: Any) -> Any:
    """A callback that sums the epochs' time: from each epoch's start to its end, when the last
    step's logs are ready (no per-batch hook: one would make async backends wait every step)."""

    class EpochClock(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.seconds, self.started = 0.0, 0.0

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.started = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            self.seconds += time.perf_counter() - self.started

    return EpochClock()


def fit_steps(model: Any, feed: Feed, keras: Any, steps: int) -> tuple[int, float]:
    """``fit`` for about ``steps`` steps (whole epochs of at most the feed's length):
    (steps done, seconds inside the epochs)."""
    per_epoch = max(1, min(steps, feed.batches))
    epochs = max(1, round(steps / per_epoch))
    clock = _clock(keras)
    model.fit(
        feed.x,
        feed.y,
        batch_size=feed.batch_size,
        epochs=epochs,
        steps_per_epoch=per_epoch,
        shuffle=False,
        verbose=0,
        callbacks=[clock],
    )
    return epochs * per_epoch, clock.seconds


Rebuild = Any  # (model, keras) -> the model to measure: another experiment's change


def measure(args: argparse.Namespace, rebuild: Rebuild = None) -> dict[str, Any]:
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    out: dict[str, Any] = {"backend": backend, "jit": args.jit, "rounds": [], "pid": os.getpid()}
    started = time.perf_counter()
    module = BACKEND_MODULES.get(backend)
    if module is None:
        raise Stop("failed", f"unknown backend {backend!r}")
    try:
        framework = importlib.import_module(module)
    except ImportError as exc:
        raise Stop("not_installed", f"not installed ({reason_line(exc)})") from None
    out["backend_version"] = getattr(framework, "__version__", None)
    if backend == "torch" and args.torch_threads:
        framework.set_num_threads(args.torch_threads)
    import keras

    out["keras_version"] = keras.__version__
    if keras.backend.backend() != backend:
        raise Stop("failed", f"Keras runs on {keras.backend.backend()}, not {backend}")
    out["import_seconds"] = time.perf_counter() - started
    failed = load_modules(args.ported + args.imports)
    if failed is not None:
        raise Stop("failed", f"importing {failed[0]} failed on {backend}: {reason_line(failed[1])}")
    from advisor.experiments.backends.export import read_arrays

    custom: dict[str, Any] = {}
    if args.custom:
        from advisor.experiments.backends.custom import read as read_custom

        try:
            custom = read_custom(Path(args.custom))
        except Exception as exc:  # noqa: BLE001 — the user's classes cannot be rebuilt here
            raise Stop(
                "failed", f"the custom objects cannot be rebuilt on {backend}: {reason_line(exc)}"
            ) from None
    timer = time.perf_counter()
    try:
        with keras.saving.custom_object_scope(custom):  # the compile config names them too
            model = _load(Path(args.model), keras, custom)
            if rebuild is not None:
                model = rebuild(model, keras)
            _recompile(model, args.jit)
    except Stop:
        raise
    except Exception as exc:  # noqa: BLE001 — the model cannot be rebuilt on this backend
        raise Stop("failed", f"cannot rebuild the model on {backend}: {reason_line(exc)}") from None
    out["load_seconds"] = time.perf_counter() - timer
    x, y, batch_size, count = read_arrays(args.batches)
    feed = Feed(x, y, batch_size, count)
    out["batch_size"], out["batches"] = batch_size, count
    timer = time.perf_counter()
    try:
        fit_steps(model, feed, keras, 1)
    except Exception as exc:  # noqa: BLE001 — the first step is where most backends fail
        mode = f"jit_compile={args.jit}"
        raise Stop("failed", f"cannot train on {backend} ({mode}): {reason_line(exc)}") from None
    first = time.perf_counter() - timer
    timer = time.perf_counter()
    step_seconds, recompile = warm(lambda steps: fit_steps(model, feed, keras, steps), args.warmup)
    out["compile_seconds"] = first + recompile
    out["warmup_seconds"] = time.perf_counter() - timer
    segment = args.seconds / max(1, args.rounds)
    segment_steps = max(2, int(segment / max(step_seconds, 1e-6)))
    if args.serve:
        out["status"] = "ready"
        _say(out)
        out["steps"] = _serve(lambda: fit_steps(model, feed, keras, segment_steps), batch_size)
        return out
    steps_total = 0
    for _ in range(args.rounds):
        done, took = fit_steps(model, feed, keras, segment_steps)
        steps_total += done
        out["rounds"].append(done * batch_size / took)
    out["steps"] = steps_total
    return out


def warm(fit: Any, warmup: float) -> tuple[float, float]:
    """Warm up with fits of doubling length for at least ``warmup`` seconds and two fits:
    (seconds per step of the last fit, the second fit's time beyond that pace).

    The segments are sized from the last fit alone: ``torch.compile`` compiles again on the second
    ``fit`` call (2.4 s of a 3-step fit of a small MLP on the development VM), and a pace that
    counted it made 2-step segments that ran at half the compiled speed. That second compile is
    returned apart, to count as compile time."""
    started = time.perf_counter()
    second_steps, second_seconds = fit(3)
    steps, seconds = second_steps, second_seconds
    while True:
        steps, seconds = fit(2 * steps)
        if time.perf_counter() - started >= warmup:
            break
    pace = seconds / max(1, steps)
    return pace, max(0.0, second_seconds - second_steps * pace)


PREFIX = "@advisor "  # the protocol's lines on stdout; anything else a library prints is ignored


def _say(message: dict[str, Any]) -> None:
    sys.stdout.write(PREFIX + json.dumps(message) + "\n")
    sys.stdout.flush()


def _serve(segment: Any, batch_size: int) -> int:
    """Answer every ``round`` line on stdin with one measured segment's rate; steps done in all."""
    steps_total = 0
    for line in sys.stdin:
        if line.strip() != "round":
            break
        try:
            done, took = segment()
        except Exception as exc:  # noqa: BLE001 — a round that fails ends this candidate, with its reason
            raise Stop("failed", f"a measured round failed: {reason_line(exc)}") from None
        steps_total += done
        _say({"rate": done * batch_size / took, "steps": done, "ended": time.time()})
    return steps_total


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="advisor.experiments.backends.child")
    parser.add_argument("--model", required=True)
    parser.add_argument("--batches", required=True)
    parser.add_argument("--jit", type=lambda v: v.lower() in ("1", "true", "yes"), required=True)
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="measured time, all rounds together"
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument(
        "--warmup", type=float, default=0.5, help="seconds of steps after the first"
    )
    parser.add_argument("--import", dest="imports", action="append", default=[])
    parser.add_argument("--custom", default=None, help="custom objects pickled by the parent")
    parser.add_argument("--ported", action="append", default=[], help="MODULE=FILE, its rewrite")
    parser.add_argument("--torch-threads", type=int, default=None)
    parser.add_argument(
        "--out", default=None, help="where the result's JSON goes (without --serve)"
    )
    parser.add_argument(
        "--serve", action="store_true", help="measure a round for every 'round' line on stdin"
    )
    args = parser.parse_args(argv)
    if not args.serve and not args.out:
        parser.error("--out is needed without --serve")
    return args


def main(argv: list[str] | None = None, rebuild: Rebuild = None) -> int:
    """Measure as the arguments say; ``rebuild`` changes the loaded model first (the precision
    what-if's child sets a dtype policy with it)."""
    args = parse(argv)
    try:
        result = measure(args, rebuild)
        result["status"] = "measured"
    except Stop as stop:
        result = {"status": stop.status, "reason": stop.reason}
    except Exception as exc:  # noqa: BLE001 — whatever else fails is reported, not raised
        traceback.print_exc()
        result = {"status": "failed", "reason": reason_line(exc)}
    if args.serve:
        if result["status"] != "measured":  # failed before or while serving: the parent reads why
            _say(result)
    else:
        Path(args.out).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the backend's teardown (seconds for TensorFlow or torch) serves no one
