"""advisor: a performance advisor for Keras training.

``import advisor`` stays light: the Keras callbacks are imported on first use, so that the CLI
and the analysis half never pay for TensorFlow, textual, matplotlib, pandas or boto3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor._version import __version__

if TYPE_CHECKING:  # the real names for type checkers and IDEs; at run time they load on first use
    from advisor.collectors.callback import AdvisorCallback
    from advisor.collectors.singles import (
        ContextCallback,
        EpochCallback,
        ProfilerCallback,
        ThroughputCallback,
    )
    from advisor.experiments.baseline import measure_input
    from advisor.experiments.whatif import whatif
    from advisor.notebook import epochs_frame, findings_frame, runs_frame
    from advisor.service import RunService, analyse, diagnose
    from advisor.store.reader import RunReader
    from advisor.store.writer import RunWriter
    from advisor.tracking import current_run, track, tracked

__all__ = [
    "__version__",
    "AdvisorCallback",
    "ThroughputCallback",
    "EpochCallback",
    "ContextCallback",
    "ProfilerCallback",
    "RunReader",
    "RunWriter",
    "measure_input",
    "whatif",
    "RunService",
    "analyse",
    "diagnose",
    "runs_frame",
    "findings_frame",
    "epochs_frame",
    "track",
    "tracked",
    "current_run",
]

_LAZY = {
    "AdvisorCallback": "advisor.collectors.callback",
    "ThroughputCallback": "advisor.collectors.singles",
    "EpochCallback": "advisor.collectors.singles",
    "ContextCallback": "advisor.collectors.singles",
    "ProfilerCallback": "advisor.collectors.singles",
    "RunReader": "advisor.store.reader",
    "RunWriter": "advisor.store.writer",
    "measure_input": "advisor.experiments.baseline",
    "whatif": "advisor.experiments.whatif",
    "RunService": "advisor.service",
    "analyse": "advisor.service",
    "diagnose": "advisor.service",
    "runs_frame": "advisor.notebook",
    "findings_frame": "advisor.notebook",
    "epochs_frame": "advisor.notebook",
    "track": "advisor.tracking",
    "tracked": "advisor.tracking",
    "current_run": "advisor.tracking",
}


# Old public names, kept as aliases: each warns once (DeprecationWarning) and gives the new object.
DEPRECATED_NAMES = {"Store": "RunService"}


def __getattr__(name: str) -> Any:
    if name in DEPRECATED_NAMES:
        import warnings

        new = DEPRECATED_NAMES[name]
        warnings.warn(
            f"advisor.{name} is deprecated: use advisor.{new}", DeprecationWarning, stacklevel=2
        )
        return __getattr__(new)
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'advisor' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
