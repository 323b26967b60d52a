"""The run directory: schema, writer (training side) and reader (analysis side)."""

from advisor.store.paths import DEFAULT_RUNS_DIR, RUNS_DIR_ENV, resolve_runs_dir
from advisor.store.schema import SCHEMA_VERSION

__all__ = ["DEFAULT_RUNS_DIR", "RUNS_DIR_ENV", "SCHEMA_VERSION", "resolve_runs_dir"]
