"""The application layer: read each run once, derive its facts once, diagnose once.

The CLI, the TUI and the Python API all go through a :class:`RunService`::

    store = RunService("advisor-runs")
    analysis = store.analyse("latest")          # run + facts (siblings of its sweep included)
    report = store.diagnose("latest")            # the ranked findings, from the same facts
    rows = store.runs()                          # every run (unreadable ones listed as such)
    table = store.scaling_table("sweep-2026")    # strategy × workers

A ``RunService`` caches what it read and derived, so a command that needs a run's summary and its
diagnosis, or every run of a store full of sweeps, reads each run directory once. Derivation and
diagnosis stay pure (:mod:`advisor.analysis`, :mod:`advisor.diagnosis`); only this package and
:mod:`advisor.store` touch the disk.
"""

from advisor.service.run_service import Analysis, RunRow, RunService, analyse, diagnose, run_info

__all__ = ["Analysis", "RunRow", "RunService", "analyse", "diagnose", "run_info"]


def __getattr__(name: str) -> object:
    """``Store``, the old name of :class:`RunService`, with a DeprecationWarning."""
    if name == "Store":
        import warnings

        warnings.warn(
            "advisor.service.Store is deprecated: use advisor.service.RunService",
            DeprecationWarning,
            stacklevel=2,
        )
        return RunService
    raise AttributeError(f"module 'advisor.service' has no attribute {name!r}")
