"""The backend what-if: this model's training speed on every installed Keras backend × compile
mode (TensorFlow ±XLA, JAX ±jit, torch eager / torch.compile), each measured in a fresh process
on a cached sample of real batches — compute only — beside the run's own (docs/whatif.md)."""

from advisor.experiments.backends.export import data_from_session
from advisor.experiments.backends.result import BackendCandidate, BackendsResult, Config
from advisor.experiments.backends.runner import MAX_SECONDS, measure_backends, measure_exported

__all__ = [
    "MAX_SECONDS",
    "BackendCandidate",
    "BackendsResult",
    "Config",
    "data_from_session",
    "measure_backends",
    "measure_exported",
]
