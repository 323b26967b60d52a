"""The backend what-if from files, for the command line: a saved ``.keras`` model and an
``.npz`` of arrays, with no Keras imported in this process (the children import their own)."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np

from advisor.errors import UsageError
from advisor.experiments.backends.export import (
    BATCHES_FILE,
    SAMPLE_BATCHES,
    Exported,
    write_batches,
)
from advisor.experiments.backends.result import BACKENDS, Config


def saved_jit_compile(model_path: Path) -> bool | str | None:
    """``jit_compile`` as the ``.keras`` file's compile config holds it ("auto", a bool, or
    None)."""
    try:
        with zipfile.ZipFile(model_path) as archive:
            config = json.loads(archive.read("config.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise UsageError(f"{model_path}: not a Keras model file (.keras): {exc}") from None
    compiled = config.get("compile_config")
    if not compiled:
        raise UsageError(
            f"{model_path}: the model was saved uncompiled: compile it (optimizer, loss) and "
            "save again"
        )
    return (compiled.get("config") or {}).get("jit_compile", "auto")  # type: ignore[no-any-return]


def own_from_file(model_path: Path, own: str | None) -> Config:
    """The configuration the run used: ``own`` when given, else ``$KERAS_BACKEND`` (default
    tensorflow) and the file's ``jit_compile`` ("auto": Keras's choice on a CPU-only machine —
    XLA off on TensorFlow, jit on JAX, eager on torch)."""
    if own:
        return Config.parse(own)
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if backend not in BACKENDS:
        raise UsageError(
            f"KERAS_BACKEND={backend!r} is not one of {', '.join(BACKENDS)}; pass --own"
        )
    jit = saved_jit_compile(model_path)
    return Config(backend, backend == "jax" if jit in ("auto", None) else bool(jit))


def exported_from_files(
    model_path: Path,
    data_path: Path,
    batch_size: int,
    workdir: Path,
    modules: list[str] | None = None,
    count: int = SAMPLE_BATCHES,
) -> Exported:
    """Up to ``count`` batches of the ``.npz``'s arrays ``x`` and ``y`` (or its first two)."""
    if model_path.suffix != ".keras" or not model_path.is_file():
        raise UsageError(
            f"{model_path}: expected a saved Keras model file (model.save('model.keras'))"
        )
    saved_jit_compile(model_path)
    try:
        with np.load(data_path, allow_pickle=False) as found:
            names = list(found.files)
            x_name = "x" if "x" in names else names[0] if names else None
            y_name = "y" if "y" in names else next((n for n in names if n != x_name), None)
            if x_name is None:
                raise UsageError(f"{data_path}: no arrays in it; save x (and y) with numpy.savez")
            rows = batch_size * count
            x = found[x_name][:rows]
            y = found[y_name][:rows] if y_name is not None else None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{data_path}: not a readable .npz of arrays: {exc}") from None
    usable = len(x) - len(x) % batch_size
    if usable < batch_size:
        raise UsageError(f"{data_path}: {len(x)} samples are fewer than one batch of {batch_size}")
    batches_path = workdir / BATCHES_FILE
    write_batches(batches_path, x[:usable], None if y is None else y[:usable], batch_size)
    return Exported(
        model_path.resolve(), batches_path, batch_size, usable // batch_size, list(modules or [])
    )
