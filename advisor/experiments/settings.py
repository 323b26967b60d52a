"""The experiments' defaults and the names they accept; ``AdvisorCallback``'s options expose them.

Numbers tuned on this project's development host (2 cores, no GPU) say so, and where they were
measured (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import difflib
from typing import Any

from advisor.errors import UsageError
from advisor.store.schema import WHATIF_CANDIDATES

# The cached-input baseline (experiments/baseline/engine.py): measured time of all arms and rounds, the
# measured steps per arm at least, interleaved rounds, and the budget of the whole baseline.
BASELINE_SECONDS = 3.0
BASELINE_MIN_STEPS = 20
BASELINE_ROUNDS = 12
BASELINE_MAX_SECONDS = 30.0
# The measured what-if (experiments/whatif/engine.py): its candidates (named in the store's schema),
# interleaved rounds, and the
# default budget — the smaller of WHATIF_FIT_SHARE of the fit and WHATIF_MAX_SECONDS.
WHATIF_NAMES = WHATIF_CANDIDATES
# What-ifs that run outside the training process, named among the candidates: "backends" measures
# the model on every Keras backend × compile mode in fresh processes (experiments/backends/).
WHATIF_PROCESS_NAMES = ("backends",)
WHATIF_ROUNDS = 6
WHATIF_FIT_SHARE = 0.10
WHATIF_MAX_SECONDS = 60.0
# whatif="needed" (the default): the what-if runs only when what training measured points to a
# change it can try — the baseline's input cost at or above NEEDED_INPUT_COST (outside its band), a
# step short enough for dispatch to matter (NEEDED_STEP_S), or a step run eagerly — and only when the
# budget (WHATIF_FIT_SHARE of the fit) is at least NEEDED_MIN_BUDGET: a smaller one cannot prepare a
# candidate and pair three rounds beside the unchanged input.
NEEDED_INPUT_COST = 0.10
NEEDED_STEP_S = 0.005
NEEDED_MIN_BUDGET = 3.0
# baseline="auto" (the default): after the last epoch, about AUTO_BASELINE_SECONDS of measuring or
# AUTO_BASELINE_STEPS steps, whichever is longer; the whole baseline stays within
# AUTO_BASELINE_SHARE of the fit's time, and is skipped (with the reason recorded) when that share
# is under AUTO_BASELINE_MIN_BUDGET seconds (a fit of 10 s): each segment of each round starts a
# fit of its own with a fresh iterator, whose start is a cost beyond its steps, so a smaller
# budget cannot hold the three interleaved rounds a noise band needs. How large that start is
# depends on the host and the input: 6 ms median and 15-20 ms p90 for a cached input on the
# project's 2-core development VM, more for a pipeline whose iterator must fill its buffers
# (benchmarks/fit_start.py; RESULTS.md, "A nested fit's start").
AUTO_BASELINE_SECONDS = 2.0
AUTO_BASELINE_STEPS = 200
AUTO_BASELINE_SHARE = 0.2
AUTO_BASELINE_MIN_BUDGET = 2.0


def normalize_whatif(value: Any) -> str | tuple[str, ...] | None:
    """``"needed"``, ``"auto"``, a list of candidate names (or one name), or None/False (off)."""
    if value in (None, False, "", "off", "none"):
        return None
    if value is True or value == "auto":
        return "auto"
    if value == "needed":
        return "needed"
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
    return tuple(dict.fromkeys(names))
