"""The precision what-if: the user's model at float32, mixed_bfloat16 and mixed_float16 on the
device and backend in use, each in a fresh process on a cached sample of real batches — compute
only — beside the run's own policy (docs/speed-of-light.md)."""

from advisor.experiments.precision.result import PolicyResult, PrecisionResult
from advisor.experiments.precision.runner import MAX_SECONDS, POLICIES, measure_precision

__all__ = ["MAX_SECONDS", "POLICIES", "PolicyResult", "PrecisionResult", "measure_precision"]
