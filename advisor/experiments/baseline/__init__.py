"""The cached-input baseline: how fast this model trains with its input taken out (``engine``)."""

from advisor.experiments.baseline.auto import (
    MULTI_WORKER,
    ONE_SHOT,
    Sizing,
    auto_sizing,
    explicit_sizing,
    mean_step_seconds,
)
from advisor.experiments.baseline.engine import (
    DEFAULT_MIN_STEPS,
    DEFAULT_ROUNDS,
    NoRealInput,
    Plan,
    check_model,
    make_plan,
    measure_fit_input,
    measure_input,
    run_baseline,
)
from advisor.experiments.baseline.result import InputBaseline
from advisor.experiments.feeds.base import InputError

__all__ = [
    "DEFAULT_MIN_STEPS",
    "DEFAULT_ROUNDS",
    "MULTI_WORKER",
    "ONE_SHOT",
    "InputBaseline",
    "InputError",
    "NoRealInput",
    "Plan",
    "Sizing",
    "auto_sizing",
    "check_model",
    "explicit_sizing",
    "make_plan",
    "mean_step_seconds",
    "measure_fit_input",
    "measure_input",
    "run_baseline",
]
