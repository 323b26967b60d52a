"""The precision what-if's parent: exports the model and a sample of batches once (as the backend
what-if does), starts one fresh process per dtype policy on the run's own backend and compile
mode (the run's own policy first), and runs their rounds interleaved, one process at a time, so
that each policy's round *i* saw the same minutes of the machine as the own's round *i*."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from advisor.experiments.backends.export import export
from advisor.experiments.backends.process import Child, start_child
from advisor.experiments.backends.result import FAILED, MEASURED, SKIPPED, BackendCandidate
from advisor.experiments.backends.runner import MEASURING, own_config, run_child_rounds
from advisor.experiments.precision.result import PolicyResult, PrecisionResult

POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
MEASURE_SECONDS = 2.0  # measured time per policy, its rounds together
ROUNDS = 6
WARMUP_SECONDS = 0.5
MAX_SECONDS = 150.0
CHILD_TIMEOUT = 90.0
MIN_CHILD_SECONDS = 8.0
SAMPLE_BATCHES = 16


def own_policy(model: Any) -> str:
    from advisor.experiments.precision.policy import layers_policy

    return layers_policy(model)


def cannot_run(policy: str, backend: str, device: str | None) -> str | None:
    """Why this device cannot run ``policy`` (skipped, and said), or None."""
    if device == "tpu" and policy == "mixed_float16":
        return "TPUs compute in bfloat16, not float16"
    return None


def _order(own: str) -> list[str]:
    return [own] + [p for p in POLICIES if p != own]


def measure_precision(
    model: Any,
    data: Any,
    *,
    batch_size: int | None = None,
    device: str | None = None,
    seconds: float = MEASURE_SECONDS,
    rounds: int = ROUNDS,
    max_seconds: float = MAX_SECONDS,
) -> PrecisionResult:
    """The model's training speed at float32, mixed_bfloat16 and mixed_float16 on its own
    backend and compile mode, each in a fresh process, compute only (cached batches)."""
    started = time.perf_counter()
    deadline = started + max_seconds
    config = own_config(model)
    own = own_policy(model)
    result = PrecisionResult(own=own, backend=config.backend, jit=config.jit, device=device)
    children: list[tuple[str, Child]] = []
    with tempfile.TemporaryDirectory(prefix="advisor-precision-") as tmp:
        workdir = Path(tmp)
        exported = export(model, data, workdir, batch_size, SAMPLE_BATCHES)
        result.batch_size = exported.batch_size
        try:
            for policy in _order(own):
                why = cannot_run(policy, config.backend, device)
                if why is not None:
                    result.policies[policy] = PolicyResult(policy, SKIPPED, why)
                    continue
                left = deadline - time.perf_counter() - 1.5 * seconds * (len(children) + 1)
                if left < MIN_CHILD_SECONDS:
                    result.policies[policy] = PolicyResult(
                        policy, SKIPPED, f"the allowance ({max_seconds:.0f} s) ran out before it"
                    )
                    continue
                candidate, child = start_child(
                    exported,
                    config,
                    workdir,
                    seconds=seconds,
                    rounds=rounds,
                    warmup=WARMUP_SECONDS,
                    timeout=min(CHILD_TIMEOUT, left),
                    module="advisor.experiments.precision.child",
                    extra=("--policy", policy),
                    label=policy,
                )
                result.policies[policy] = PolicyResult(policy, candidate=candidate)
                if child is not None:
                    candidate.status = MEASURING
                    children.append((policy, child))
            stopped = run_child_rounds([c for _, c in children], rounds, seconds, deadline)
            result.stopped = stopped
        finally:
            for _, child in children:
                _settle(child.candidate)
                child.stop(wait=False)
            for _, child in children:
                child.stop()
    for entry in result.policies.values():
        entry.settle()
    result.seconds = time.perf_counter() - started
    return result


def _settle(candidate: BackendCandidate) -> None:
    if candidate.status == MEASURING:
        candidate.status = MEASURED if candidate.rounds else FAILED
        if not candidate.rounds:
            candidate.reason = "no round was measured"
