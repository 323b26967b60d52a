"""The noise-aware regression gate against a fixed 5 % gate, on pairs of real short fits.

    python benchmarks/regression_gate.py [--quick] [--store DIR]

Every run is a real fit of a small Keras model on synthetic data (6 epochs, about 3 s) with
``AdvisorCallback(window_seconds=0.25)``, trained in this one process, one after another, on
whatever else the machine is doing. Three sets:

1. **no change**: pairs of runs of the same code (independent pairs of a set of their own, and
   neighbouring runs of the series' flat stretches). A failure here is a false alarm.
2. **known slowdowns**: a run with one part made slower, against a no-change run: a sleep in a
   callback's ``on_train_batch_end`` of 5 %, 10 % or 20 % of the measured step time, a slower
   ``map`` in the tf.data input (a sleep per batch), and a retrace at every epoch (a callback
   that drops the compiled train function). Detected = the gate fails; named = the part it
   blames first is the injected one.
3. **a series of 30 runs** tagged with a commit each: a callback sleep of 25 % of a step appears
   at run 10, a second one (another hook) at run 20; ``advisor history`` must find both.

The fixed gate fails a pair when samples/s dropped by more than 5 %. Both gates judge the same
pairs. Prints a table for benchmarks/RESULTS.md; exit 0.

``--only retrace`` (or ``map``) trains that slowdown alone, each run beside a no-change run
trained just before it, and judges those pairs and the no-change neighbours: a quick check of
one kind after a change to what the budget records (a few minutes, not the whole set).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROWS, BATCH, EPOCHS = 9600, 64, 6
PLAN = [("callback +5%", 0.05, 8), ("callback +10%", 0.10, 20), ("callback +20%", 0.20, 8)]


def make_fit(store: Path):
    import keras
    import numpy as np
    import tensorflow as tf

    from advisor import AdvisorCallback

    rng = np.random.default_rng(0)
    x = rng.random((ROWS, 32), dtype=np.float32)
    y = rng.random((ROWS, 1), dtype=np.float32)

    class Sleeper(keras.callbacks.Callback):
        def __init__(self, end: float = 0.0, begin: float = 0.0) -> None:
            super().__init__()
            self.end, self.begin = end, begin

        def on_train_batch_begin(self, batch, logs=None):
            if self.begin:
                time.sleep(self.begin)

        def on_train_batch_end(self, batch, logs=None):
            if self.end:
                time.sleep(self.end)

    class Retracer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.model.make_train_function(force=True)  # a new function: the next step traces

    def dataset(map_sleep: float):
        def slow(a, b):
            if map_sleep:
                tf.numpy_function(lambda: np.float32(time.sleep(map_sleep) or 0), [], tf.float32)
            return a, b

        return tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).map(slow)

    def fit(
        name: str,
        *,
        end: float = 0.0,
        begin: float = 0.0,
        map_sleep: float = 0.0,
        retrace: bool = False,
        tags: dict[str, str] | None = None,
    ) -> str:
        keras.utils.set_random_seed(0)
        model = keras.Sequential(
            [
                keras.Input((32,)),
                keras.layers.Dense(256, activation="relu"),
                keras.layers.Dense(256, activation="relu"),
                keras.layers.Dense(1),
            ]
        )
        model.compile("adam", "mse")
        callbacks = [Sleeper(end, begin)] + ([Retracer()] if retrace else [])
        advisor = AdvisorCallback(
            runs_dir=store,
            name=name,
            tags=tags,
            window_seconds=0.25,
            baseline=None,
            whatif=None,
            pipeline=False,
            log_every_seconds=None,
            telemetry_interval_seconds=0.25,
        )
        model.fit(dataset(map_sleep), epochs=EPOCHS, verbose=0, callbacks=[*callbacks, advisor])
        return str(advisor.writer.path)

    return fit


def judge(service, current: str, baseline: str) -> dict:
    report = service.diagnose(current, select=["P702"], baseline=baseline, max_regression_pct=5.0)
    reg = report.regression
    c = reg.comparison
    rate = c.rates[0]
    fixed_change = next(m.change_pct for m in reg.metrics if m.name == "throughput.samples_per_s")
    blamed = c.regressed_parts()
    return {
        "verdict": c.verdict,
        "failed": c.failed,
        "fixed_failed": fixed_change is not None and -fixed_change > 5.0,
        "fixed_change": fixed_change,
        "change": rate.change_pct,
        "detectable": rate.detectable_pct,
        "blamed": blamed[0].key if blamed else None,
        "named": [p.key for p in blamed],
        "summary": c.summary,
    }


def rate_line(label: str, results: list[dict], named_key: str | None = None) -> str:
    n = len(results)
    noise = sum(r["failed"] for r in results)
    fixed = sum(r["fixed_failed"] for r in results)
    unjudged = sum(r["verdict"] == "not judgeable" for r in results)
    contention = sum(r["verdict"] == "contention" for r in results)
    named = sum(named_key in r["named"] for r in results) if named_key else None
    changes = sorted(r["fixed_change"] for r in results if r["fixed_change"] is not None)
    median = changes[len(changes) // 2] if changes else float("nan")
    named_txt = f"{named}/{n}" if named is not None else "-"
    return (
        f"| {label} | {n} | {noise}/{n} ({noise / n:.0%}) | {fixed}/{n} ({fixed / n:.0%}) | "
        f"{named_txt} | {unjudged} | {contention} | {median:+.1f}% |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few pairs of each kind")
    parser.add_argument("--store", default=None, help="keep the runs here (default: a temp dir)")
    parser.add_argument(
        "--judge-only",
        action="store_true",
        help="judge the runs already in --store again (after a change to the gate), no fits",
    )
    parser.add_argument(
        "--only",
        choices=("retrace", "map"),
        default=None,
        help="this injected slowdown alone, against no-change runs trained beside it",
    )
    parser.add_argument(
        "--map-steps",
        type=float,
        default=0.5,
        help="with --only map: the map's sleep per batch, in no-change steps (default 0.5)",
    )
    args = parser.parse_args()
    if args.only:
        store = Path(args.store or tempfile.mkdtemp(prefix="regression-gate-"))
        n = 4 if args.quick else 8
        return only_one(make_fit(store), store, args.only, n, args.map_steps)
    if args.judge_only:
        return judge_store(Path(args.store), 2 if args.quick else 1)
    store = Path(args.store or tempfile.mkdtemp(prefix="regression-gate-"))
    from advisor.service import RunService

    fit = make_fit(store)
    service = RunService(store)
    k = 2 if args.quick else 1
    started = time.time()
    fit("warm-up")  # TensorFlow's first fit in a process is slower: not a pair
    # 1. no change: independent pairs
    alone = [fit("same") for _ in range(16 // k)]
    step_ms = _median_step_ms(service, alone)
    print(f"step time of the no-change runs: {step_ms:.2f} ms", flush=True)
    # 2. known slowdowns, each against a no-change run
    for label, share, count in PLAN:
        for _ in range(count // k):
            fit("slow-callback", end=share * step_ms / 1000)
    for _ in range(8 // k):
        fit("slow-map", map_sleep=0.5 * step_ms / 1000)
    for _ in range(8 // k):
        fit("retrace", retrace=True)
    # 3. the series
    for i in range(30):
        end = 0.25 * step_ms / 1000 if i >= 10 else 0.0
        begin = 0.25 * step_ms / 1000 if i >= 20 else 0.0
        fit("series", end=end, begin=begin, tags={"commit": f"c{i:02d}"})
    print(f"\nstore: {store}  ({time.time() - started:.0f} s of fits)\n")
    return judge_store(store, k)


def judge_store(store: Path, k: int) -> int:
    """Judges every pair of the store's runs (by name, in the order they were trained)."""
    from advisor.service import RunService
    from advisor.store.reader import RunReader

    service = RunService(store)
    by_name: dict[str, list[str]] = {}
    for path in sorted(service.run_dirs(), key=lambda p: RunReader(p).read_manifest().created):
        by_name.setdefault(RunReader(path).read_manifest().name or "", []).append(str(path))
    alone, series = by_name["same"], by_name["series"]
    no_change = [judge(service, alone[i + 1], alone[i]) for i in range(0, len(alone) - 1, 2)]
    no_change += [
        judge(service, series[i], series[i - 1]) for i in range(1, 30) if i not in (10, 20)
    ]
    injected: dict[str, list[dict]] = {}
    slow = iter(by_name["slow-callback"])
    for label, _, count in PLAN:
        runs = [next(slow) for _ in range(count // k)]
        injected[label] = [judge(service, r, alone[i % len(alone)]) for i, r in enumerate(runs)]
    for name, label in (("slow-map", "map +0.5 step"), ("retrace", "retrace each epoch")):
        injected[label] = [judge(service, r, alone[i]) for i, r in enumerate(by_name[name])]
    hook = "part.callback.Sleeper.on_train_batch_end"
    print(
        "| pairs | n | noise-aware gate fails | fixed 5% gate fails | named | not judgeable "
        "| contention | median samples/s change |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(rate_line("no change", no_change))
    for label, results in injected.items():
        print(rate_line(label, results, hook if label.startswith("callback") else None))
    print("\nparts blamed first (count):")
    for label, rs in [("no change", no_change), *injected.items()]:
        counts: dict[str, int] = {}
        for r in rs:
            counts[str(r["blamed"])] = counts.get(str(r["blamed"]), 0) + 1
        print(f"  {label}: {counts}")
    _history(service)
    return 0


def only_one(fit, store: Path, kind: str, n: int, map_steps: float = 0.5) -> int:
    """``n`` runs with one slowdown, each against a no-change run trained just before it."""
    from advisor.service import RunService

    service = RunService(store)
    fit("warm-up")
    same, slow = [], []
    for _ in range(n):
        same.append(fit("same"))
        if kind == "retrace":
            slow.append(fit("retrace", retrace=True))
        else:
            step_ms = _median_step_ms(service, same[-1:])
            slow.append(fit("slow-map", map_sleep=map_steps * step_ms / 1000))
    no_change = [judge(service, same[i], same[i - 1]) for i in range(1, n)]
    injected = [judge(service, slow[i], same[i]) for i in range(n)]
    print(
        "| pairs | n | noise-aware gate fails | fixed 5% gate fails | named | not judgeable "
        "| contention | median samples/s change |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(rate_line("no change (neighbours)", no_change))
    print(rate_line(kind, injected))
    for label, results in (("no change", no_change), (kind, injected)):
        print(f"  {label}: blamed first {[r['blamed'] for r in results]}")
        print(f"  {label}: verdicts {[r['verdict'] for r in results]}")
    return 0


def _median_step_ms(service, runs: list[str]) -> float:
    from advisor.analysis.comparison_samples import samples_of
    from advisor.stats import median

    values = [median(samples_of(service.read(r)).wall_ms_per_step) for r in runs]
    return float(median(values) or 0.0)


def _history(service) -> None:
    from advisor.render.history import change_line
    from advisor.service.comparisons import history

    found = history(service, name="series", group_by="commit")
    print(f"\nhistory of 'series': {len(found.points)} points, one per commit")
    for change in found.changes:
        print("  " + change_line(change))


if __name__ == "__main__":
    raise SystemExit(main())
