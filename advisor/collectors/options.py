"""The options of :class:`~advisor.collectors.callback.AdvisorCallback`: one typed model.

Each option is declared once, next to the collector that uses it (:mod:`.option_registry` collects
the table). :class:`AdvisorOptions` holds their values: validated and normalised once, when it
is made, by each declaration's normaliser (a bad value is a :class:`~advisor.errors.UsageError`
naming the option; a misspelled name is a ``TypeError`` naming the closest valid one), and
recorded in ``run.json`` under ``config`` so that a run says how it was measured.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from advisor.collectors.baseline import Baseline
from advisor.collectors.manifest import Pricing
from advisor.collectors.option_registry import (
    BY_NAME,
    DEPRECATED,
    OPTION_NAMES,
    OPTIONS,
    RECORDED_AS,
)
from advisor.collectors.option_spec import WARNED, warn_once
from advisor.collectors.profiler import DEFAULT_PROFILE_STEPS, auto_profile_window
from advisor.collectors.telemetry.collector import TelemetryDevices
from advisor.collectors.whatif import WhatIf
from advisor.errors import UsageError
from advisor.experiments.settings import (  # the experiments' defaults, which the options expose
    BASELINE_MAX_SECONDS,
    BASELINE_MIN_STEPS,
    BASELINE_ROUNDS,
    WHATIF_ROUNDS,
    WhatIfPlan,
)

__all__ = [
    "BASELINE_MAX_SECONDS",
    "BASELINE_MIN_STEPS",
    "BASELINE_ROUNDS",
    "DEFAULT_PROFILE_STEPS",
    "DEPRECATED",
    "OPTION_NAMES",
    "RECORDED_AS",
    "WHATIF_ROUNDS",
    "AdvisorOptions",
    "Baseline",
    "Pricing",
    "TelemetryDevices",
    "WhatIf",
    "auto_profile_window",
    "check_names",
    "renamed",
    "takes_options",
]
_warned = WARNED  # the spellings warned about in this process (tests reset it)
F = TypeVar("F", bound=Callable[..., None])


@dataclass(frozen=True)
class AdvisorOptions:
    """Everything ``AdvisorCallback(...)`` accepts (see its docstring for what each means), as
    the declarations normalise it. Fields, order, defaults and annotations are the declarations'
    (tests/collectors/test_option_declarations.py)."""

    runs_dir: str | None = None
    name: str | None = None
    tags: dict[str, str] | None = None
    instance_type: str | None = None
    price_per_hour: float | None = None
    pricing: str | None = None
    spot: bool = False
    region: str | None = None
    instance_metadata: bool | None = None
    window_seconds: float = 10.0
    warmup_steps: int = 5
    log_every_seconds: float | None = 60.0
    collectors: tuple[Any, ...] | None = None
    baseline: str | None = "auto"
    baseline_steps: int = BASELINE_MIN_STEPS
    baseline_seconds: float | None = None
    baseline_rounds: int = BASELINE_ROUNDS
    baseline_max_seconds: float = BASELINE_MAX_SECONDS
    baseline_source_cache: bool = True
    profile_steps: tuple[int, int] | str | None = None
    profile_summary: bool = True
    profile_timeout_seconds: float | None = None
    telemetry: bool = True
    telemetry_interval_seconds: float = 1.0
    telemetry_devices: TelemetryDevices = "mine"
    mfu: bool | None = None
    pipeline: bool = True
    memory: bool = True
    batch_memory: bool = False
    goodput: bool = True
    whatif: WhatIfPlan | None = WhatIfPlan("needed")
    whatif_max_seconds: float | None = None
    whatif_rounds: int = WHATIF_ROUNDS
    whatif_seconds: float | None = None
    speed_of_light: bool = True
    cloudwatch_namespace: str | None = None
    mlflow: bool = False

    def __post_init__(self) -> None:
        for option in OPTIONS:  # each value through its declaration's normaliser, once
            object.__setattr__(self, option.name, option.value(getattr(self, option.name)))

    def recorded(self) -> dict[str, Any]:
        """The options as plain JSON values (``run.json`` ``config``); collector objects by name."""
        return {option.key: option.recorded(getattr(self, option.name)) for option in OPTIONS}


if tuple(f.name for f in fields(AdvisorOptions)) != OPTION_NAMES:
    raise RuntimeError("AdvisorOptions' fields are not the declared options")


def options_from(
    given: dict[str, Any], old_spellings: dict[str, Any], owner: str = "AdvisorCallback"
) -> AdvisorOptions:
    """The options of ``given`` (an option name → its argument), the old spellings renamed."""
    return AdvisorOptions(**renamed(given, old_spellings, owner))


def takes_options(init: F) -> F:
    """``AdvisorCallback.__init__``'s arguments, bound to its signature by name (the old
    spellings through ``**deprecated``), become ``self.options`` before its body runs: its typed
    parameters are the declarations' face (checked by tests/collectors/test_option_declarations.py)
    and nothing reads them one by one."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        given = {k: v for k, v in bound.arguments.items() if k in BY_NAME}
        deprecated = bound.arguments.get("deprecated", {})
        self.options = options_from(given, deprecated, type(self).__name__)
        init(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def renamed(
    given: dict[str, Any], old_spellings: dict[str, Any], owner: str = "AdvisorCallback"
) -> dict[str, Any]:
    """``given`` with the deprecated spellings in ``old_spellings`` moved to their new names
    (warning once per spelling); both spellings of one option is a usage error."""
    out = dict(given)
    for old, value in old_spellings.items():
        new = DEPRECATED[old]
        if out.get(new) is not None and out.get(new) != BY_NAME[new].default:
            raise UsageError(f"{owner}(): {old}= is the old name of {new}=; pass only {new}=")
        out[new] = value
        warn_once(old, f"{owner}({old}=...) is deprecated: use {new}=")
    return out


def check_names(
    names: Iterable[str], owner: str = "AdvisorCallback", accepted: Sequence[str] = OPTION_NAMES
) -> None:
    """A ``TypeError`` for the first option not in ``accepted`` (nor an old name of one), naming
    the closest valid one; a usage error for an option given under both its names (``renamed``
    can only compare values)."""
    names = list(names)
    for old, new in DEPRECATED.items():
        if old in names and new in names:
            raise UsageError(f"{owner}(): {old}= is the old name of {new}=; pass only {new}=")
    for name in names:
        if name not in accepted and DEPRECATED.get(name) not in accepted:
            close = difflib.get_close_matches(name, accepted, n=1)
            hint = (
                f"; did you mean {close[0]!r}?"
                if close
                else f"; valid options: {', '.join(accepted)}"
            )
            raise TypeError(f"{owner}() got an unexpected option {name!r}{hint}")
