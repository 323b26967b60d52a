"""Where the built-in rule files are: inside the wheel, or the checkout's ``rules/``."""

from __future__ import annotations

from pathlib import Path

from advisor.errors import RuleError


def default_rules_dir() -> Path:
    """``advisor/_rules`` inside an installed wheel, else the checkout's ``rules/``."""
    package = Path(__file__).resolve().parent.parent
    shipped = package / "_rules"
    if shipped.is_dir():
        return shipped
    repo = package.parent / "rules"
    if repo.is_dir():
        return repo
    raise RuleError(f"no rule files found (looked in {shipped} and {repo})")
