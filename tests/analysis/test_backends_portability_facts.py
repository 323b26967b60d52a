"""The portability table flows as the backend what-if's other results do: the record →
``backends.portability`` → ``advisor show`` (the backend what-if section) and the JSON report.
The table is read from a real custom layer's source; the record is written as the what-if writes
it (no training: the measured rates are the record's)."""

from __future__ import annotations

import inspect
import json

import pytest
from click.testing import CliRunner
from whatif_fixtures import backends_run

from advisor.analysis.registry import registry
from advisor.cli.main import cli
from advisor.experiments.backends.result import (
    FAILED,
    MEASURED,
    BackendCandidate,
    BackendsResult,
    Config,
)
from advisor.store.reader import RunReader

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

from advisor.probes.portability import scan_live  # noqa: E402


class Gate(keras.layers.Layer):
    def call(self, x):
        return x * tf.sigmoid(x)


def _run(tmp_path):
    result = BackendsResult("tensorflow", 64, 32, seconds=30.0)
    result.candidates["tensorflow"] = BackendCandidate(
        Config("tensorflow", False), MEASURED, rounds=[100.0, 101.0, 99.0]
    )
    result.candidates["jax+jit"] = BackendCandidate(
        Config("jax", True), FAILED, "cannot rebuild the model on jax: TracerArrayConversionError"
    )
    result.portability = [scan_live(Gate).to_dict()]
    return backends_run(tmp_path, result, name="portability")


def test_the_table_is_a_fact_shown_by_show_and_in_the_json_report(tmp_path) -> None:
    run = _run(tmp_path)
    facts, errors = registry().derive(RunReader(run).read())
    assert errors == []
    (row,) = facts["backends.portability"]
    (sigmoid,) = row["blockers"]
    lines, start = inspect.getsourcelines(Gate)
    assert sigmoid["line"] == start + 2 and sigmoid["call"] == "tf.sigmoid"
    assert sigmoid["replacement"] == "keras.ops.sigmoid"

    shown = CliRunner().invoke(cli, ["show", str(run)])
    assert shown.exit_code in (0, 1), shown.output
    assert "Portability of the model's own classes" in shown.output
    assert "Gate (test_backends_portability_facts.py:" in shown.output
    assert "tensorflow runs, jax blocked, torch blocked" in shown.output
    # the failed candidate says what the table found, in the user's terms
    assert (
        "jax+jit: failed: cannot rebuild the model on jax: TracerArrayConversionError — the "
        f"portability table predicted it: Gate calls tf.sigmoid (test_backends_portability_facts"
        f".py:{start + 2}), replace with keras.ops.sigmoid" in " ".join(shown.output.split())
    )
    assert (
        f"test_backends_portability_facts.py:{start + 2} call: tf.sigmoid blocks jax, torch; "
        "replace with keras.ops.sigmoid" in " ".join(shown.output.split())
    )

    checked = CliRunner().invoke(cli, ["check", str(run), "--format", "json"])
    assert checked.exit_code in (0, 1), checked.output
    report = json.loads(checked.stdout)
    assert report["facts"]["backends.portability"]["value"][0]["class"] == "Gate"
