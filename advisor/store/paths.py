"""Where runs live: argument, then ``ADVISOR_RUNS_DIR``, then ``./advisor-runs``."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_RUNS_DIR = "advisor-runs"
RUNS_DIR_ENV = "ADVISOR_RUNS_DIR"


def resolve_runs_dir(runs_dir: str | os.PathLike[str] | None = None) -> Path:
    if runs_dir is not None and str(runs_dir) != "":
        return Path(runs_dir).expanduser()
    env = os.environ.get(RUNS_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return Path(DEFAULT_RUNS_DIR)
