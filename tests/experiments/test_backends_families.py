"""The backend what-if on real model families as users write them
(``examples/backend_families.py``): a ResNet with a custom residual block, a Transformer encoder
with a custom attention layer in ``keras.ops``, a subclassed model with its own TensorFlow
``train_step`` and one made backend-neutral by overriding ``compute_loss``, a model with a
custom loss and metric.

The families' script runs as ``__main__``, so their classes travel to the candidates by value, as
a user's script's would. One process measures every family, each on the run's own backend and a
subset of the others (the whole set, torch.compile included, is ``benchmarks/backends.py``'s):
every candidate that can run is measured (samples/s and a band), one that cannot has its whole
reason. Minutes of fresh processes: ``long``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.long]

pytest.importorskip("tensorflow")
pytest.importorskip("cloudpickle")

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "backend_families.py"
CANDIDATES = {
    "resnet": "tensorflow,jax+jit",
    "transformer": "tensorflow,torch",
    "tape_step": "tensorflow,jax+jit,torch",
    "loss_step": "tensorflow,jax+jit,torch",
    "loss_metric": "tensorflow,torch",
}


@pytest.fixture(scope="module")
def families(tmp_path_factory) -> dict[str, dict]:
    """Every family's what-if, from one run of the script (one TensorFlow start for all)."""
    specs = [f"{family}={names}" for family, names in CANDIDATES.items()]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *specs, "--seconds", "1.0", "--rounds", "4"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path_factory.mktemp("families"),
    )
    found = {}
    for line in done.stdout.splitlines():
        if line.startswith("@result "):
            result = json.loads(line[len("@result ") :])
            found[result["family"]] = result
    assert set(found) == set(CANDIDATES), done.stderr[-3000:]
    return found


def _rows(result: dict) -> dict[str, dict]:
    return {row["candidate"]: row for row in result["candidates"]}


def _measured(row: dict) -> None:
    """A measured candidate: a rate, a band, and a speedup over the own with its band."""
    assert row["status"] == "measured", row
    assert row["samples_per_s"] > 0 and row["band"] is not None, row
    assert len(row["rounds"]) >= 2, row


def _whole(reason: str | None) -> str:
    assert reason and "\n" not in reason and not reason.endswith("…"), reason
    return reason


def _every_candidate_measured(result: dict) -> None:
    rows = _rows(result)
    assert set(rows) == {result["own"], *CANDIDATES[result["family"]].split(",")}
    for name, row in rows.items():
        if row["status"] == "not_installed":
            _whole(row["reason"])
            continue
        _measured(row)
        if name != result["own"]:
            assert row["speedup"] is not None and row["speedup_band"] is not None, row
    assert result["unchanged"]  # the user's model is not trained by the what-if
    assert result["note"] is None  # the model travelled whole: nothing measured in process


def test_a_resnet_with_a_custom_residual_block_is_measured(families) -> None:
    _every_candidate_measured(families["resnet"])


def test_a_transformer_with_a_keras_ops_attention_layer_is_measured(families) -> None:
    _every_candidate_measured(families["transformer"])


def test_a_backend_neutral_compute_loss_model_is_measured_on_every_backend(families) -> None:
    _every_candidate_measured(families["loss_step"])


def test_a_custom_loss_and_metric_travel(families) -> None:
    _every_candidate_measured(families["loss_metric"])


def test_a_tensorflow_train_step_is_measured_on_tensorflow_and_says_why_not_elsewhere(
    families,
) -> None:
    result = families["tape_step"]
    rows = _rows(result)
    _measured(rows["tensorflow"])
    assert result["unchanged"] and result["note"] is None
    jax, torch = rows["jax+jit"], rows["torch"]
    for row in (jax, torch):
        assert row["status"] in ("failed", "not_installed"), row
        _whole(row["reason"])
    if jax["status"] == "failed":  # Keras's JAX trainer calls train_step(state, data)
        assert jax["reason"].startswith("cannot train on jax (jit_compile=True): TypeError")
        assert "TapeModel.train_step()" in jax["reason"], jax["reason"]
    if torch["status"] == "failed":  # tf.GradientTape given torch tensors: the user's line
        assert torch["reason"].startswith("cannot train on torch"), torch["reason"]
        assert "backend_families.py" in torch["reason"] and "train_step" in torch["reason"]
