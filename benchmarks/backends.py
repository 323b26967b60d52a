"""Does the backend what-if rank backends × compile modes as whole fits do? Side by side.

    python benchmarks/backends.py [--families mlp,cnn,rnn|real|resnet,...]
                                  [--candidates all|jax+jit,torch,...]
                                  [--seconds 3] [--fit-seconds 3] [--passes 5] [--torch-threads 1]
                                  [--tf-threads 1]

For each model family (an MLP, a small CNN, a small LSTM; ``real``: the families of
``examples/backend_families.py``, with the user's own classes — a ResNet with a custom residual
block, a Transformer encoder with a custom attention layer, a subclassed model with a TensorFlow
``train_step`` and one with ``compute_loss`` overridden, a custom loss and metric, a notebook's
custom layer; here imported, so their classes travel to the candidates by reference) the script
runs the backend what-if
(``advisor.experiments.backends.measure_backends``: cached batches, each candidate in a fresh
process, rounds interleaved with the own's) and then, for every measured candidate, whole
``model.fit`` calls on the same arrays in a fresh process with ``KERAS_BACKEND`` and
``jit_compile`` set. Those processes too start one after another and wait warm (a warm-up fit,
then fits sized to about ``--fit-seconds / 3``); then ``--passes`` passes each time one whole fit
of the own and one of every candidate in turn, so that each candidate's fit is paired with an
own's fit of the same minutes. Per candidate the table gives both rates (the what-if's samples/s
and the whole fits' median) and their ratio (``agree``: "met" within ±15%, the target on a quiet
host; "in noise" within 15% plus the two rates' bands), then both speedups over the run's own
(TensorFlow,
``jit_compile`` as Keras resolves it; each the median of paired ratios, with its band) and their
difference; the issue's target is the same ranking and gains within ±15% where outside noise.
Whole fits include Keras's array input (shuffling, batching; the what-if leaves input out), so a
gap can be the input's share; their arrays are repeated (``--fit-repeat``, by default as often as
it takes) so that an epoch holds 256 steps, as the what-if's segments do: on 64-step epochs
TensorFlow's cost per epoch (~30 ms on the development VM, its iterator) is ~20% of an MLP's epoch
and the what-if, which counts it once per 256 steps, does not see it. Every process runs its
framework's ops on one thread (``--torch-threads``, ``--tf-threads``): on the 2-vCPU development VM
TensorFlow's two intra-op threads made some fits run at half speed, fit by fit, in the what-if and
the whole fits alike, and a median of a few such fits decided nothing. The ranking line compares
the two orders pair by pair: a pair ordered the other way round is a conflict when either
measurement separates the two beyond their bands, and a tie (noise in both) otherwise. Timings vary
by machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from child_lines import PREFIX, answer

ROWS, BATCH = 4096, 64
EPOCH_STEPS = 256  # the what-if's segments: whole fits' epochs as long


ROOT = Path(__file__).resolve().parents[1]
REAL = "resnet,transformer,tape_step,loss_step,loss_metric,notebook"  # examples/backend_families


def families_module():  # type: ignore[no-untyped-def]
    """``examples/backend_families.py``: the model families with the user's own classes."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import examples.backend_families as families

    return families


def custom_objects() -> dict:
    """The families' own classes, for ``load_model`` in a whole fit's process."""
    families = families_module()
    return {
        name: value
        for name, value in vars(families).items()
        if isinstance(value, type) and value.__module__ == families.__name__
    }


def build(family: str):  # type: ignore[no-untyped-def]
    import keras
    import numpy as np

    if family in REAL.split(","):
        return families_module().FAMILIES[family]()
    rng = np.random.default_rng(0)
    if family == "mlp":
        x = rng.random((ROWS, 64), dtype=np.float32)
        layers = [
            keras.Input((64,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
        ]
    elif family == "cnn":
        x = rng.random((ROWS, 16, 16, 3), dtype=np.float32)
        layers = [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(16, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
        ]
    elif family == "rnn":
        x = rng.random((ROWS, 20, 16), dtype=np.float32)
        layers = [keras.Input((20, 16)), keras.layers.LSTM(32)]
    else:
        raise SystemExit(f"unknown family {family!r}: mlp, cnn, rnn or one of {REAL}")
    model = keras.Sequential(layers + [keras.layers.Dense(10)])
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model, x, rng.integers(0, 10, ROWS)


def fit_child(args: argparse.Namespace) -> None:
    """In a fresh process: warm, then one whole fit of the saved model on the arrays for every
    ``fit`` line on stdin, its samples/s on stdout."""
    backend = os.environ["KERAS_BACKEND"]
    if backend == "torch" and args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    import keras
    import numpy as np

    with keras.saving.custom_object_scope(custom_objects()):  # compiling names them too
        model = keras.saving.load_model(args.model)
        config = dict(
            model.get_compile_config(), jit_compile=args.jit == "True", steps_per_execution=1
        )
        model.compile_from_config(config)
    with np.load(args.data) as found:
        x, y = found["x"], found["y"]
    repeat = args.fit_repeat or -(-EPOCH_STEPS * BATCH // len(x))  # epochs as long as the what-if's
    x, y = np.concatenate([x] * repeat), np.concatenate([y] * repeat)
    model.fit(x, y, batch_size=BATCH, epochs=1, steps_per_epoch=5, verbose=0)  # compiling
    # Whole epochs of the repeated arrays (256 steps, as the what-if's), as many as fill a timed
    # fit. Sized from a warm whole epoch: sized from 10 steps, which carry a fit call's own cost
    # (TensorFlow's ~30-150 ms here), the fits were ~100 steps long and TensorFlow's own ran at
    # 0.6x its rate in longer ones.
    steps = len(x) // BATCH
    started = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, steps_per_epoch=steps, verbose=0)
    epoch = time.perf_counter() - started
    part = args.fit_seconds / 3  # one timed fit
    # A slow candidate (JAX without jit: ~0.4 s a step of the LSTM): shorter epochs.
    if epoch > part:
        steps = max(10, int(steps * part / epoch))
        epoch *= steps / (len(x) // BATCH)
    epochs = max(1, round(part / max(epoch, 1e-6)))
    # One fit of that size left out: the first ran at half speed more often than not
    # (TensorFlow's CNN: 12 k then 24 k samples/s), and an outlier in every candidate's first pass
    # widened the bands.
    model.fit(x, y, batch_size=BATCH, epochs=epochs, steps_per_epoch=steps, verbose=0)
    print(PREFIX + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip() != "fit":
            break
        started = time.perf_counter()
        model.fit(x, y, batch_size=BATCH, epochs=epochs, steps_per_epoch=steps, verbose=0)
        print(
            PREFIX
            + json.dumps(
                {"samples_per_s": epochs * steps * BATCH / (time.perf_counter() - started)}
            ),
            flush=True,
        )
    sys.stdout.flush()
    os._exit(0)


def whole_fits(
    model_path: Path,
    data_path: Path,
    configs: dict[str, tuple[str, bool]],
    own: str,
    args: argparse.Namespace,
) -> dict[str, list[float]]:
    """Samples/s of every config's whole fits, ``--passes`` each, interleaved (the own first)."""
    procs: dict[str, subprocess.Popen[str]] = {}
    rates: dict[str, list[float]] = {}
    order = [own] + [name for name in configs if name != own]
    try:
        for name in order:
            backend, jit = configs[name]
            command = [
                sys.executable,
                __file__,
                "--fit-child",
                "--model",
                str(model_path),
                "--data",
                str(data_path),
                "--jit",
                str(jit),
                "--fit-seconds",
                str(args.fit_seconds),
                "--torch-threads",
                str(args.torch_threads),
                "--fit-repeat",
                str(args.fit_repeat),
            ]
            env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
            errors = model_path.with_name(f"{name}.stderr")
            with open(errors, "w") as err:
                proc = subprocess.Popen(
                    command,
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                )
            if answer(proc) is not None:
                procs[name], rates[name] = proc, []
            else:
                proc.kill()
                lines = [ln for ln in errors.read_text(errors="replace").splitlines() if ln]
                print(f"whole fits of {name}: no result ({lines[-1] if lines else 'no error'})")
        for _ in range(args.passes):
            for name, proc in procs.items():
                assert proc.stdin is not None
                try:
                    proc.stdin.write("fit\n")
                    proc.stdin.flush()
                    found = answer(proc)
                except (
                    OSError
                ):  # the process has gone (its stderr is not kept: rerun it alone to see why)
                    found = None
                rates[name].append(float(found["samples_per_s"]) if found else float("nan"))
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()
    return rates


def paired(rates: list[float], own: list[float]) -> tuple[float | None, float | None]:
    """The median of the paired ratios and its relative band (``advisor.noise``)."""
    from advisor import noise
    from advisor.stats import median

    # A pass whose process had gone: NaN.
    kept = [(a, b) for a, b in zip(rates, own) if a == a and b == b]
    ratios = noise.paired([a for a, _ in kept], [b for _, b in kept], lambda a, b: a / b)
    found = noise.band(ratios)
    return (
        median(ratios) if ratios else None,
        found.half_width / found.value if found is not None and found.value else None,
    )


def ranking_conflicts(
    whatif: dict[str, tuple[float, float]], fits: dict[str, tuple[float, float]]
) -> tuple[list[str], list[str]]:
    """Pairs ranked the other way round by the what-if and by whole fits (each: speedup and its
    relative band): a conflict when either measurement separates the two beyond their bands
    (``a>b``), a tie when neither does (``a~b``: their order is noise in both)."""
    conflicts, ties = [], []
    names = list(whatif)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            (wa, wba), (wb, wbb) = whatif[a], whatif[b]
            (fa, fba), (fb, fbb) = fits[a], fits[b]
            if (wa - wb) * (fa - fb) >= 0:
                continue  # the same order
            apart = (abs(wa / wb - 1) > wba + wbb if wb else True) or (
                abs(fa / fb - 1) > fba + fbb if fb else True
            )
            first, second = (a, b) if wa > wb else (b, a)
            (conflicts if apart else ties).append(f"{first}{'>' if apart else '~'}{second}")
    return conflicts, ties


def agreement(ratio: float | None, whatif_band: float | None, fit_band: float | None) -> str:
    """The what-if's samples/s against the whole fits' on the same backend and mode: "met" within
    ±15%, "in noise" within 15% plus the two bands, "NOT met" beyond."""
    if ratio is None:
        return "-"
    if abs(ratio - 1) <= 0.15:
        return "met"
    return (
        "in noise" if abs(ratio - 1) <= 0.15 + (whatif_band or 0) + (fit_band or 0) else "NOT met"
    )


def report(family: str, result, fits: dict[str, list[float]]) -> None:  # type: ignore[no-untyped-def]
    """Per candidate: both rates, their ratio, both speedups over the own; then the rankings."""
    from advisor import noise
    from advisor.stats import median

    own_fits = fits.get(result.own, [])
    verdicts, agreements = [], []
    for c in sorted(result.candidates.values(), key=lambda c: -(result.speedup(c) or 0.0)):
        speed, band = result.speedup(c), result.speedup_band(c)
        rates = fits.get(c.name, [])
        finite = [r for r in rates if r == r]
        fit = median(finite) if finite else None
        found = noise.band(finite)
        fit_rate_band = found.half_width / found.value if found and found.value else None
        ratio = c.samples_per_s / fit if c.samples_per_s and fit else None
        agree = agreement(ratio, c.relative_band, fit_rate_band)
        if agree != "-":
            agreements.append(agree)
        fit_speed, fit_band = paired(rates, own_fits) if finite and own_fits else (None, None)
        diff = speed / fit_speed - 1 if speed and fit_speed else None
        verdict = "-"
        if diff is not None and c.name != result.own:
            noisy = (band or 0.0) + (fit_band or 0.0)
            verdict = (
                "met"
                if abs(diff) <= 0.15
                else ("in noise" if abs(diff) <= noisy + 0.15 else "NOT met")
            )
            verdicts.append(verdict)
        cells = [
            f"{c.samples_per_s:.0f}" if c.samples_per_s else "-",
            f"{c.relative_band:.0%}" if c.relative_band is not None else "-",
            f"{fit:.0f}" if fit else "-",
            f"{fit_rate_band:.0%}" if fit_rate_band is not None else "-",
            f"{ratio:.2f}" if ratio else "-",
            f"{speed:.2f}" if speed else "-",
            f"{fit_speed:.2f}" if fit_speed else "-",
            f"{diff:+.0%}" if diff is not None else "-",
        ]
        status = (
            c.status
            + (f": {c.reason}" if c.reason else "")
            + (" (own)" if c.name == result.own else "")
        )
        print(
            f"{family:<11} {c.name:<15} {cells[0]:>10} {cells[1]:>5} {cells[2]:>10} {cells[3]:>5} "
            f"{cells[4]:>6} {agree:<8} {cells[5]:>8} {cells[6]:>6} {cells[7]:>6}  {verdict:<8} "
            f"{status}",
            flush=True,
        )
    ranked = [
        c.name
        for c in sorted(result.measured(), key=lambda c: -(result.speedup(c) or 0.0))
        if fits.get(c.name)
    ]
    whatif = {
        n: (
            result.speedup(result.candidates[n]) or 0.0,
            result.speedup_band(result.candidates[n]) or 0.0,
        )
        for n in ranked
    }
    fit_speeds = {n: paired(fits[n], own_fits) for n in ranked}
    by_fit = sorted(ranked, key=lambda n: -(fit_speeds[n][0] or 0.0))
    conflicts, ties = ranking_conflicts(
        whatif, {n: (v or 0.0, b or 0.0) for n, (v, b) in fit_speeds.items()}
    )
    same = "same" if ranked == by_fit else ("same outside noise" if not conflicts else "DIFFERENT")
    detail = f" (within noise: {', '.join(ties)})" if ties and ranked != by_fit else ""
    detail += f" (conflicts: {', '.join(conflicts)})" if conflicts else ""
    print(
        f"{family:<11} ranking: what-if {' > '.join(ranked)}; fits {' > '.join(by_fit)}; "
        f"{same}{detail}; rates: "
        + ", ".join(f"{agreements.count(v)} {v}" for v in ("met", "in noise", "NOT met"))
        + "; gains: "
        + ", ".join(f"{verdicts.count(v)} {v}" for v in ("met", "in noise", "NOT met")),
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--families", default="mlp,cnn,rnn")
    parser.add_argument("--candidates", default="all")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--fit-seconds", type=float, default=3.0)
    parser.add_argument(
        "--passes", type=int, default=5, help="whole fits per candidate, interleaved"
    )
    parser.add_argument(
        "--fit-repeat",
        type=int,
        default=0,
        help="the whole fits' arrays repeated this many times (0: as often as makes epochs of "
        "256 steps, as the what-if's segments; 1: the 64-step epochs of 4,096 rows, where "
        "TensorFlow's ~30 ms per epoch shows)",
    )
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds a what-if candidate's process may take (the what-if's default is 120: "
        "torch.compile of the ResNet family took longer on a busy 2-core VM)",
    )
    parser.add_argument(
        "--tf-threads",
        type=int,
        default=1,
        help="TF_NUM_INTRAOP_THREADS for every process (0: TensorFlow's default); on the 2-vCPU "
        "development VM two threads made TensorFlow's CNN fits bimodal (~21 k or ~12 k samples/s, "
        "fit by fit), one thread ran every fit at ~24 k",
    )
    parser.add_argument("--fit-child", action="store_true")
    parser.add_argument("--model")
    parser.add_argument("--data")
    parser.add_argument("--jit")
    args = parser.parse_args()
    if args.fit_child:
        fit_child(args)
        return 0
    if args.tf_threads:  # inherited by the what-if's processes and the whole fits' alike
        os.environ["TF_NUM_INTRAOP_THREADS"] = str(args.tf_threads)
    import numpy as np

    from advisor.experiments.backends import measure_backends

    names = None if args.candidates == "all" else args.candidates.split(",")
    print(f"load average at the start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(
        f"{'family':<11} {'candidate':<15} {'what-if/s':>10} {'±':>5} {'fit/s':>10} {'±':>5} "
        f"{'ratio':>6} {'agree':<8} {'what-if×':>8} {'fit×':>6} {'diff':>6}  {'gain':<8} status"
    )
    families = args.families.replace("real", REAL).split(",")
    for family in families:
        model, x, y = build(family)
        result = measure_backends(
            model,
            (x, y),
            names,
            batch_size=BATCH,
            seconds=args.seconds,
            torch_threads=args.torch_threads,
            max_seconds=1800,
            timeout=args.timeout,
        )
        with tempfile.TemporaryDirectory() as tmp:
            model_path, data_path = Path(tmp) / "m.keras", Path(tmp) / "d.npz"
            model.save(model_path)
            np.savez(data_path, x=x, y=y)
            configs = {
                c.name: (c.config.backend, c.config.jit)
                for c in result.candidates.values()
                if c.status == "measured"
            }
            fits = (
                whole_fits(model_path, data_path, configs, result.own, args)
                if result.own in configs
                else {}
            )
        report(family, result, fits)
        print(f"load average after {family}: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
