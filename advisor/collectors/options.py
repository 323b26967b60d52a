"""The options of :class:`~advisor.collectors.callback.AdvisorCallback`: one typed model.

Validated once when the callback is made (a bad value is a :class:`~advisor.errors.UsageError`
naming the option; a misspelled name is a ``TypeError`` naming the closest valid one) and recorded
in ``run.json`` under ``config`` so that a run says how it was measured.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from advisor.errors import UsageError

BASELINE_MODES = ("auto", "start", "end")
PRICING_SOURCES = ("table", "aws")
TELEMETRY_DEVICES = ("mine", "all")
DEFAULT_PROFILE_STEPS = (10, 34)  # 25 marked steps: trace shares need at least 20 to be stable
AUTO_PROFILE_STEPS = 25  # profile_steps="auto": this many steps, starting after the warm-up
# The cached-input baseline (collectors/baseline.py): measured time of all arms and rounds, the
# measured steps per arm at least, interleaved rounds, and the budget of the whole baseline.
BASELINE_SECONDS = 3.0
BASELINE_MIN_STEPS = 20
BASELINE_ROUNDS = 12
BASELINE_MAX_SECONDS = 30.0
# The measured what-if (collectors/whatif.py): its candidates, interleaved rounds, and the
# default budget — the smaller of WHATIF_FIT_SHARE of the fit and WHATIF_MAX_SECONDS.
WHATIF_NAMES = (
    "parallel_map", "parallel_interleave", "prefetch", "cache_source", "cache_map", "tfdata_options",
    "pydataset_workers", "pydataset_multiprocessing", "torch_workers", "cached_input",
    "steps_per_execution_8", "steps_per_execution_32", "jit_compile", "mixed_precision", "batch_x2", "batch_x4",
)
WHATIF_ROUNDS = 6
WHATIF_FIT_SHARE = 0.10
WHATIF_MAX_SECONDS = 60.0
# baseline="auto" (the default): after the last epoch, about AUTO_BASELINE_SECONDS of measuring or
# AUTO_BASELINE_STEPS steps, whichever is longer; the whole baseline stays within
# AUTO_BASELINE_SHARE of the fit's time, and is skipped (with the reason recorded) when that share
# is under AUTO_BASELINE_MIN_BUDGET seconds (a fit of 10 s): each segment of each round starts a
# fit of its own with a fresh iterator (~0.1 s on a busy 2-core host), so a smaller budget cannot
# hold the three interleaved rounds a noise band needs.
AUTO_BASELINE_SECONDS = 2.0
AUTO_BASELINE_STEPS = 200
AUTO_BASELINE_SHARE = 0.2
AUTO_BASELINE_MIN_BUDGET = 2.0
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
    window_s: float = 10.0
    warmup_steps: int = 5
    log_every_s: float | None = 60.0
    collectors: tuple[Any, ...] | None = None  # collector names or Collector instances
    baseline: str | None = "auto"
    baseline_steps: int = BASELINE_MIN_STEPS
    baseline_seconds: float | None = None  # None: sized by the mode (see BaselineCollector)
    baseline_rounds: int = BASELINE_ROUNDS
    baseline_max_seconds: float = BASELINE_MAX_SECONDS
    baseline_source_cache: bool = True
    profile_steps: tuple[int, int] | str | None = None  # (start, stop), "auto" or None
    profile_summary: bool = True
    profile_timeout_s: float | None = None
    telemetry: bool = True
    telemetry_interval_s: float = 1.0
    telemetry_devices: str = "mine"
    mfu: bool | None = None
    instance_metadata: bool | None = None
    pipeline: bool = True
    whatif: str | tuple[str, ...] | None = None  # "auto" or candidate names
    whatif_max_seconds: float | None = None  # None: the smaller of 10% of the fit and 60 s
    whatif_rounds: int = WHATIF_ROUNDS
    whatif_seconds: float | None = None  # measuring time of the rounds; None: what the budget leaves
    pricing: str = "table"
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
        _positive("window_s", self.window_s)
        _count("warmup_steps", self.warmup_steps, minimum=0)
        if self.log_every_s is not None:
            _positive("log_every_s", self.log_every_s, allow_zero=True)  # 0: every window
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
        if self.profile_timeout_s is not None:
            _positive("profile_timeout_s", self.profile_timeout_s)
        if self.telemetry_interval_s < MIN_TELEMETRY_INTERVAL_S:
            raise UsageError(f"telemetry_interval_s must be at least {MIN_TELEMETRY_INTERVAL_S} s "
                             f"(got {self.telemetry_interval_s})")
        if self.telemetry_devices not in TELEMETRY_DEVICES:
            raise UsageError(f"telemetry_devices must be 'mine' or 'all' (got {self.telemetry_devices!r})")
        put(self, "whatif", normalize_whatif(self.whatif))
        if self.whatif_max_seconds is not None:
            _positive("whatif_max_seconds", self.whatif_max_seconds)
        if self.whatif_seconds is not None:
            _positive("whatif_seconds", self.whatif_seconds)
        _count("whatif_rounds", self.whatif_rounds, minimum=3)
        if os.environ.get("ADVISOR_PRICING") and self.pricing == "table":
            put(self, "pricing", os.environ["ADVISOR_PRICING"].strip().lower())
        if self.pricing not in PRICING_SOURCES:
            raise UsageError(f"pricing must be 'table' or 'aws' (got {self.pricing!r})")
        if self.cloudwatch_namespace is not None and (
                not isinstance(self.cloudwatch_namespace, str) or not self.cloudwatch_namespace.strip()
                or self.cloudwatch_namespace.startswith("AWS/") or len(self.cloudwatch_namespace) > 255):
            raise UsageError(f"cloudwatch_namespace must be a name of 1-255 characters not starting with "
                             f"'AWS/' (got {self.cloudwatch_namespace!r})")
        if self.instance_metadata is None and os.environ.get("ADVISOR_INSTANCE_METADATA"):
            put(self, "instance_metadata", os.environ["ADVISOR_INSTANCE_METADATA"].strip().lower() in _TRUE)

    def recorded(self) -> dict[str, Any]:
        """The options as plain JSON values (``run.json`` ``config``); collector objects by name."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["tags"] = dict(self.tags)
        if self.collectors is not None:
            out["collectors"] = [c if isinstance(c, str) else getattr(c, "name", type(c).__name__)
                                 for c in self.collectors]
        if isinstance(self.profile_steps, tuple):
            out["profile_steps"] = list(self.profile_steps)
        if isinstance(self.whatif, tuple):
            out["whatif"] = list(self.whatif)
        return out


OPTION_NAMES = tuple(f.name for f in fields(AdvisorOptions))


def check_names(names: Iterable[str], owner: str = "AdvisorCallback") -> None:
    """A ``TypeError`` for the first unknown option, naming the closest valid one."""
    for name in names:
        if name not in OPTION_NAMES:
            close = difflib.get_close_matches(name, OPTION_NAMES, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid options: {', '.join(OPTION_NAMES)}"
            raise TypeError(f"{owner}() got an unexpected option {name!r}{hint}")


def normalize_profile_steps(value: Any) -> tuple[int, int] | str:
    """``"auto"`` (a short window after the warm-up, chosen at train begin) or (start, stop)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    return parse_profile_steps(value)


def auto_profile_window(warmup_steps: int, steps_per_execution: int = 1,
                        epoch_steps: int | None = None) -> tuple[int, int]:
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
        raise UsageError(f"profile_steps={value!r}: give (start, stop), two step numbers from 1, e.g. (10, 34)") from None
    if start < 1 or stop < start:
        raise UsageError(f"profile_steps={value!r}: need 1 <= start <= stop (steps count from 1)")
    return start, stop


def normalize_baseline(value: Any) -> str | None:
    if value in (None, False, "", "off", "none"):
        return None
    if value is True:
        return "end"
    if value in BASELINE_MODES:
        return str(value)
    raise UsageError(f"baseline must be 'auto', 'end', 'start' or None, got {value!r}")


def normalize_whatif(value: Any) -> str | tuple[str, ...] | None:
    """``"auto"``, a list of candidate names (or one name), or None/False (off)."""
    if value in (None, False, "", "off", "none"):
        return None
    if value is True or value == "auto":
        return "auto"
    names = (value,) if isinstance(value, str) else value
    try:
        names = tuple(str(n) for n in names)
    except TypeError:
        raise UsageError(f"whatif must be 'auto', a list of candidate names or None, got {value!r}") from None
    for name in names:
        if name not in WHATIF_NAMES:
            close = difflib.get_close_matches(name, WHATIF_NAMES, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(WHATIF_NAMES)}"
            raise UsageError(f"whatif: unknown candidate {name!r}; {hint}")
    if not names:
        raise UsageError("whatif: an empty list names no candidate; use None to switch the what-if off")
    return tuple(dict.fromkeys(names))


def _positive(name: str, value: Any, allow_zero: bool = False) -> None:
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value < 0 or (value == 0 and not allow_zero)):
        raise UsageError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} number, got {value!r}")


def _count(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UsageError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
