"""The layer contracts of docs/architecture.md hold (import-linter reads them from pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # trains a model or starts a process

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.fail("lint-imports is missing: install the test extra (import-linter)")
    out = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "BROKEN" not in out.stdout and "KEPT" in out.stdout


def test_every_package_says_what_it_is():
    """Each package of advisor/ has a docstring: the folder names and their first lines tell the flow."""
    import importlib

    for init in sorted((ROOT / "advisor").glob("*/__init__.py")):
        module = importlib.import_module(f"advisor.{init.parent.name}")
        assert (module.__doc__ or "").strip(), f"advisor/{init.parent.name}/__init__.py has no docstring"
