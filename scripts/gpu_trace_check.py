"""GPU check of profile capture and summaries: a small Keras fit, profiled, device-side numbers.

Run it through ``scripts/gpu_trace_check.sh`` (which installs carried wheels when needed). It picks
TensorFlow when TensorFlow sees a GPU, else the JAX backend, trains a small MLP twice (float32
and mixed bfloat16) with ``AdvisorCallback(profile_steps=(10, 39))``, summarises each capture
with XProf and prints what it verified as PASS / FAIL lines. Exit status 1 when a check failed.

Environment: ``ADVISOR_CHECK_BACKEND`` (tensorflow | jax) forces a backend;
``ADVISOR_CHECK_ALLOW_CPU=1`` runs without a GPU (a dry run of the script itself: device checks
are then reported as SKIP); ``OUT`` (a folder) receives the log and the raw XProf outputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
ALLOW_CPU = os.environ.get("ADVISOR_CHECK_ALLOW_CPU") == "1"
PROFILE = (10, 39)  # 30 steps
STEPS = 50
WIDTH = int(os.environ.get("ADVISOR_CHECK_WIDTH", "4096"))  # smaller for dry runs on CPU
failures: list[str] = []


def say(line: str) -> None:
    print(line, flush=True)
    if OUT is not None:
        with open(OUT / "log.txt", "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def check(ok: bool, what: str, skip: bool = False) -> None:
    if skip:
        say(f"[SKIP] {what}")
        return
    say(f"[{'PASS' if ok else 'FAIL'}] {what}")
    if not ok:
        failures.append(what)


def probe(code: str) -> str:
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        )
    except subprocess.TimeoutExpired:
        return ""
    return (
        done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else ""
    )


def pick_backend() -> tuple[str, bool]:
    forced = os.environ.get("ADVISOR_CHECK_BACKEND")
    tf_gpus = probe("import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))")
    jax_gpus = probe(
        "import jax\ntry:\n print(len(jax.devices('gpu')))\nexcept RuntimeError:\n print(0)"
    )
    say(
        f"TensorFlow GPUs: {tf_gpus or 'TensorFlow not importable'}; "
        f"JAX GPUs: {jax_gpus or 'JAX not importable'}"
    )
    if forced:
        return forced, (tf_gpus if forced == "tensorflow" else jax_gpus) not in ("", "0")
    if tf_gpus not in ("", "0"):
        return "tensorflow", True
    if jax_gpus not in ("", "0"):
        return "jax", True
    if tf_gpus:
        return "tensorflow", False
    return "jax", False


def train(keras, policy: str, runs_dir: Path, name: str) -> Path:
    import numpy as np

    from advisor.collectors.callback import AdvisorCallback

    keras.mixed_precision.set_global_policy(policy)
    rng = np.random.default_rng(0)
    x = rng.random((256 * STEPS, 1024), dtype=np.float32)
    y = rng.random((256 * STEPS, 1), dtype=np.float32)
    model = keras.Sequential(
        [keras.Input((1024,))]
        + [keras.layers.Dense(WIDTH, activation="relu") for _ in range(3)]
        + [keras.layers.Dense(1, dtype="float32")]
    )
    model.compile("adam", "mse")
    cb = AdvisorCallback(
        runs_dir=runs_dir, name=name, profile_steps=PROFILE, log_every_seconds=None
    )
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=256, epochs=1, verbose=0, callbacks=[cb])
    say(
        f"{name}: fit of {STEPS} steps took {time.perf_counter() - t0:.1f} s "
        f"(profiled steps {PROFILE[0]}..{PROFILE[1]})"
    )
    keras.mixed_precision.set_global_policy("float32")
    return Path(cb.run_path)


def raw_outputs(trace_folder: Path, prefix: str, full: bool) -> None:
    """Keep XProf's raw tables and a sketch of the timeline's device lines, to study later.

    ``full``: the tables, the timeline analysis and a sketch of the timeline; else nothing (at most
    8 files come back from a device machine).
    """
    if OUT is None:
        return
    from advisor.traces.summarize import find_xplanes

    files = [str(f) for f in find_xplanes(trace_folder)]
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        subprocess.run(
            [sys.executable, "-m", "advisor.traces.xprof_worker", tmp, *files],
            timeout=300,
            check=False,
            capture_output=True,
            env=env,
        )
        tools = (
            ("overview_page", "overview"),
            ("input_pipeline_analyzer", "input"),
            ("framework_op_stats", "ops"),
        )
        for tool, short in (*tools, ("events", "events")) if full else ():
            src = Path(tmp) / f"{tool}.json"
            if src.is_file():
                (OUT / f"{prefix}-{short}.json").write_bytes(src.read_bytes()[: 15 * 1024 * 1024])
    if not full:
        return
    try:
        from xprof.convert import raw_to_tool_data

        data, _ = raw_to_tool_data.xspace_to_tool_data(
            files, "trace_viewer", {"use_saved_result": False}
        )
        events = json.loads(data)["traceEvents"]
    except Exception as exc:  # noqa: BLE001 — a sketch only
        say(f"(timeline sketch skipped: {type(exc).__name__}: {exc})")
        return
    processes = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    threads = {
        (e["pid"], e.get("tid")): e["args"]["name"]
        for e in events
        if e.get("name") == "thread_name"
    }
    sketch: dict[str, dict[str, int]] = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        process = processes.get(e["pid"], e["pid"])
        thread = threads.get((e["pid"], e.get("tid")), e.get("tid"))
        key = f"{process} | {thread}"
        names = sketch.setdefault(key, {})
        names[e["name"][:80]] = names.get(e["name"][:80], 0) + 1
    compact = {k: dict(sorted(v.items(), key=lambda kv: -kv[1])[:25]) for k, v in sketch.items()}
    (OUT / f"{prefix}-timeline.json").write_text(json.dumps(compact, indent=1))


def main() -> int:
    if OUT is not None:
        OUT.mkdir(parents=True, exist_ok=True)
    say(f"python {sys.version.split()[0]} at {sys.executable}")
    backend, has_gpu = pick_backend()
    if not has_gpu and not ALLOW_CPU:
        say(
            "[FAIL] no GPU visible to TensorFlow or JAX "
            "(set ADVISOR_CHECK_ALLOW_CPU=1 for a dry run on CPU)"
        )
        return 1
    os.environ["KERAS_BACKEND"] = backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if backend == "jax":
        os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.3")
    import keras

    from advisor.analysis.registry import registry
    from advisor.store.reader import read_run
    from advisor.store.schema import EventRecord, TraceRecord
    from advisor.store.trace_summary import load_summary
    from advisor.traces.summarize import xprof_available

    say(
        f"backend {backend} (keras {keras.__version__}), GPU {'yes' if has_gpu else 'no (dry run)'}"
    )
    check(xprof_available(), "xprof is importable (XProf's converter)")
    no_gpu = not has_gpu
    runs_dir = Path(tempfile.mkdtemp(prefix="advisor-gpu-check-"))
    summaries = {}
    for policy, name in (("float32", "fp32"), ("mixed_bfloat16", "bf16")):
        run_path = train(keras, policy, runs_dir, name)
        run = read_run(run_path)
        traces = run.of_type(TraceRecord)
        events = [e for e in run.of_type(EventRecord) if e.source == "profiler"]
        for e in events:
            say(f"  event ({e.level}): {e.message}")
        summarised = [t for t in traces if t.summary]
        check(
            bool(summarised),
            f"{name}: the capture was saved and summarised ({len(traces)} trace records)",
        )
        if not summarised:
            continue
        summary = load_summary(run.path / summarised[-1].summary)
        summaries[name] = summary
        raw_outputs(run.path / summarised[-1].path, name, full=name == "fp32")
        if OUT is not None:
            (OUT / f"{name}-summary.json").write_text(summary.model_dump_json(indent=1))
        facts, errors = registry().derive(run)
        trace_facts = {
            k: v for k, v in facts.items() if k.startswith("trace.") and k != "trace.top_ops"
        }
        say(f"{name}: trace facts {json.dumps(trace_facts, sort_keys=True)}")
        check(
            not [e for e in errors if "trace" in e],
            f"{name}: trace facts derived without errors {errors or ''}",
        )
        check(summary.steps >= 20, f"{name}: XProf found the marked steps ({summary.steps} of 30)")
        check(
            summary.seconds is not None and summary.seconds < 2.0,
            f"{name}: summarising the 30-step profile took {summary.seconds:.2f} s (< 2 s)",
        )
        check(
            summary.on_device,
            f"{name}: XProf sees a device (hardware {summary.hardware})",
            skip=no_gpu,
        )
        device_numbers = {
            k: getattr(summary, k)
            for k in (
                "device_compute_percent",
                "device_idle_percent",
                "h2d_percent",
                "d2h_percent",
                "compute_16bit_percent",
                "kernel_launch_percent",
            )
        }
        say(f"{name}: device-side numbers {json.dumps(device_numbers)}")
        present = [k for k, v in device_numbers.items() if v is not None]
        check(
            {"device_compute_percent", "device_idle_percent"} <= set(present),
            f"{name}: device compute and idle shares measured",
            skip=no_gpu,
        )
        check(
            {"h2d_percent", "d2h_percent"} <= set(present),
            f"{name}: host↔device copy shares measured",
            skip=no_gpu,
        )
        device_ops = [op for op in summary.top_ops if op.where == "device"]
        check(
            bool(device_ops),
            f"{name}: device ops among the top ops ({len(device_ops)} of {len(summary.top_ops)})",
            skip=no_gpu,
        )
        for op in summary.top_ops[:5]:
            say(f"    {op.self_time_percent:5.1f}% {op.where:6s} {op.type[:30]:30s} {op.name[:60]}")
        for note in summary.notes:
            say(f"    note: {note}")
        cli = subprocess.run(
            [sys.executable, "-m", "advisor.cli.main", "trace", str(run.path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        check(cli.returncode == 0, f"{name}: `advisor trace RUN` exit {cli.returncode}")
        for line in cli.stdout.splitlines()[:9]:
            say("    | " + line)
    if "fp32" in summaries and "bf16" in summaries:
        a, b = summaries["fp32"].compute_16bit_percent, summaries["bf16"].compute_16bit_percent
        if a is None and b is None and not no_gpu:
            say(
                "[SKIP] 16-bit share of compute: not measurable in these profiles "
                "(no per-op precision data, e.g. CUDA command buffers under JAX); "
                "the summaries leave it out and say so"
            )
        else:
            check(
                a is not None and b is not None and b > a and b >= 10,
                f"16-bit share of compute: float32 {a} % < mixed_bfloat16 {b} %",
                skip=no_gpu,
            )
    verdict = (
        "all checks passed" if not failures else f"{len(failures)} failed: " + "; ".join(failures)
    )
    say(f"RESULT: {verdict}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
