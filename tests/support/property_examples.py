"""How many examples a property test draws, under the Hypothesis profile ``tests/conftest.py``
loads (``ADVISOR_HYPOTHESIS``: ``replay``, the default, or ``explore``; docs/testing.md)."""

from __future__ import annotations

import os

PROFILE_ENV = "ADVISOR_HYPOTHESIS"
PROFILES = ("replay", "explore")
EXPLORE_FACTOR = 10  # exploring draws ten times a test's examples


def profile() -> str:
    """The profile named by ``ADVISOR_HYPOTHESIS`` (``replay`` when unset)."""
    name = os.environ.get(PROFILE_ENV, "").strip().lower() or "replay"
    if name not in PROFILES:
        raise ValueError(f"{PROFILE_ENV}={name!r}: use one of {', '.join(PROFILES)}")
    return name


def examples(count: int) -> int:
    """``count`` examples when replaying (the README's command, CI), ten times as many when
    exploring."""
    return count * EXPLORE_FACTOR if profile() == "explore" else count
