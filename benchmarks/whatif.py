"""Proof of the measured what-if: its gain for each fix beside the gain of applying that fix.

    python benchmarks/whatif.py [--scenario input_bound|guide|all] [--epochs 8] [--min-seconds 4]
                                [--budget 30] [--repeats 3] [--whatif-runs 3] [--one-iterator]

For each scenario the base configuration trains with
``AdvisorCallback(baseline="end", whatif="auto", whatif_max_seconds=BUDGET)``; the what-if
measures every candidate the run points to. Then each fix it measured is *applied* — the same
job with the fix written into its code — and trained in separate full runs: ``--repeats`` times
in turn, one base run before each turn and one after the last, so that base runs bracket the
applied ones (their spread is the machine's drift). The what-if's run is repeated too
(``--whatif-runs``, one at the start of each turn), and a fix's what-if gain is the median of its
runs' gains: a fix that leaves a ~2 ms step runs at rates that spread 1.3× to 2.6× between
consecutive fits of one process on this machine (input_bound's cache; benchmarks/fast_step_spread.py
and RESULTS.md), so one what-if run beside pooled applied runs compared one draw with an
average. Each applied run trains ``--epochs`` epochs and on until its epochs after the first
have lasted ``--min-seconds`` (a fast configuration's eight epochs are a few hundred
milliseconds). A configuration's applied speed pools its runs'
epochs after the first (the first compiles and fills caches): samples ÷ seconds over all of
them. The applied gain is the fix's pooled speed ÷ the base's.

Applied runs train as the scenarios' own code does: ``fit`` on a finite dataset, which Keras
iterates anew at every epoch, so each epoch pays its iterator's restart, as it does in the
what-if (which charges the restart it measures). On TF 2.21 a rebuilt iterator with Python work
in flight also stalls about a second at a third to half of the epoch starts, at random (rule
M154; a cached pipeline hardly stalls). A few seconds of what-if segments cannot sample that
lottery, so a measured gain is the gain without it: the target compares it with the applied
gain over the epochs that did not stall (an epoch a third and 0.25 s slower than the
configuration's fastest), and the table shows how many stalled and the gain with them kept.
``--one-iterator`` trains the applied runs with ``.repeat()`` and ``steps_per_epoch`` of one
pass instead: no stall and no restart at each epoch (a cache on a 2 ms step then gains ~12%
more applied than in the what-if, which pays the restarts the scenario's code pays).

Scenarios: ``input_bound`` is examples/input_bound/naive.py (a sequential Python decode, no
prefetch, no cache); ``guide`` is the tf.data guide's pipeline from benchmarks/tfdata_guide.py
in its first, fully sequential form (two generator "files" read by a sequential interleave, a
sequential 30 ms map, a 10 ms step), whose fixes are the guide's stages.

Targets: every fix that matters (either gain ≥ 1.2×) within ±15% of its applied gain, and the
fixes ranked in the same order (ties: fixes whose applied gains are within 15% of each other may
swap). Also printed: the what-if's own cost as a share of the fit. Exit 1 when a target fails.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

MATTERS = 1.2  # a fix "matters" when its gain is at least this
TOLERANCE = 0.15  # the what-if's gain within ±15 % of the applied gain
STALL_FACTOR = 4 / 3  # an epoch this much slower per step than the fastest one stalled at its start
STALL_SECONDS = 0.25  # … and by at least this long


class EpochTimer:
    """Training seconds and samples per epoch (validation excluded; there is none here)."""

    def __init__(self) -> None:
        import keras

        outer = self

        class _Timer(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
                outer.t0, outer.steps = time.perf_counter(), 0

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                outer.steps += 1

            def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
                outer.epochs.append((time.perf_counter() - outer.t0, outer.steps))

        self.epochs: list[tuple[float, int]] = []
        self.t0, self.steps = 0.0, 0
        self.callback = _Timer()

    def steady(self, batch: int) -> float:
        """samples/s over the epochs after the first."""
        return pooled([self.epochs[1:] or self.epochs], batch)


def pooled(runs: list[list[tuple[float, int]]], batch: int) -> float:
    """samples/s over every (seconds, steps) epoch of ``runs``."""
    epochs = [e for run in runs for e in run]
    return sum(steps for _, steps in epochs) * batch / sum(s for s, _ in epochs)


def is_stalled(seconds: float, steps: int, fastest: float) -> bool:
    """An epoch that took at least a third and 0.25 s longer than at ``fastest`` s a step: it
    stalled at its start."""
    return steps > 0 and seconds >= max(STALL_FACTOR * fastest * steps, fastest * steps + STALL_SECONDS)


def without_stalls(runs: list[list[tuple[float, int]]]) -> list[list[tuple[float, int]]]:
    """``runs`` without their stalled epochs (judged against the fastest epoch of all of them)."""
    fastest = min((s / n for run in runs for s, n in run if n), default=0.0)
    return [[(s, n) for s, n in run if not is_stalled(s, n, fastest)] for run in runs]


# ---------------------------------------------------------------------------------------------
# scenarios: (build model, base dataset, {fix name: (dataset, compile changes)}, batch)


def input_bound() -> dict[str, Any]:
    import tensorflow as tf

    from examples.input_bound import naive

    def dataset(parallel: bool = False, prefetch: bool = False, cache: bool = False, options: bool = False) -> Any:
        x, y = naive.synthetic_arrays(naive.NUM_SAMPLES)

        def decode(xi: Any, yi: Any) -> tuple[Any, Any]:
            xo, yo = tf.py_function(naive._slow_decode, [xi, yi], [tf.float32, tf.int64])
            xo.set_shape([naive.FEATURES])
            yo.set_shape([])
            return xo, yo

        ds = tf.data.Dataset.from_tensor_slices((x, y))
        calls = tf.data.AUTOTUNE if parallel else None
        if cache:  # the fix as the label says it: decode, cache, then shuffle
            ds = ds.map(decode, num_parallel_calls=calls).cache().shuffle(naive.NUM_SAMPLES, seed=0)
        else:
            ds = ds.shuffle(naive.NUM_SAMPLES, seed=0).map(decode, num_parallel_calls=calls)
        ds = ds.batch(naive.BATCH_SIZE)
        if prefetch:
            ds = ds.prefetch(tf.data.AUTOTUNE)
        if options:
            opts = tf.data.Options()
            opts.autotune.enabled = True
            opts.experimental_optimization.map_parallelization = True
            opts.experimental_optimization.parallel_batch = True
            ds = ds.with_options(opts)
        return ds

    fixes = {
        "parallel_map": lambda: (dataset(parallel=True), {}),
        "prefetch": lambda: (dataset(prefetch=True), {}),
        "cache_map": lambda: (dataset(cache=True), {}),
        "tfdata_options": lambda: (dataset(options=True), {}),
        "jit_compile": lambda: (dataset(), {"jit_compile": True}),
    }
    return {"model": naive.build_model, "base": dataset, "fixes": fixes, "batch": naive.BATCH_SIZE}


def guide() -> dict[str, Any]:
    import tensorflow as tf
    import tfdata_guide as g

    samples = 30

    def dataset(interleave: bool = False, parallel: bool = False, prefetch: bool = False, cache: bool = False,
                cache_source: bool = False) -> Any:
        files = tf.data.Dataset.range(2)
        auto = tf.data.AUTOTUNE
        ds = files.interleave(lambda _: g.artificial_dataset(samples // 2),
                              num_parallel_calls=auto if interleave else None)
        if cache_source:
            ds = ds.cache()
        ds = ds.map(g.mapped_function, num_parallel_calls=auto if parallel else None)
        if cache:
            ds = ds.cache()
        if prefetch:
            ds = ds.prefetch(auto)
        return ds

    fixes: dict[str, Callable[[], tuple[Any, dict[str, Any]]]] = {
        "prefetch": lambda: (dataset(prefetch=True), {}),
        "parallel_interleave": lambda: (dataset(interleave=True), {}),
        "parallel_map": lambda: (dataset(parallel=True), {}),
        "cache_map": lambda: (dataset(cache=True), {}),
        "cache_source": lambda: (dataset(cache_source=True), {}),
    }
    return {"model": g.build_model, "base": dataset, "fixes": fixes, "batch": g.BATCH}


SCENARIOS: dict[str, Callable[[], dict[str, Any]]] = {"input_bound": input_bound, "guide": guide}


# ---------------------------------------------------------------------------------------------
# runs


def epoch_steps(data: Any) -> int:
    """Batches in one pass over ``data``: its cardinality, or counted by reading it once."""
    known = int(data.cardinality())
    return known if known > 0 else sum(1 for _ in data)


def full_run(scenario: dict[str, Any], data: Any, changes: dict[str, Any], epochs: int,
             callbacks: list[Any] | None = None, steps: int | None = None,
             min_seconds: float = 0.0) -> list[tuple[float, int]]:
    """Train a fresh model for ``epochs`` epochs, and on until its epochs after the first have
    lasted ``min_seconds``: its (seconds, steps) per epoch. With ``steps``, the data repeats and
    each epoch is ``steps`` batches of one iterator. (A fast configuration's 8 epochs are a few
    hundred milliseconds — a cache on the input-bound example spread 29–54× between three such
    runs — so applied runs measure for a time as well.)"""
    import keras

    model = scenario["model"]()
    if changes:
        model.compile(optimizer=model.optimizer, loss=model.loss, metrics=None, **changes)
    timer = EpochTimer()
    kwargs: dict[str, Any] = {}
    if steps:
        data, kwargs = data.repeat(), {"steps_per_epoch": steps}

    class _AtLeast(keras.callbacks.Callback):
        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            later = sum(s for s, _ in timer.epochs[1:])
            self.model.stop_training = epoch + 1 >= epochs and later >= min_seconds

    extra = [] if callbacks else [_AtLeast()]  # the what-if's run trains exactly ``epochs``
    model.fit(data, epochs=epochs if callbacks else 10**6, verbose=0, shuffle=False,
              callbacks=[timer.callback, *(callbacks or []), *extra], **kwargs)
    return timer.epochs


def whatif_run(scenario: dict[str, Any], epochs: int, budget: float, runs_dir: str) -> dict[str, Any]:
    import advisor
    from advisor.service import Store

    cb = advisor.AdvisorCallback(runs_dir=runs_dir, baseline="end", whatif="auto", whatif_max_seconds=budget,
                                 log_every_s=None, telemetry=False)
    run = full_run(scenario, scenario["base"](), {}, epochs, [cb])
    facts = Store(runs_dir).analyse(str(cb.run_path)).facts
    return {"steady": pooled([run[1:]], scenario["batch"]), "train_seconds": sum(s for s, _ in run),
            "facts": facts}


def ranking_agrees(rows: list[dict[str, Any]]) -> bool:
    """Fixes that matter, ordered by the what-if, are in the applied order (near-ties may swap)."""
    mattering = [r for r in rows if max(r["whatif"], r["applied"]) >= MATTERS]
    by_whatif = sorted(mattering, key=lambda r: -r["whatif"])
    for first, second in itertools.pairwise(by_whatif):
        if second["applied"] > first["applied"] * (1 + TOLERANCE):
            return False
    return True


def scenario_table(name: str, epochs: int, budget: float, runs_dir: str, repeats: int,
                   finite: bool = False, min_seconds: float = 4.0,
                   whatif_runs: int = 3) -> tuple[list[str], bool]:
    scenario = SCENARIOS[name]()
    batch = scenario["batch"]
    steps = None if finite else epoch_steps(scenario["base"]())
    whatifs: list[dict[str, Any]] = []

    def measure_whatif() -> None:
        print(f"[{name}] base run with the what-if (budget {budget:g} s)…", file=sys.stderr)
        whatifs.append(whatif_run(scenario, epochs, budget, runs_dir))
        found = whatifs[-1]["facts"]
        print(f"[{name}] what-if: " + ", ".join(f"{n} {found[f'whatif.{n}.speedup']:.2f}×" for n in scenario["fixes"]
                                                 if found.get(f"whatif.{n}.status") == "measured"), file=sys.stderr)

    measure_whatif()
    base = whatifs[0]
    facts = base["facts"]
    measured = [n for n in scenario["fixes"] if facts.get(f"whatif.{n}.status") == "measured"]
    runs: dict[str, list[list[tuple[float, int]]]] = {fix: [] for fix in ["base", *measured]}

    def train(fix: str) -> None:
        data, changes = (scenario["base"](), {}) if fix == "base" else scenario["fixes"][fix]()
        later = full_run(scenario, data, changes, epochs, steps=steps, min_seconds=min_seconds)[1:]
        runs[fix].append(later)
        print(f"[{name}] {fix}: {pooled([later], batch):.1f} samples/s", file=sys.stderr)

    for turn in range(repeats):  # a base run before each turn of the fixes, and one after the last
        if 0 < turn < whatif_runs:  # the what-if's runs spread over the same time as the applied ones
            measure_whatif()
        train("base")
        for fix in measured:
            train(fix)
    train("base")
    # With the iterator rebuilt every epoch, the TF 2.21 epoch-start stalls (a lottery the
    # what-if does not sample) are left out of the gain the target judges, and shown beside it.
    clean = {fix: without_stalls(done) if finite else done for fix, done in runs.items()}
    speed = {fix: pooled(done, batch) for fix, done in clean.items()}
    with_stalls = {fix: pooled(done, batch) for fix, done in runs.items()}

    def stalls(fix: str) -> str:
        if not finite:  # one iterator: no epoch start to stall
            return "—"
        kept = sum(len(run) for run in clean[fix])
        total = sum(len(run) for run in runs[fix])
        return f"{total - kept}/{total}"

    rows = []
    for fix in measured:
        each = [pooled([run], batch) / speed["base"] for run in clean[fix] if run]
        gains = [w["facts"][f"whatif.{fix}.speedup"] for w in whatifs
                 if w["facts"].get(f"whatif.{fix}.status") == "measured"]
        bands = [w["facts"][f"whatif.{fix}.band"] for w in whatifs
                 if w["facts"].get(f"whatif.{fix}.band") is not None]
        seconds = [w["facts"].get(f"whatif.{fix}.seconds") or 0.0 for w in whatifs]
        rows.append({"fix": fix, "whatif": statistics.median(gains), "whatif_each": gains,
                     "band": statistics.median(bands) if bands else None,
                     "seconds": statistics.median(seconds), "applied": speed[fix] / speed["base"],
                     "spread": (min(each), max(each)), "stalls": stalls(fix),
                     "stalled_gain": with_stalls[fix] / with_stalls["base"]})
    base_runs = [pooled([run], batch) for run in runs["base"]]
    lines = [(f"### {name}: base {base['steady']:.1f} samples/s in the what-if's run, {speed['base']:.1f} pooled over "
              f"the {len(base_runs)} base runs that bracket the applied ones ({min(base_runs):.1f}–{max(base_runs):.1f}, "
              f"stalled epochs {stalls('base')}); what-if {facts.get('whatif.seconds', 0):.1f} s of a "
              f"{facts.get('whatif.budget_seconds', 0):g} s budget = "
              f"{facts.get('whatif.seconds', 0) / base['train_seconds']:.0%} of the {base['train_seconds']:.1f} s fit "
              f"({epochs} epochs), {facts.get('whatif.rounds', 0)} rounds; what-if runs: {len(whatifs)} (the gain is "
              f"their median, the band the median of theirs); applied runs: {repeats} per fix, "
              + ("the iterator rebuilt every epoch (as the scenario's code trains)" if finite
                 else f"one iterator ({steps} steps an epoch)")),
             "", ("| fix | what-if gain (band) | each what-if run | measured in | applied gain (each run) "
                  "| stalled epochs | applied with the stalls | what-if ÷ applied | matters | within ±15% |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|:-:|:-:|"]
    ok = True
    for r in sorted(rows, key=lambda r: -r["applied"]):
        matters = max(r["whatif"], r["applied"]) >= MATTERS
        within = abs(r["whatif"] / r["applied"] - 1) <= TOLERANCE
        ok &= within or not matters
        band = f" (±{r['band']:.0%})" if r["band"] is not None else ""
        low, high = r["spread"]
        each_whatif = ", ".join(f"{g:.2f}" for g in r["whatif_each"])
        lines.append(f"| {r['fix']} | {r['whatif']:.2f}×{band} | {each_whatif} | {r['seconds'] or 0:.1f} s | "
                     f"{r['applied']:.2f}× "
                     f"({low:.2f}–{high:.2f}) | {r['stalls']} | "
                     + (f"{r['stalled_gain']:.2f}× | " if finite else "— | ")
                     + f"{r['whatif'] / r['applied']:.2f} | {'yes' if matters else 'no'} | "
                     f"{('yes' if within else 'NO') if matters else '—'} |")
    ranked = ranking_agrees(rows)
    ok &= ranked

    def order(key: str) -> str:
        return " > ".join(r["fix"] for r in sorted(rows, key=lambda r: -r[key]))

    lines += ["", f"ranking by the what-if: {order('whatif')}", f"ranking by applying: {order('applied')}",
              f"ranking of the fixes that matter: {'identical' if ranked else 'DIFFERENT'}"]
    others = [f"{n} ({facts.get(f'whatif.{n}.status')}: {facts.get(f'whatif.{n}.reason')})"
              for n in scenario["fixes"] if n not in measured and facts.get(f"whatif.{n}.status")]
    if others:
        lines.append("not measured: " + "; ".join(others))
    return lines, ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--min-seconds", type=float, default=4.0,
                        help="applied runs train on until their epochs after the first last this long")
    parser.add_argument("--budget", type=float, default=30.0, help="the what-if's budget, seconds")
    parser.add_argument("--repeats", type=int, default=3, help="applied runs per fix (and base runs, plus one)")
    parser.add_argument("--whatif-runs", type=int, default=3,
                        help="base runs with the what-if, one at the start of each turn (its gain: their median)")
    parser.add_argument("--one-iterator", action="store_true",
                        help="applied runs build their input iterator once (.repeat() and steps_per_epoch)")
    args = parser.parse_args(argv)
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    ok = True
    with tempfile.TemporaryDirectory() as runs_dir:
        for name in names:
            lines, passed = scenario_table(name, args.epochs, args.budget, runs_dir, args.repeats,
                                           not args.one_iterator, args.min_seconds, args.whatif_runs)
            ok &= passed
            print("\n".join(lines) + "\n", flush=True)
    print("targets:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
