"""The backend what-if called from a Jupyter notebook executed by a real kernel (nbclient,
ipykernel): the cell defines the custom layer (so it lives in the kernel's ``__main__``, which no
fresh process can import) and calls ``advisor.whatif(..., candidates=["backends"])``. The layer
travels to every candidate's process by value; within the allowance every candidate started is
measured, and the others say why not. A kernel, TensorFlow and fresh processes: ``long``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.long]

pytest.importorskip("tensorflow")
pytest.importorskip("cloudpickle")
nbformat = pytest.importorskip("nbformat", reason="the test extra brings nbclient and ipykernel")
nbclient = pytest.importorskip("nbclient", reason="the test extra brings nbclient and ipykernel")
pytest.importorskip("ipykernel", reason="the test extra brings nbclient and ipykernel")

ROOT = Path(__file__).resolve().parents[2]
ALLOWANCE = 75.0  # the own, TensorFlow's XLA and JAX's jit fit; the rest are skipped, with why


def _run_notebook(tmp_path: Path) -> tuple[dict, str]:
    sys.path.insert(0, str(ROOT))
    try:
        from examples.backend_families import notebook_cells
    finally:
        sys.path.remove(str(ROOT))
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in notebook_cells(ALLOWANCE)]
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
    client = nbclient.NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    text = "".join(
        output.get("text", "")
        for output in notebook.cells[-1].outputs
        if output.get("output_type") == "stream"
    )
    lines = [ln for ln in text.splitlines() if ln.startswith("@result ")]
    assert lines, text[-3000:]
    return json.loads(lines[-1][len("@result ") :]), text


def test_a_notebooks_custom_layer_travels_to_the_candidates(tmp_path) -> None:
    result, text = _run_notebook(tmp_path)
    rows = {row["candidate"]: row for row in result["candidates"]}
    own = rows[result["own"]]
    # measured in a fresh process, which rebuilt the notebook's class from its pickled code (a
    # class that could not travel would leave the own measured in the kernel, with a note)
    assert own["status"] == "measured" and own["band"] is not None, own
    assert result["note"] is None, result["note"]
    assert len(rows) == 6  # every backend x compile mode is listed
    for name, row in rows.items():
        if row["status"] == "measured":
            assert row["samples_per_s"] > 0 and row["band"] is not None, row
            assert name == result["own"] or row["speedup"] is not None, row
        else:  # skipped by the allowance, not installed, or failed: the whole reason
            reason = row["reason"]
            assert reason and "\n" not in reason and not reason.endswith("…"), row
    assert "candidate" in text and "samples/s" in text  # the rendered table, in the cell's output
