"""What the precision what-if measured: per dtype policy, samples/s per round (compute only) and
its first step's seconds, or why it was not measured; recorded as ``precision.*`` values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.experiments.backends.result import BackendCandidate


@dataclass
class PolicyResult:
    """One policy: its rounds, or the reason it has none."""

    policy: str
    status: str = "skipped"
    reason: str | None = None
    candidate: BackendCandidate | None = None
    rounds: list[float] = field(default_factory=list)
    compile_seconds: float | None = None

    def settle(self) -> None:
        """Take the child's outcome."""
        c = self.candidate
        if c is None:
            return
        self.status, self.reason = c.status, c.reason
        self.rounds, self.compile_seconds = list(c.rounds), c.compile_seconds

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "status": self.status,
            "reason": self.reason,
            "rounds": self.rounds,
            "compile_seconds": self.compile_seconds,
        }


@dataclass
class PrecisionResult:
    own: str
    backend: str
    jit: bool
    device: str | None = None
    batch_size: int | None = None
    policies: dict[str, PolicyResult] = field(default_factory=dict)
    seconds: float = 0.0
    stopped: str | None = None

    def values(self) -> dict[str, Any]:
        """As a context record's ``precision.*`` values."""
        out: dict[str, Any] = {
            "precision.own": self.own,
            "precision.backend": self.backend,
            "precision.jit": self.jit,
            "precision.device": self.device,
            "precision.seconds": self.seconds,
            "precision.stopped": self.stopped,
            "precision.policies": [p.to_dict() for p in self.policies.values()],
        }
        return {k: v for k, v in out.items() if v is not None}

    def summary(self) -> str:
        parts = []
        for p in self.policies.values():
            if p.rounds:
                rate = sorted(p.rounds)[len(p.rounds) // 2]
                parts.append(f"{p.policy} {rate:.0f} samples/s")
            else:
                parts.append(f"{p.policy}: {p.status} ({p.reason})")
        return "; ".join(parts)
