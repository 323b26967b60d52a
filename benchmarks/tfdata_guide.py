"""The scenario of TensorFlow's guide "Better performance with the tf.data API", under the advisor.

    python benchmarks/tfdata_guide.py [--samples 30] [--epochs 3] [--steps 20]

The guide's ArtificialDataset opens a "file" (30 ms), reads each element (15 ms), a map does
30 ms of "pre-processing" per element, and each training step sleeps 10 ms. Each element is one
batch here, so a step's input costs 45 ms on the naive pipeline against 10 ms of training.
The guide's fixes are applied one by one — prefetch, parallel interleave, parallel map, cache — and
each variant is trained with ``AdvisorCallback(baseline="end")``. The script checks that

(a) the advisor flags the naive pipeline as input-bound and names the missing stages,
(b) each fix it recommends raises the measured throughput,
(c) the fully fixed pipeline reaches at least 90% of the cached-input ceiling,

and prints a markdown table. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

from advisor.diagnosis.phrases import say_changes

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

OPEN_S, READ_S, MAP_S, STEP_S = 0.030, 0.015, 0.030, 0.010  # the guide's latencies
BATCH, FEATURES = 8, 4


def artificial_dataset(num_samples: int) -> Any:
    """The guide's ArtificialDataset: a file open, then one slow read per element."""
    import numpy as np
    import tensorflow as tf

    def generator(n: Any) -> Any:
        time.sleep(OPEN_S)  # opening the file
        for index in range(int(n)):
            time.sleep(READ_S)  # reading one record
            yield (
                np.full((BATCH, FEATURES), index, "float32"),
                np.full((BATCH,), index % 2, "int64"),
            )

    signature = (tf.TensorSpec((BATCH, FEATURES), tf.float32), tf.TensorSpec((BATCH,), tf.int64))
    return tf.data.Dataset.from_generator(
        generator, output_signature=signature, args=(num_samples,)
    )


def mapped_function(x: Any, y: Any) -> tuple[Any, Any]:
    """The guide's pre-processing: 30 ms in Python (the sleep releases the GIL, like I/O does)."""
    import tensorflow as tf

    tf.py_function(lambda: time.sleep(MAP_S), [], ())
    return x, y


def variants(samples: int) -> list[tuple[str, Any]]:
    import tensorflow as tf

    auto = tf.data.AUTOTUNE

    def naive() -> Any:
        return artificial_dataset(samples).map(mapped_function)

    def prefetch() -> Any:
        return artificial_dataset(samples).map(mapped_function).prefetch(auto)

    def interleave() -> Any:
        files = tf.data.Dataset.range(2)
        ds = files.interleave(lambda _: artificial_dataset(samples // 2), num_parallel_calls=auto)
        return ds.map(mapped_function).prefetch(auto)

    def parallel_map() -> Any:
        files = tf.data.Dataset.range(2)
        ds = files.interleave(lambda _: artificial_dataset(samples // 2), num_parallel_calls=auto)
        return ds.map(mapped_function, num_parallel_calls=auto).prefetch(auto)

    def cache() -> Any:
        files = tf.data.Dataset.range(2)
        ds = files.interleave(lambda _: artificial_dataset(samples // 2), num_parallel_calls=auto)
        return ds.map(mapped_function, num_parallel_calls=auto).cache().prefetch(auto)

    return [
        ("naive", naive),
        ("+ prefetch", prefetch),
        ("+ parallel interleave", interleave),
        ("+ parallel map", parallel_map),
        ("+ cache", cache),
    ]


def build_model() -> Any:
    """A tiny model whose training step also sleeps 10 ms, as in the guide."""
    import keras
    import tensorflow as tf

    class SleepyModel(keras.Model):
        def train_step(self, data: Any) -> Any:
            tf.py_function(lambda: time.sleep(STEP_S), [], ())
            return super().train_step(data)

    inputs = keras.Input((FEATURES,))
    outputs = keras.layers.Dense(2)(keras.layers.Dense(16, activation="relu")(inputs))
    model = SleepyModel(inputs, outputs)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def run_variant(make: Any, epochs: int, steps: int, runs_dir: str) -> dict[str, Any]:
    import advisor
    from advisor.analysis.registry import registry
    from advisor.store.reader import RunReader

    cb = advisor.AdvisorCallback(
        runs_dir=runs_dir,
        baseline="end",
        baseline_steps=steps,
        log_every_seconds=None,
        window_seconds=1.0,
        warmup_steps=3,
        telemetry=False,
    )
    model = build_model()
    t0 = time.perf_counter()
    model.fit(make(), epochs=epochs, verbose=0, callbacks=[cb], shuffle=False)
    seconds = time.perf_counter() - t0
    run = RunReader(cb.run_path).read()
    facts, errors = registry().derive(run)
    findings: list[str] = []
    try:
        from advisor.service import diagnose

        report = diagnose(run)
        findings = [f.code for f in report.failures if f.code[:2] in ("C4", "M1", "S3")]
    except Exception as exc:  # the diagnosis is a bonus here; facts carry the checks
        findings = [f"(diagnosis unavailable: {type(exc).__name__})"]
    return {"facts": facts, "errors": errors, "seconds": seconds, "findings": findings}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30, help="elements (batches) per epoch")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20, help="baseline steps")
    args = parser.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory() as runs_dir:
        for name, make in variants(args.samples):
            result = run_variant(make, args.epochs, args.steps, runs_dir)
            rows.append((name, result))
            f = result["facts"]
            print(
                f"{name:24s} real {f.get('baseline.real_samples_per_s', 0):7.1f}  cached "
                f"{f.get('baseline.cached_samples_per_s', 0):7.1f} samples/s  "
                f"bound {f.get('input.bound_fraction', float('nan')):.0%}  "
                f"({result['seconds']:.1f} s)",
                file=sys.stderr,
            )

    print(
        "| pipeline | training samples/s | baseline real samples/s | cached ceiling samples/s | "
        "real ÷ ceiling | input.bound_fraction | failing rules (C4/M1/S3) | advisor recommends |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for name, result in rows:
        f = result["facts"]
        real, cached = f.get("baseline.real_samples_per_s"), f.get("baseline.cached_samples_per_s")
        ratio = real / cached if real and cached else float("nan")
        wanted = [
            fix
            for fix, needle in FIXES.items()
            if needle in say_changes(f.get("pipeline.advice") or [])
        ]
        print(
            f"| {name} | {f.get('throughput.samples_per_s', float('nan')):.0f} | "
            f"{real or float('nan'):.0f} | {cached or float('nan'):.0f} | {ratio:.0%} | "
            f"{f.get('input.bound_fraction', float('nan')):.0%} | "
            f"{', '.join(result['findings']) or '—'} | {', '.join(wanted) or '—'} |"
        )
    print()
    print(
        "Advice for the naive pipeline (`pipeline.advice`):",
        say_changes(rows[0][1]["facts"].get("pipeline.advice") or []),
    )
    checks = evaluate(rows)
    print()
    for label, ok, detail in checks:
        print(f"- ({label}) {'PASS' if ok else 'FAIL'}: {detail}")
    return 0 if all(ok for _, ok, _ in checks) else 1


# The fix each variant applies, and the words of the advice that recommend it.
FIXES = {
    "prefetch": ".prefetch(",
    "parallel interleave": "interleave",
    "parallel map": "num_parallel_calls=tf.data.AUTOTUNE to map",
    "cache": ".cache()",
}


def evaluate(rows: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, bool, str]]:
    naive = rows[0][1]["facts"]
    advice = say_changes(naive.get("pipeline.advice") or [])
    named = {fix: needle in advice for fix, needle in FIXES.items()}
    prefetch_known = named["prefetch"] or bool(naive.get("pipeline.prefetch_injected"))
    bound = naive.get("input.bound_fraction", 0.0)
    a = (
        bound >= 0.20
        and named["parallel interleave"]
        and named["parallel map"]
        and named["cache"]
        and prefetch_known,
        f"naive input.bound_fraction = {bound:.0%} (error threshold 20%); advice names "
        + ", ".join(f"{k}: {'yes' if v else 'no'}" for k, v in named.items())
        + (
            "; prefetch: TF injects one (pipeline.prefetch_injected)"
            if naive.get("pipeline.prefetch_injected")
            else ""
        ),
    )
    steps = []
    ok = True
    for (_, before), (name, after) in zip(rows, rows[1:]):
        fix = name.lstrip("+ ")
        recommended = FIXES[fix] in say_changes(before["facts"].get("pipeline.advice") or [])
        old = before["facts"].get("baseline.real_samples_per_s", 0.0)
        new = after["facts"].get("baseline.real_samples_per_s", 0.0)
        gain = new / old - 1.0 if old else float("nan")
        if recommended and not new > old:
            ok = False
        steps.append(f"{fix} {'(recommended)' if recommended else '(not recommended)'} {gain:+.0%}")
    b = (ok, "baseline real samples/s per fix: " + "; ".join(steps))
    last = rows[-1][1]["facts"]
    real, cached = (
        last.get("baseline.real_samples_per_s", 0.0),
        last.get("baseline.cached_samples_per_s", 0.0),
    )
    ratio = real / cached if cached else 0.0
    c = (
        ratio >= 0.90,
        f"fully fixed pipeline at {ratio:.0%} of the cached-input ceiling "
        f"({real:.1f} / {cached:.1f})",
    )
    return [("a", *a), ("b", *b), ("c", *c)]


if __name__ == "__main__":
    sys.exit(main())
