"""GPU check of the cross-framework collectors (not a pytest file: run by hand on a GPU machine).

    KERAS_BACKEND=torch python tests/backends/gpu_check.py
    KERAS_BACKEND=jax python tests/backends/gpu_check.py

Trains a mid-sized Dense model on the GPU with the advisor (profile window, telemetry with
FLOPs, baseline at the end) and prints what the run recorded: device, exact sample counts, the
trace facts with device-side shares, framework memory and FLOPs. Prints PASS / FAIL lines.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import advisor  # noqa: E402
from advisor.analysis.registry import registry  # noqa: E402
from advisor.store.reader import RunReader  # noqa: E402
from advisor.store.schema import ContextRecord, EpochRecord, WindowRecord  # noqa: E402

failures = 0


def check(ok: bool, what: str) -> None:
    global failures
    failures += 0 if ok else 1
    print(("PASS " if ok else "FAIL ") + what, flush=True)


def main() -> int:
    backend = keras.backend.backend()
    n, features, batch = 8192 + 100, 512, 256  # the last batch is partial
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, features)).astype("float32")
    y = rng.normal(size=(n, 1)).astype("float32")
    model = keras.Sequential(
        [
            keras.Input((features,)),
            keras.layers.Dense(2048, activation="relu"),
            keras.layers.Dense(2048, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", "mse")
    runs = tempfile.mkdtemp(prefix="advisor-gpu-")
    cb = advisor.AdvisorCallback(
        runs_dir=runs,
        profile_steps=(10, 34),
        mfu=True,
        telemetry_interval_seconds=0.2,
        baseline="end",
        window_seconds=0.5,
        log_every_seconds=None,
    )
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=2, callbacks=[cb], verbose=0, shuffle=False)
    print(f"{backend}: fit {time.perf_counter() - t0:.1f} s", flush=True)
    run = RunReader(cb.run_path).read()
    facts, errors = registry().derive(run)
    check(errors == [], f"facts derived without errors {errors}")
    check(facts.get("context.device") == "gpu", f"context.device = {facts.get('context.device')}")
    check([e.samples for e in run.of_type(EpochRecord)] == [n, n], "epoch samples exact")
    check(sum(w.samples or 0 for w in run.of_type(WindowRecord)) == 2 * n, "window samples exact")
    values: dict = {}
    for record in run.of_type(ContextRecord):
        values.update(record.values)
    layers = [features * 2048, 2048 * 2048, 2048 * 1]  # multiply-adds per sample, forward
    expected = 2 * (2 * layers[0] + 3 * layers[1] + 3 * layers[2])  # first layer: no input gradient
    flops = values.get("model.flops_per_sample")
    check(
        flops is not None and abs(flops / expected - 1) < 0.02,
        f"FLOPs/sample {flops} vs {expected}",
    )
    check(
        bool(values.get("telemetry.framework_mem")),
        f"framework memory {values.get('telemetry.framework_mem')}",
    )
    check(facts.get("trace.present") is True, "trace summarised")
    check(facts.get("trace.hardware") == "GPU", f"trace.hardware = {facts.get('trace.hardware')}")
    for key in ("trace.device_idle_percent", "trace.device_compute_percent", "trace.input_percent"):
        print(f"  {key} = {facts.get(key)}")
    check(facts.get("trace.device_idle_percent") is not None, "device idle share measured")
    check(bool(facts.get("baseline.cached_samples_per_s")), "baseline measured")
    keep = {
        k: v
        for k, v in facts.items()
        if k.startswith(
            ("trace.", "context.device", "baseline.", "throughput.samples_per_s", "model.", "gpu.")
        )
    }
    print(json.dumps(keep, indent=1, default=str)[:6000])
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, f"gpu-{backend}.json"), "w") as fh:
            json.dump(
                {"facts": keep, "context": values, "errors": errors}, fh, indent=1, default=str
            )
        if backend == "torch":  # the chrome trace, as a fixture for the summariser's GPU path
            import gzip
            from pathlib import Path

            for trace in Path(cb.run_path).rglob("*.pt.trace.json"):
                with gzip.open(os.path.join(out, "torch-gpu.pt.trace.json.gz"), "wb") as fh:
                    fh.write(trace.read_bytes())
    print(f"{backend}: {'OK' if failures == 0 else f'{failures} FAILED'}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
