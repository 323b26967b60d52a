"""docs/architecture.md is true: every package and top-level module of advisor/ is described in
its table, and every path of the package it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
# A name in backticks that looks like a path of the package: `advisor/x/`, `collectors/y.py`.
PATH = re.compile(r"`((?:advisor/)?[a-z_]+(?:/[a-z_]+)*(?:/|\.py))`")


def described() -> set[str]:
    """The first cells of the packages table: `advisor/collectors/`, `advisor/notebook.py`, …"""
    rows = re.findall(r"^\| `(advisor/[^`]+)` \|", DOC.read_text(), re.MULTILINE)
    assert len(rows) > 10, "the packages table of docs/architecture.md was not found"
    return set(rows)


def existing() -> set[str]:
    pkg = ROOT / "advisor"
    packages = {f"advisor/{p.name}/" for p in pkg.iterdir() if (p / "__init__.py").is_file()}
    skip = ("__init__.py", "_version.py")
    modules = {f"advisor/{p.name}" for p in pkg.glob("*.py") if p.name not in skip}
    return packages | modules


def test_every_package_and_top_level_module_is_described():
    assert sorted(existing() - described()) == []


def test_every_described_package_exists():
    assert sorted(described() - existing()) == []


def test_every_path_the_page_names_exists():
    """Paths are named from the repository root (`advisor/store/`, `docs/…`) or from the package
    (`collectors/manifest.py`, `store/schema.py`)."""
    text = DOC.read_text()
    named = set(PATH.findall(text))
    assert len(named) > 20, "no paths found: the check would pass vacuously"
    missing = [
        name
        for name in sorted(named)
        if not (ROOT / name).exists()
        and not (ROOT / "advisor" / name).exists()
        and not any((ROOT / "advisor").glob(f"*/{name}"))
    ]
    assert missing == []
