"""The measured what-if: each recommended change tried on the user's own model and input
(``engine``)."""

from advisor.experiments.feeds.base import InputError
from advisor.experiments.feeds.choose import feeds_from_session
from advisor.experiments.whatif.api import (
    default_allowance,
    pipeline_summary,
    situation_from_user,
    whatif,
)
from advisor.experiments.whatif.engine import WhatIfError, candidates, run_whatif
from advisor.experiments.whatif.inputs import cpu_count
from advisor.experiments.whatif.result import CandidateResult, WhatIfResult
from advisor.experiments.whatif.trials import Situation, unchanged_trial

__all__ = [
    "CandidateResult",
    "InputError",
    "Situation",
    "WhatIfError",
    "WhatIfResult",
    "candidates",
    "cpu_count",
    "default_allowance",
    "feeds_from_session",
    "pipeline_summary",
    "run_whatif",
    "situation_from_user",
    "unchanged_trial",
    "whatif",
]
