"""The portability table follows the user's own helper functions a class's methods call: a
blocker in one is reported against the class at the helper's line, with the path that reaches it;
library functions are not followed; the rewrite edits the helper, and the ported helper trains
on JAX where the original fails."""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

from keras.src.backend.tensorflow import nn as tf_backend_nn  # noqa: E402

from advisor.errors import UsageError  # noqa: E402
from advisor.experiments.backends import portable  # noqa: E402
from advisor.probes.portability import scan_live, scan_source  # noqa: E402


def _line(target, text: str) -> int:
    """The file line of the first line of ``target``'s source that holds ``text``."""
    lines, start = inspect.getsourcelines(target)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _by_call(scanned) -> dict:
    return {b.call: b for b in scanned.blockers}


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def relu_of(x):
    return tf.nn.relu(x)


def mixed(x):
    return keras.ops.square(x) + 1.0


class HelperRelu(keras.layers.Layer):
    def call(self, x):
        return relu_of(x) * 2.0


class CleanHelper(keras.layers.Layer):
    def call(self, x):
        return mixed(x)


class LibraryHelpers(keras.layers.Layer):
    def call(self, x):  # keras's own TensorFlow op calls tf.nn.relu: a library, not followed
        return tf_backend_nn.relu(x) + keras.ops.relu(x) + np.mean(x)


def test_a_blocker_in_a_helper_is_reported_against_the_class_at_the_helpers_line() -> None:
    scanned = scan_live(HelperRelu)
    (relu,) = scanned.blockers
    assert relu.owner == "HelperRelu" and relu.method == "call" and relu.call == "tf.nn.relu"
    assert relu.line == _line(relu_of, "tf.nn.relu")
    assert relu.blocks == ("jax", "torch") and relu.replacement == "keras.ops.relu"
    called_at = _line(HelperRelu, "relu_of(x)")
    assert relu.via == f"in relu_of(), called from HelperRelu.call at line {called_at}"
    assert scanned.status("jax") == "blocked" and scanned.status("tensorflow") == "runs"
    text = portable.blocker_text(relu.to_dict())
    assert f"call: tf.nn.relu (in relu_of(), called from HelperRelu.call at line {called_at})" in (
        text
    )
    assert text.endswith("blocks jax, torch → replace with keras.ops.relu")


def test_a_clean_helper_leaves_the_layer_portable_and_libraries_are_not_followed() -> None:
    clean = scan_live(CleanHelper)
    assert not clean.blockers and [h.name for h in clean.helpers] == ["mixed"]
    assert {clean.status(b) for b in ("tensorflow", "jax", "torch")} == {"runs"}
    library = scan_live(LibraryHelpers)
    assert library.helpers == [] and library.blockers == []


HELPERS = textwrap.dedent(
    """
    import keras
    import tensorflow as tf


    def outer(x):
        return inner(x) + 1.0


    def inner(x):
        return tf.math.sqrt(x)


    def forever(x):
        return forever(tf.square(x))


    def one(x):
        return two(x)


    def two(x):
        return three(x)


    def three(x):
        return four(x)


    def four(x):
        return tf.exp(x)


    class Deep(keras.layers.Layer):
        def call(self, x):
            return self._mix(outer(x)) + forever(x)

        def _mix(self, h):
            return one(h)
    """
)


def test_helpers_are_followed_three_calls_deep_and_recursion_ends() -> None:
    (scanned,) = scan_source(HELPERS, "deep.py", ["Deep"])
    calls = _by_call(scanned)
    assert calls["tf.math.sqrt"].via == (
        "in inner(), called from outer() at line 7, called from Deep.call at line 36"
    )
    assert calls["tf.math.sqrt"].line == 11 and calls["tf.math.sqrt"].method == "call"
    assert calls["tf.square"].line == 15  # forever() calls itself: read once
    assert calls["tf.square"].via == "in forever(), called from Deep.call at line 36"
    assert [h.name for h in scanned.helpers] == ["outer", "inner", "forever", "one", "two", "three"]
    assert "tf.exp" not in calls  # four() is a fourth call deep: not followed
    assert calls["tf.square"].method == "call"


SHARED = textwrap.dedent(
    """
    import keras
    import tensorflow as tf


    def outer(x):
        return inner(x) + 1.0


    def inner(x):
        return tf.math.sqrt(x)


    class Root(keras.layers.Layer):
        def call(self, x):
            return outer(x)


    class Twice(keras.layers.Layer):
        def call(self, x):
            return 2.0 * outer(x)
    """
)


def test_the_rewrite_edits_the_helper_and_computes_what_the_original_did(tmp_path) -> None:
    path = tmp_path / "shared_layers.py"
    path.write_text(SHARED)
    scanned = scan_source(SHARED, str(path), ["Root", "Twice"])
    assert [b.owner for s in scanned for b in s.blockers] == ["Root", "Twice"]  # a row each
    ported = portable.port(portable.Table(scanned, {"shared_layers": path}), tmp_path / "ported")
    assert ported.replaced == 1  # the one call both reach
    assert "-    return tf.math.sqrt(x)\n+    return keras.ops.sqrt(x)\n" in ported.diff
    assert "-import tensorflow as tf" in ported.diff
    rewritten = ported.files["shared_layers"].read_text()
    assert not any(s.blockers for s in scan_source(rewritten, "p.py", ["Root", "Twice"]))
    x = np.random.default_rng(0).random((4, 3), dtype=np.float32)
    original = _load("shared_layers_original", path)
    replaced = _load("shared_layers_ported", ported.files["shared_layers"])
    for name in ("Root", "Twice"):
        before, after = getattr(original, name)()(x), getattr(replaced, name)()(x)
        np.testing.assert_allclose(np.asarray(before), np.asarray(after), rtol=1e-6)


def test_the_live_variant_calls_the_rewritten_helper() -> None:
    (scanned,) = [scan_live(HelperRelu)]
    live = portable.port_live([HelperRelu], [scanned])
    variant = live.swap[id(HelperRelu)]
    helper = variant.call.__globals__["relu_of"]
    assert helper is not relu_of and "tf" not in helper.__code__.co_names
    assert live.replaced == 1
    assert "-    return tf.nn.relu(x)\n+    return keras.ops.relu(x)\n" in live.diff
    x = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(variant()(x)), np.asarray(HelperRelu()(x)), rtol=1e-6)
    assert relu_of.__code__.co_names[0] == "tf"  # the original helper is untouched


def test_a_helper_imported_from_another_module_is_followed_but_not_ported(
    tmp_path, monkeypatch
) -> None:
    (tmp_path / "acts_helpers.py").write_text("import tensorflow as tf\n\n\ndef act(x):\n"
                                              "    return tf.nn.softplus(x)\n")  # fmt: skip
    (tmp_path / "acts_layers.py").write_text(
        "import keras\nimport acts_helpers\nfrom acts_helpers import act\n\n\n"
        "class Both(keras.layers.Layer):\n"
        "    def call(self, x):\n"
        "        return act(x) + acts_helpers.act(x)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    both = __import__("acts_layers").Both
    scanned = scan_live(both)
    (softplus,) = scanned.blockers  # act() twice is read once
    assert softplus.file == str(tmp_path / "acts_helpers.py") and softplus.line == 5
    assert softplus.via == "in act(), called from Both.call at acts_layers.py:8"
    assert softplus.replacement == "keras.ops.softplus" and scanned.status("torch") == "blocked"
    with pytest.raises(UsageError, match=r"a helper in another file than its class is not rew"):
        portable.port_live([both], [scanned])  # no diff rather than a variant that still fails


ON_JAX = textwrap.dedent(
    """
    import importlib.util, os, sys
    os.environ["KERAS_BACKEND"] = "jax"
    import keras
    import numpy as np

    def fit(name, path):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        x = np.random.default_rng(0).random((64, 3), dtype=np.float32)
        try:
            layers = [keras.Input((3,)), keras.layers.Dense(4, "relu"), module.Root()]
            model = keras.Sequential(layers)
            model.compile("adam", "mse", jit_compile=True)
            history = model.fit(x, x[:, :1], batch_size=16, epochs=1, verbose=0)
        except Exception as exc:
            return f"failed: {type(exc).__name__}"
        return f"loss {history.history['loss'][-1]:.4f}"

    print("@original", fit("shared_layers", sys.argv[1]))
    print("@ported", fit("shared_layers", sys.argv[2]))
    """
)


@pytest.mark.slow
def test_the_ported_helper_trains_on_jax_where_the_original_fails(tmp_path) -> None:
    pytest.importorskip("jax")
    path = tmp_path / "shared_layers.py"
    path.write_text(SHARED)
    table = portable.Table(scan_source(SHARED, str(path), ["Root"]), {"shared_layers": path})
    ported = portable.port(table, tmp_path / "ported")
    done = subprocess.run(
        [sys.executable, "-c", ON_JAX, str(path), str(ported.files["shared_layers"])],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    found = dict(ln.split(" ", 1) for ln in done.stdout.splitlines() if ln.startswith("@"))
    assert "@ported" in found, done.stderr[-3000:]
    assert found["@original"].startswith("failed:"), found  # tf.math.sqrt in inner() on JAX
    assert found["@ported"].startswith("loss "), found
    assert np.isfinite(float(found["@ported"].split()[1]))
