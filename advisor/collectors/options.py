"""The options of :class:`~advisor.collectors.callback.AdvisorCallback`: one typed model.

Validated once when the callback is made (a bad value is a :class:`~advisor.errors.UsageError`
naming the option; a misspelled name is a ``TypeError`` naming the closest valid one) and recorded
in ``run.json`` under ``config`` so that a run says how it was measured.
"""

from __future__ import annotations

import difflib
import math
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from advisor.errors import UsageError
from advisor.experiments.settings import (  # the experiments' defaults, which the options expose
    BASELINE_MAX_SECONDS,
    BASELINE_MIN_STEPS,
    BASELINE_ROUNDS,
    WHATIF_ROUNDS,
    normalize_whatif,
)

BASELINE_MODES = ("auto", "start", "end")
PRICING_SOURCES = ("table", "aws")
TELEMETRY_DEVICES = ("mine", "all")
# The fixed choices, as types. True means "on, the default way" for both baseline= and whatif=.
Baseline = Literal["auto", "end", "start"] | bool | None
WhatIf = Literal["needed", "auto"] | Sequence[str] | bool | None
Pricing = Literal["table", "aws"]
TelemetryDevices = Literal["mine", "all"]
DEFAULT_PROFILE_STEPS = (10, 34)  # 25 marked steps: trace shares need at least 20 to be stable
AUTO_PROFILE_STEPS = 25  # profile_steps="auto": this many steps, starting after the warm-up
MIN_TELEMETRY_INTERVAL_S = 0.1
_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class AdvisorOptions:
    """Everything ``AdvisorCallback(...)`` accepts (see its docstring for what each means)."""

    runs_dir: str | os.PathLike[str] | None = None  # recorded as a str
    instance_type: str | None = None
    price_per_hour: float | None = None
    tags: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    window_seconds: float = 10.0
    warmup_steps: int = 5
    log_every_seconds: float | None = 60.0
    collectors: tuple[Any, ...] | None = None  # collector names or Collector instances
    baseline: Baseline = "auto"
    baseline_steps: int = BASELINE_MIN_STEPS
    baseline_seconds: float | None = None  # None: sized by the mode (see BaselineCollector)
    baseline_rounds: int = BASELINE_ROUNDS
    baseline_max_seconds: float = BASELINE_MAX_SECONDS
    baseline_source_cache: bool = True
    profile_steps: tuple[int, int] | str | None = None  # (start, stop), "auto" or None
    profile_summary: bool = True
    profile_timeout_seconds: float | None = None
    telemetry: bool = True
    telemetry_interval_seconds: float = 1.0
    telemetry_devices: TelemetryDevices = "mine"
    mfu: bool | None = None
    instance_metadata: bool | None = None
    pipeline: bool = True
    budget: bool = True  # time every other callback's hooks and the model's saves (docs/goodput.md)
    whatif: WhatIf = (
        "needed"  # "needed" (when training points to a change), "auto", candidate names, None
    )
    whatif_max_seconds: float | None = None  # None: the smaller of 10% of the fit and 60 s
    whatif_rounds: int = WHATIF_ROUNDS
    whatif_seconds: float | None = (
        None  # measuring time of the rounds; None: what the budget leaves
    )
    pricing: Pricing | None = None  # None: $ADVISOR_PRICING, else "table"
    spot: bool = False
    region: str | None = None
    cloudwatch_namespace: str | None = None
    mlflow: bool = False

    def __post_init__(self) -> None:
        put = object.__setattr__
        if self.runs_dir is not None:
            put(self, "runs_dir", os.fspath(self.runs_dir))
        put(self, "tags", {str(k): str(v) for k, v in (self.tags or {}).items()})
        if self.instance_type is None and os.environ.get("ADVISOR_INSTANCE_TYPE"):
            put(self, "instance_type", os.environ["ADVISOR_INSTANCE_TYPE"])
        if self.price_per_hour is not None:
            _positive("price_per_hour", self.price_per_hour)
        _positive("window_seconds", self.window_seconds)
        _count("warmup_steps", self.warmup_steps, minimum=0)
        if self.log_every_seconds is not None:
            _positive(
                "log_every_seconds", self.log_every_seconds, allow_zero=True
            )  # 0: every window
        if self.collectors is not None:
            put(self, "collectors", tuple(self.collectors))
        put(self, "baseline", normalize_baseline(self.baseline))
        _count("baseline_steps", self.baseline_steps, minimum=1)
        _count("baseline_rounds", self.baseline_rounds, minimum=1)
        if self.baseline_seconds is not None:
            _positive("baseline_seconds", self.baseline_seconds)
        _positive("baseline_max_seconds", self.baseline_max_seconds)
        if self.profile_steps is not None:
            put(self, "profile_steps", normalize_profile_steps(self.profile_steps))
        if self.profile_timeout_seconds is not None:
            _positive("profile_timeout_seconds", self.profile_timeout_seconds)
        if self.telemetry_interval_seconds < MIN_TELEMETRY_INTERVAL_S:
            raise UsageError(
                f"telemetry_interval_seconds must be at least {MIN_TELEMETRY_INTERVAL_S} s "
                f"(got {self.telemetry_interval_seconds})"
            )
        if self.telemetry_devices not in TELEMETRY_DEVICES:
            raise UsageError(
                f"telemetry_devices must be 'mine' or 'all' (got {self.telemetry_devices!r})"
            )
        put(self, "whatif", normalize_whatif(self.whatif))
        if self.whatif_max_seconds is not None:
            _positive("whatif_max_seconds", self.whatif_max_seconds)
        if self.whatif_seconds is not None:
            _positive("whatif_seconds", self.whatif_seconds)
        _count("whatif_rounds", self.whatif_rounds, minimum=3)
        if self.pricing is None:  # an explicit argument beats the environment
            put(self, "pricing", (os.environ.get("ADVISOR_PRICING") or "table").strip().lower())
        if self.pricing not in PRICING_SOURCES:
            raise UsageError(f"pricing must be 'table' or 'aws' (got {self.pricing!r})")
        if self.cloudwatch_namespace is not None and (
            not isinstance(self.cloudwatch_namespace, str)
            or not self.cloudwatch_namespace.strip()
            or self.cloudwatch_namespace.startswith("AWS/")
            or len(self.cloudwatch_namespace) > 255
        ):
            raise UsageError(
                f"cloudwatch_namespace must be a name of 1-255 characters not starting with "
                f"'AWS/' (got {self.cloudwatch_namespace!r})"
            )
        if self.instance_metadata is None and os.environ.get("ADVISOR_INSTANCE_METADATA"):
            put(
                self,
                "instance_metadata",
                os.environ["ADVISOR_INSTANCE_METADATA"].strip().lower() in _TRUE,
            )

    def recorded(self) -> dict[str, Any]:
        """The options as plain JSON values (``run.json`` ``config``); collector objects by name."""
        out = {RECORDED_AS.get(f.name, f.name): getattr(self, f.name) for f in fields(self)}
        out["tags"] = dict(self.tags)
        if self.collectors is not None:
            out["collectors"] = [
                c if isinstance(c, str) else getattr(c, "name", type(c).__name__)
                for c in self.collectors
            ]
        if isinstance(self.profile_steps, tuple):
            out["profile_steps"] = list(self.profile_steps)
        if isinstance(self.whatif, tuple):
            out["whatif"] = list(self.whatif)
        return out


OPTION_NAMES = tuple(f.name for f in fields(AdvisorOptions))
# Every duration option ends in _seconds. The old spellings still work (a DeprecationWarning, once
# per spelling and process) and stay the keys of run.json's ``config``, which readers of older runs
# know: the run directory's contract does not change with the option names.
DEPRECATED = {
    "window_s": "window_seconds",
    "log_every_s": "log_every_seconds",
    "telemetry_interval_s": "telemetry_interval_seconds",
    "profile_timeout_s": "profile_timeout_seconds",
}
RECORDED_AS = {new: old for old, new in DEPRECATED.items()}
_DEFAULTS = {f.name: f.default for f in fields(AdvisorOptions)}
_warned: set[str] = set()


def renamed(
    given: dict[str, Any], old_spellings: dict[str, Any], owner: str = "AdvisorCallback"
) -> dict[str, Any]:
    """``given`` with the deprecated spellings in ``old_spellings`` moved to their new names
    (warning once per spelling); both spellings of one option is a usage error."""
    import warnings

    out = dict(given)
    for old, value in old_spellings.items():
        new = DEPRECATED[old]
        if out.get(new) is not None and out.get(new) != _DEFAULTS.get(new):
            raise UsageError(f"{owner}(): {old}= is the old name of {new}=; pass only {new}=")
        out[new] = value
        if old not in _warned:
            _warned.add(old)
            warnings.warn(
                f"{owner}({old}=...) is deprecated: use {new}=",
                DeprecationWarning,
                stacklevel=_user_level(),
            )
    return out


def _user_level() -> int:
    """The ``stacklevel`` of the first caller outside this package (a warning names the user's line)."""
    frame, depth = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("advisor."):
        frame, depth = frame.f_back, depth + 1
    return depth


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


def normalize_profile_steps(value: Any) -> tuple[int, int] | str:
    """``"auto"`` (a short window after the warm-up, chosen at train begin) or (start, stop)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    return parse_profile_steps(value)


def auto_profile_window(
    warmup_steps: int, steps_per_execution: int = 1, epoch_steps: int | None = None
) -> tuple[int, int]:
    """The steps ``profile_steps="auto"`` captures: AUTO_PROFILE_STEPS steps (trace shares need
    20 to be stable) from a few steps after the warm-up, on whole executions; earlier (but after
    the warm-up) when that keeps the window inside the first epoch."""
    spe = max(1, int(steps_per_execution))

    def execution_start(step: int) -> int:  # the first step of the execution holding ``step``
        return ((step - 1) // spe) * spe + 1

    earliest = execution_start(warmup_steps + spe) if warmup_steps else 1
    start = max(earliest, execution_start(warmup_steps + 5 + spe))
    if epoch_steps and start + AUTO_PROFILE_STEPS - 1 > epoch_steps:
        start = max(earliest, execution_start(epoch_steps - AUTO_PROFILE_STEPS + 1))
    return start, start + AUTO_PROFILE_STEPS - 1


def parse_profile_steps(value: Any) -> tuple[int, int]:
    """``(10, 34)``, ``[10, 34]``, ``"10,34"`` or ``12`` → (start, stop), 1-based and inclusive."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        parts = [value, value]
    if len(parts) == 1:
        parts = parts * 2
    try:
        start, stop = (int(p) for p in parts)
        if isinstance(parts[0], bool) or isinstance(parts[1], bool) or len(parts) != 2:
            raise ValueError
    except (TypeError, ValueError):
        raise UsageError(
            f"profile_steps={value!r}: give (start, stop), two step numbers from 1, e.g. (10, 34)"
        ) from None
    if start < 1 or stop < start:
        raise UsageError(f"profile_steps={value!r}: need 1 <= start <= stop (steps count from 1)")
    return start, stop


def normalize_baseline(value: Any) -> str | None:
    if value in (None, False, "", "off", "none"):
        return None
    if value is True:  # on, the default way: as whatif=True
        return "auto"
    if value in BASELINE_MODES:
        return str(value)
    raise UsageError(f"baseline must be 'auto', 'end', 'start' or None, got {value!r}")


def _positive(name: str, value: Any, allow_zero: bool = False) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
        or (value == 0 and not allow_zero)
    ):
        raise UsageError(
            f"{name} must be a {'non-negative' if allow_zero else 'positive'} number, got {value!r}"
        )


def _count(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UsageError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
