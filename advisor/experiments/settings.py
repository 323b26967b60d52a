"""The experiments' defaults and the names they accept; ``AdvisorCallback``'s options expose them.

Numbers tuned on this project's development host (2 cores, no GPU) say so, and where they were
measured (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Literal

from advisor.errors import UsageError
from advisor.store.schema import WHATIF_CANDIDATES

# The cached-input baseline (experiments/baseline/engine.py): measured time of all arms and
# rounds, the measured steps per arm at least, interleaved rounds, and the allowance of the
# whole baseline.
BASELINE_SECONDS = 3.0
BASELINE_MIN_STEPS = 20
BASELINE_ROUNDS = 12
BASELINE_MAX_SECONDS = 30.0
# The measured what-if (experiments/whatif/engine.py): its candidates (named in the store's schema),
# interleaved rounds, and the
# default allowance — the smaller of WHATIF_FIT_SHARE of the fit and WHATIF_MAX_SECONDS.
WHATIF_NAMES = WHATIF_CANDIDATES
# What-ifs that run outside the training process, named among the candidates: "backends" measures
# the model on every Keras backend × compile mode in fresh processes (experiments/backends/),
# "precision" at every dtype policy on the run's own backend (experiments/precision/).
WHATIF_PROCESS_NAMES = ("backends", "precision")
WHATIF_ROUNDS = 6
WHATIF_FIT_SHARE = 0.10
WHATIF_MAX_SECONDS = 60.0
# whatif="needed" (the default): the what-if runs only when what training measured points to a
# change it can try — the baseline's input cost at or above NEEDED_INPUT_COST (outside its band),
# a step short enough for dispatch to matter (NEEDED_STEP_S), or a step run eagerly — and only
# when the allowance (WHATIF_FIT_SHARE of the fit) is at least NEEDED_MIN_ALLOWANCE: a smaller one
# cannot prepare a candidate and pair three rounds beside the unchanged input.
NEEDED_INPUT_COST = 0.10
NEEDED_STEP_S = 0.005
NEEDED_MIN_ALLOWANCE = 3.0
# baseline="auto" (the default): after the last epoch, about AUTO_BASELINE_SECONDS of measuring or
# AUTO_BASELINE_STEPS steps, whichever is longer; the whole baseline stays within
# AUTO_BASELINE_SHARE of the measurement allowance (``measurement_allowance``), and is skipped
# (with the reason recorded) when that is under AUTO_BASELINE_MIN_ALLOWANCE seconds (a fit of
# about 14 s): each segment of each round starts a fit of its own with a fresh iterator, whose
# start is a cost beyond its steps, so a smaller allowance cannot hold the three interleaved
# rounds a noise band needs. How large that start is depends on the host and the input: 6 ms
# median and 15-20 ms p90 for a cached input on the project's 2-core development VM, more for a
# pipeline whose iterator must fill its buffers (benchmarks/fit_start.py; RESULTS.md, "A nested
# fit's start").
AUTO_BASELINE_SECONDS = 2.0
AUTO_BASELINE_STEPS = 200
AUTO_BASELINE_SHARE = 0.5
AUTO_BASELINE_MIN_ALLOWANCE = 2.0
# The default measurements together (baseline="auto", then whatif="needed"): at most
# MEASURE_FIT_SHARE of a fit, or MEASURE_FLOOR_SECONDS when that is more but no more than
# SHORT_FIT_SHARE of a short fit. A fit of a minute or more pays at most a tenth of its time;
# a fit of 20-60 s may pay 6 s, so that its input cost is measured at all.
MEASURE_FIT_SHARE = 0.10
MEASURE_FLOOR_SECONDS = 6.0
SHORT_FIT_SHARE = 0.3


def measurement_allowance(fit_seconds: float) -> float:
    """Seconds the default measurements (baseline, then the needed what-if) may take together
    after a fit of ``fit_seconds``."""
    fit = max(0.0, fit_seconds)
    return min(SHORT_FIT_SHARE * fit, max(MEASURE_FLOOR_SECONDS, MEASURE_FIT_SHARE * fit))


WHATIF_MODES = ("needed", "auto")


@dataclass(frozen=True, eq=False)
class WhatIfPlan:
    """``whatif=`` interpreted (by :func:`parse_whatif`, the one place; None there is off): what
    the what-if does.

    ``mode``: ``"needed"`` (only when training measured a sign of a change it can try),
    ``"auto"`` (the changes the model and input point to) or ``"listed"`` (the ``names`` given, in
    their order, without repeats; ``"backends"`` among them asks for the backend what-if). A plan
    equals its plain form (``"needed"``, ``"auto"`` or the names' tuple), which ``whatif=`` held
    before it was typed.
    """

    mode: Literal["needed", "auto", "listed"]
    names: tuple[str, ...] = ()

    @property
    def backends(self) -> bool:
        """The backend what-if (every Keras backend x compile mode, in fresh processes)."""
        return "backends" in self.names

    @property
    def precision(self) -> bool:
        """The precision what-if asked for by name (every dtype policy, in fresh processes)."""
        return "precision" in self.names

    @property
    def in_process(self) -> str | tuple[str, ...] | None:
        """What the in-process what-if tries: ``"needed"``, ``"auto"`` or the listed candidates;
        None: the backend what-if alone."""
        if self.mode == "listed":
            return tuple(n for n in self.names if n not in WHATIF_PROCESS_NAMES) or None
        return self.mode

    @property
    def value(self) -> str | tuple[str, ...]:
        """The plain form: ``"needed"``, ``"auto"`` or the names."""
        return self.names if self.mode == "listed" else self.mode

    def recorded(self) -> str | list[str]:
        """As ``run.json``'s ``config`` records it."""
        return list(self.names) if self.mode == "listed" else self.mode

    def __eq__(self, other: object) -> bool:
        if isinstance(other, WhatIfPlan):
            return (self.mode, self.names) == (other.mode, other.names)
        return self.value == other

    def __hash__(self) -> int:
        return hash(self.value)


def parse_whatif(value: Any) -> WhatIfPlan | None:
    """``"needed"``, ``"auto"`` (or True), a list of candidate names (or one name), or None/False
    (off: None): the one interpretation of ``whatif=``."""
    if value is None or isinstance(value, WhatIfPlan):
        return value
    if value in (False, "", "off", "none"):
        return None
    if value is True or value in WHATIF_MODES:
        return WhatIfPlan("auto" if value is True else value)
    names = (value,) if isinstance(value, str) else value
    try:
        names = tuple(str(n) for n in names)
    except TypeError:
        raise UsageError(
            f"whatif must be 'needed', 'auto', a list of candidate names or None, got {value!r}"
        ) from None
    known = WHATIF_NAMES + WHATIF_PROCESS_NAMES
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
            raise UsageError(f"whatif: unknown candidate {name!r}; {hint}")
    if not names:
        raise UsageError(
            "whatif: an empty list names no candidate; use None to switch the what-if off"
        )
    return WhatIfPlan("listed", tuple(dict.fromkeys(names)))


def normalize_whatif(value: Any) -> str | tuple[str, ...] | None:
    """:func:`parse_whatif`'s plan in its plain form (``advisor.whatif()``'s candidates)."""
    plan = parse_whatif(value)
    return None if plan is None else plan.value


# Old names of the allowances' minimums ("budget" now means the fit's time budget only): each
# still reads, with a DeprecationWarning.
DEPRECATED_NAMES = {
    "NEEDED_MIN_BUDGET": "NEEDED_MIN_ALLOWANCE",
    "AUTO_BASELINE_MIN_BUDGET": "AUTO_BASELINE_MIN_ALLOWANCE",
}


def __getattr__(name: str) -> Any:
    new = DEPRECATED_NAMES.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import warnings

    warnings.warn(f"{__name__}.{name} is deprecated: use {new}", DeprecationWarning, stacklevel=2)
    return globals()[new]
