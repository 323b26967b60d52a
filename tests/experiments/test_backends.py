"""The backend what-if on real small models: every installed backend × compile mode measured in
its own process, or a one-line reason (a TF-only custom layer, a timeout), never a crash."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

keras = pytest.importorskip("keras")

from backend_models import arrays, dense_model  # noqa: E402

from advisor.experiments.backends import measure_backends  # noqa: E402
from advisor.experiments.backends.result import FAILED, MEASURED, NOT_INSTALLED  # noqa: E402

QUICK = {
    "batch_size": 64,
    "seconds": 1.0,
    "rounds": 4,
    "warmup": 0.2,
    "torch_threads": 1,
    "sample": 8,
}


def _one_line(reason: str | None) -> bool:
    # one line, whole: not cut (Keras's config dumps are shortened to {…} instead)
    return bool(reason) and "\n" not in reason and not reason.endswith("…")  # type: ignore[union-attr]


def _children() -> list:
    import psutil

    return [
        p
        for p in psutil.Process().children(recursive=True)
        if "backends.child" in " ".join(p.cmdline())
    ]


@pytest.fixture(scope="module")
def dense_everywhere():
    """One what-if of the dense model on every backend × compile mode (one export, one own's
    process for all the tests that read it), and its weights before and after."""
    model = dense_model()
    before = [w.copy() for w in model.get_weights()]
    result = measure_backends(
        model,
        arrays(),
        ["tensorflow+jit", "jax", "jax+jit", "torch", "torch+jit"],
        max_seconds=240,
        **QUICK,
    )
    return result, before, model.get_weights()


@pytest.mark.long  # minutes with a core busy: CI's own step (docs/testing.md)
def test_dense_model_on_every_backend(dense_everywhere) -> None:
    result, before, after = dense_everywhere
    assert (
        result.own == "tensorflow"
    )  # jit_compile "auto" resolves to False on a CPU-only TensorFlow
    assert list(result.candidates) == [
        "tensorflow",
        "tensorflow+jit",
        "jax",
        "jax+jit",
        "torch",
        "torch+jit",
    ]
    for candidate in result.candidates.values():
        if candidate.status == MEASURED:  # interleaved with the own's: four rounds each, paired
            assert len(candidate.rounds) == 4 and candidate.samples_per_s > 0
            assert candidate.band is not None and candidate.compile_seconds is not None
            assert (
                result.speedup(candidate) is not None
                and result.paired_ratios(candidate) is not None
            )
        else:
            assert candidate.status in (FAILED, NOT_INSTALLED) and _one_line(candidate.reason), (
                candidate
            )
    assert result.candidates["tensorflow"].status == MEASURED
    assert result.speedup(result.candidates["tensorflow"]) == 1.0
    # interleaved, by the processes' own clocks: round i of every candidate ends after the own's
    # round i and before the own's round i + 1
    own_ends = result.candidates["tensorflow"].round_ends
    for candidate in result.measured():
        for i, ended in enumerate(candidate.round_ends):
            assert own_ends[i] <= ended and (i + 1 == len(own_ends) or ended < own_ends[i + 1]), (
                candidate.name
            )
    assert all(
        a.tolist() == b.tolist() for a, b in zip(before, after)
    )  # the user's model untouched
    rows = {row["candidate"]: row for row in result.to_dict()["candidates"]}
    assert rows["jax+jit"]["change"] == "KERAS_BACKEND=jax, jit_compile=True"
    assert "tensorflow *" in result.render()
    assert _children() == []  # every candidate's process stopped once its rounds were done


def test_tf_only_custom_layer_gets_a_reason_per_backend() -> None:
    result = measure_backends(
        dense_model(tf_only=True), arrays(), ["jax+jit", "torch"], max_seconds=90, **QUICK
    )
    assert result.candidates["tensorflow"].status == MEASURED
    for name in ("jax+jit", "torch"):
        candidate = result.candidates[name]
        assert candidate.status == FAILED and _one_line(candidate.reason), candidate
        assert name.split("+")[0] in candidate.reason and "TfSquare" in candidate.reason
        assert "\x1b" not in candidate.reason and "Arguments received" not in candidate.reason


def test_a_child_that_overruns_is_killed_with_a_reason() -> None:
    result = measure_backends(
        dense_model(), arrays(), ["jax"], max_seconds=60, timeout=2.0, **QUICK
    )
    for name, candidate in result.candidates.items():
        if name.split("+")[0] == "tensorflow" and candidate.status == MEASURED:
            # the own backend's children timed out too; its modes were then measured in this
            # process, on the live model (docs/whatif.md)
            continue
        assert candidate.status == FAILED and candidate.reason.startswith("timed out after 2 s")
        assert candidate.seconds < 10
    assert _children() == []


@pytest.mark.long  # minutes with a core busy: CI's own step (docs/testing.md)
def test_torch_compile_is_measured_or_explained(dense_everywhere) -> None:
    result, _, _ = dense_everywhere
    candidate = result.candidates[
        "torch+jit"
    ]  # torch.compile on a CPU: its first step takes 20-40 s
    assert candidate.status == MEASURED or _one_line(candidate.reason), candidate


def test_command_measures_a_saved_model(tmp_path) -> None:
    import json

    import numpy as np
    from click.testing import CliRunner

    from advisor.cli.main import cli

    dense_model().save(tmp_path / "m.keras")
    np.savez(tmp_path / "d.npz", x=arrays()[0], y=arrays()[1])
    found = CliRunner().invoke(
        cli,
        [
            "backends",
            str(tmp_path / "m.keras"),
            "--data",
            str(tmp_path / "d.npz"),
            "--candidates",
            "jax+jit",
            "--own",
            "tensorflow",
            "--batch-size",
            "64",
            "--seconds",
            "0.6",
            "--rounds",
            "3",
            "--format",
            "json",
        ],
    )
    assert found.exit_code == 0, found.output
    payload = json.loads(found.output)
    assert payload["own"] == "tensorflow" and payload["batches"] == 32
    assert {c["candidate"]: c["status"] for c in payload["candidates"]} == {
        "tensorflow": MEASURED,
        "jax+jit": MEASURED,
    }


def test_the_callback_records_the_backend_whatif_and_its_facts(tmp_path) -> None:
    import advisor
    from advisor.service import RunService
    from advisor.store.reader import RunReader
    from advisor.store.schema import BackendsRecord

    model = dense_model()
    x, y = arrays(512)
    cb = advisor.AdvisorCallback(
        tmp_path,
        whatif=["backends"],
        whatif_max_seconds=30,
        log_every_seconds=None,
        telemetry=False,
    )
    model.fit(x, y, batch_size=64, epochs=1, verbose=0, callbacks=[cb])
    record = RunReader(cb.run_path).read().of_type(BackendsRecord)[-1]
    assert record.own == "tensorflow" and record.batch_size == 64
    statuses = {c.name: c.status for c in record.candidates}
    assert statuses["tensorflow"] == MEASURED and len(statuses) == 6
    assert all(
        c.reason for c in record.candidates if c.status != MEASURED
    )  # skipped: the 30 s ran out
    facts = RunService(tmp_path).analyse(str(cb.run_path)).facts
    assert facts["backends.own"] == "tensorflow" and facts["backends.measured"] >= 1
