"""Custom training loops: ``advisor.track`` and ``advisor.tracked`` record a loop without
``model.fit``.

(The package is ``tracking``, not ``track``: a subpackage named ``track`` would replace the
``advisor.track`` function on the package once imported.)
"""

from advisor.tracking.api import track, tracked
from advisor.tracking.run import TrackedRun, current_run

__all__ = ["TrackedRun", "current_run", "track", "tracked"]
