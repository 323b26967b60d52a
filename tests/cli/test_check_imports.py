"""`advisor check` stays light: a diagnosis loads no TensorFlow, Keras, textual or matplotlib."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from advisor.store.schema import ContextRecord, WindowRecord
from advisor.store.writer import RunWriter

pytestmark = pytest.mark.slow  # trains a model or starts a process

HEAVY = ["tensorflow", "keras", "jax", "torch", "textual", "matplotlib", "pandas", "boto3", "xprof"]


def test_check_loads_nothing_heavy(tmp_path):
    w = RunWriter(
        tmp_path / "runs", run_id="light", manifest={"global_batch_size": 32, "price_per_hour": 1.0}
    )
    t = time.time()
    w.write(ContextRecord(t=t, values={"context.run_eagerly": False, "context.jit_compile": True}))
    for i in range(4):
        w.write(
            WindowRecord(
                t=t + i,
                epoch=0,
                seconds=1.0,
                steps=50,
                samples=1600,
                step_begin=50 * i,
                step_end=50 * (i + 1),
            )
        )
    w.close()
    probe = (
        "import json, sys\n"
        "from advisor.cli.main import main\n"
        f"code = main(['check', {str(w.path)!r}, '--format', 'json', '--exit-zero'])\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    loaded = {m.split(".")[0] for m in result["modules"]}
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
