"""``advisor demo``: train the input-bound example with the callback, then show the diagnosis."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import click

from advisor.cli.common import runs_dir_option, store_of
from advisor.errors import UsageError

BACKENDS = ("tensorflow", "jax", "torch", "tf_keras")


def backend_environment(backend: str) -> dict[str, str]:
    """Environment that selects ``backend``; Keras reads it once, when it is first imported."""
    if backend == "tf_keras":
        return {"TF_USE_LEGACY_KERAS": "1", "KERAS_BACKEND": "tensorflow"}
    return {"KERAS_BACKEND": backend}


def can_switch_here(backend: str) -> bool:
    """Whether this process can still train on ``backend`` (Keras and TensorFlow fix theirs at
    import)."""
    if backend == "tf_keras":
        return "tensorflow" not in sys.modules or os.environ.get("TF_USE_LEGACY_KERAS") == "1"
    keras = sys.modules.get("keras")
    if keras is None:
        return True
    try:
        return str(keras.backend.backend()) == backend
    except Exception:
        return False


def rerun_in_child(ctx: click.Context, env: dict[str, str], timeout_s: float = 1800.0) -> int:
    """Run this same demo in a fresh Python process with ``env``: Keras is already loaded here."""
    import subprocess

    args = [sys.executable, "-m", "advisor.cli.main"]
    runs_dir = (ctx.find_root().obj or {}).get("runs_dir")
    if runs_dir:
        args += ["--runs-dir", str(runs_dir)]
    args += ["demo", *_own_args(ctx)]
    child_env = {**os.environ, **env}
    if env.get("TF_USE_LEGACY_KERAS") != "1":
        child_env.pop("TF_USE_LEGACY_KERAS", None)
    try:
        return subprocess.run(args, env=child_env, timeout=timeout_s, check=False).returncode
    except subprocess.TimeoutExpired:
        raise UsageError(f"the demo did not finish within {timeout_s:.0f} s") from None


def _own_args(ctx: click.Context) -> list[str]:
    p = ctx.params
    args = ["--epochs", str(p["epochs"]), "--instance-type", str(p["instance_type"])]
    if p.get("backend"):
        args += ["--backend", str(p["backend"])]
    if p.get("no_baseline"):
        args.append("--no-baseline")
    if p.get("no_whatif"):
        args.append("--no-whatif")
    return args


def examples_dir() -> Path:
    """``examples/`` of the source tree, or the copy shipped inside the wheel."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[2] / "examples", here.parents[1] / "_examples"):
        if (candidate / "input_bound" / "naive.py").is_file():
            return candidate
    raise UsageError("the examples are not installed (expected examples/input_bound/naive.py)")


def load_example(relative: str) -> ModuleType:
    path = examples_dir() / relative
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"advisor_example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@click.command("demo")
@click.option("--epochs", type=int, default=3, show_default=True)
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    default=None,
    help="Keras backend to train with, or tf_keras for legacy Keras 2 "
    "(default: $KERAS_BACKEND or tensorflow).",
)
@click.option("--no-baseline", is_flag=True, help="Skip the cached-input baseline.")
@click.option(
    "--no-whatif", is_flag=True, help="Skip the measured what-if (the fixes tried on the example)."
)
@click.option(
    "--instance-type",
    default="g5.xlarge",
    show_default=True,
    help="Instance to price the run with (embedded price table).",
)
@click.pass_context
def command(
    ctx: click.Context,
    epochs: int,
    backend: str | None,
    no_baseline: bool,
    no_whatif: bool,
    instance_type: str,
) -> None:
    """Train a deliberately input-bound example and diagnose it end to end."""
    if epochs < 1:
        raise UsageError("--epochs must be at least 1")
    if backend is not None:
        env = backend_environment(backend)
        if not can_switch_here(backend):
            ctx.exit(rerun_in_child(ctx, env))
        os.environ.update(env)
        if backend != "tf_keras":
            os.environ.pop("TF_USE_LEGACY_KERAS", None)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from advisor.cli.common import console as make_console

    console = make_console()
    runs_dir = runs_dir_option(ctx)
    example = load_example("input_bound/naive.py")
    flavor = backend or os.environ.get("KERAS_BACKEND") or "tensorflow"
    console.print(
        "[bold]advisor demo[/]: training examples/input_bound/naive.py "
        f"on {flavor} ({epochs} epochs, synthetic data, a slow Python decode per element, "
        "no prefetch)"
    )
    import advisor
    from advisor.collectors.registry import FACTORIES

    options: dict[str, Any] = {}
    if not no_baseline and "baseline" in FACTORIES:
        # The example's input is ~10x its step on every backend: 6 rounds of 5 steps show that
        # (cost ~98%, the band a few %) in about half the time of the default 12 rounds of 20.
        options.update(baseline="end", baseline_rounds=6, baseline_steps=5)
        if not no_whatif:
            # The fixes the findings name, tried on the example: about 3 s of rounds; the allowance
            # leaves a slow or shared host room to prepare them (the cache's fill, each change's
            # first steps).
            options.update(whatif="auto", whatif_max_seconds=20, whatif_seconds=3, whatif_rounds=4)
    callback = advisor.AdvisorCallback(
        runs_dir=runs_dir,
        instance_type=instance_type,
        name="demo",
        window_seconds=2.0,
        log_every_seconds=None,
        **options,
    )
    example.train([callback], epochs=epochs, verbose=0)
    if callback.run_path is None:
        raise UsageError("the demo run was not recorded (see the warnings above)")
    from advisor.cli.show import print_run

    target = callback.run_path
    if callback.uploader is not None and callback.uploader.wait(
        120
    ):  # an s3:// store: read it back
        target = callback.writer.run_id
    store = store_of(ctx)
    analysis = store.analyse(target)
    console.print()
    print_run(console, store, analysis)
    console.print(
        f"\nrun stored in {analysis.run.path}; try [bold]advisor show {analysis.run_id}[/] "
        "or [bold]advisor check[/]"
    )
