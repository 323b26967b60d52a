"""What the backend what-if measured: per backend × compile mode, samples/s per round (compute
only: cached batches, no input pipeline), the first step's seconds (compiling), or why not."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor import noise
from advisor.noise import Band
from advisor.stats import median

BACKENDS = ("tensorflow", "jax", "torch")
MEASURED = "measured"
FAILED = "failed"
NOT_INSTALLED = "not_installed"
SKIPPED = "skipped"  # the allowance left no time for it
JIT_NAMES = {"tensorflow": "XLA", "jax": "jit", "torch": "torch.compile"}


@dataclass(frozen=True)
class Config:
    """A backend and a compile mode: ``jax+jit`` is ``KERAS_BACKEND=jax``, ``jit_compile=True``."""

    backend: str
    jit: bool

    @property
    def name(self) -> str:
        return f"{self.backend}+jit" if self.jit else self.backend

    @property
    def label(self) -> str:
        mode = JIT_NAMES[self.backend]
        return f"{self.backend} ({mode})" if self.jit else f"{self.backend} (no {mode})"

    @property
    def change(self) -> str:
        return f"KERAS_BACKEND={self.backend}, jit_compile={self.jit}"

    @classmethod
    def parse(cls, name: str) -> Config:
        from advisor.errors import UsageError

        backend, plus, mode = name.strip().partition("+")
        if backend not in BACKENDS or (plus and mode != "jit"):
            raise UsageError(
                f"unknown backend candidate {name!r}: use BACKEND or BACKEND+jit, BACKEND one of "
                f"{', '.join(BACKENDS)}"
            )
        return cls(backend, bool(plus))


def all_configs() -> list[Config]:
    return [Config(b, jit) for b in BACKENDS for jit in (True, False)]


@dataclass
class BackendCandidate:
    """One backend × compile mode: its rates per round, or the reason it has none."""

    config: Config
    status: str = SKIPPED
    reason: str | None = None
    rounds: list[float] = field(default_factory=list)
    # the first training step (tracing, compiling), and a compile on the second fit call
    # (torch.compile)
    compile_seconds: float | None = None
    load_seconds: float | None = None  # rebuilding the model from its file
    import_seconds: float | None = None  # importing the backend and Keras
    seconds: float = 0.0  # the whole process, start to exit
    steps: int = 0
    versions: dict[str, str | None] = field(default_factory=dict)
    round_ends: list[float] = field(
        default_factory=list
    )  # each round's end by the child's clock (epoch s)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def samples_per_s(self) -> float | None:
        return median(self.rounds) if self.rounds else None

    @property
    def band(self) -> Band | None:
        """The median of the rounds and its order-statistic band (``advisor.noise``)."""
        return noise.band(self.rounds)

    @property
    def relative_band(self) -> float | None:
        """The band's half-width as a share of the median (None with fewer than 3 rounds)."""
        found = self.band
        return found.half_width / found.value if found is not None and found.value else None


@dataclass
class BackendsResult:
    """Every candidate the backend what-if considered; ``own`` names the run's own."""

    own: str
    batch_size: int
    batches: int
    candidates: dict[str, BackendCandidate] = field(default_factory=dict)
    seconds: float = 0.0
    budget_seconds: float | None = None
    note: str | None = None  # how the model travelled, when not as a .keras file
    stopped: str | None = None
    # the portability table: each custom class, the calls that tie it to a backend
    # (probes.portability); and, measuring the portable variant, how many calls were replaced
    portability: list[dict[str, Any]] | None = None
    ported: int | None = None
    diff: str | None = None  # the portable variant's rewrite, as a unified diff

    def own_candidate(self) -> BackendCandidate | None:
        return self.candidates.get(self.own)

    def paired_ratios(self, candidate: BackendCandidate) -> list[float] | None:
        """Round *i*'s samples/s ÷ the own's round *i* (the rounds run interleaved, so each pair saw
        the same minutes of the machine), stalled rounds left out (``noise.paired``); None when the
        two do not have the same rounds."""
        own = self.own_candidate()
        if own is None or not own.rounds or len(candidate.rounds) != len(own.rounds):
            return None
        return noise.paired(candidate.rounds, own.rounds, lambda a, b: a / b) or None

    def speedup(self, candidate: BackendCandidate) -> float | None:
        """The median of the paired ratios (or, unpaired, the ratio of the medians)."""
        own = self.own_candidate()
        if own is None or not own.samples_per_s or candidate.samples_per_s is None:
            return None
        ratios = self.paired_ratios(candidate)
        return median(ratios) if ratios else candidate.samples_per_s / own.samples_per_s

    def speedup_band(self, candidate: BackendCandidate) -> float | None:
        """The speedup's relative ±: the paired ratios' band (or, unpaired, the two medians'
        relative bands added)."""
        own = self.own_candidate()
        ratios = self.paired_ratios(candidate)
        if ratios is not None:
            found = noise.band(ratios)
            return found.half_width / found.value if found is not None and found.value else None
        if own is None or candidate.relative_band is None or own.relative_band is None:
            return None
        return candidate.relative_band + own.relative_band

    def measured(self) -> list[BackendCandidate]:
        """Measured candidates, fastest first."""
        found = [c for c in self.candidates.values() if c.status == MEASURED]
        return sorted(found, key=lambda c: -(c.samples_per_s or 0.0))

    def table(self) -> list[dict[str, Any]]:
        rows = []
        for c in self.candidates.values():
            rows.append(
                {
                    "candidate": c.name,
                    "label": c.config.label,
                    "own": c.name == self.own,
                    "status": c.status,
                    "samples_per_s": c.samples_per_s,
                    "band": c.relative_band,
                    "speedup": self.speedup(c),
                    "speedup_band": self.speedup_band(c),
                    "compile_seconds": c.compile_seconds,
                    "seconds": c.seconds,
                    "reason": c.reason,
                    "change": c.config.change,
                }
            )
        return rows

    def summary(self) -> str:
        """One line: the fastest candidates against the run's own."""
        parts = []
        for c in self.measured():
            speed = self.speedup(c)
            plus = self.speedup_band(c)
            shown = f"{speed:.2f}×" if speed is not None else f"{c.samples_per_s:.0f}/s"
            parts.append(
                f"{c.name} {shown}"
                + (f" (±{plus:.0%})" if plus is not None else "")
                + (" (own)" if c.name == self.own else "")
            )
        return "; ".join(parts) or "no backend measured"

    def to_dict(self) -> dict[str, Any]:
        return {
            "own": self.own,
            "batch_size": self.batch_size,
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "budget_seconds": self.budget_seconds,
            "note": self.note,
            "stopped": self.stopped,
            "measures": "compute only: cached batches, no input pipeline",
            "portability": self.portability,
            "ported": self.ported,
            "diff": self.diff,
            "candidates": [
                dict(
                    row,
                    rounds=[round(r, 3) for r in self.candidates[row["candidate"]].rounds],
                    versions=self.candidates[row["candidate"]].versions,
                )
                for row in self.table()
            ],
        }

    def to_record(self) -> Any:
        """The ``backends`` record of a run (``advisor.store.schema.BackendsRecord``)."""
        import time

        from advisor.store.schema import BackendRun, BackendsRecord

        return BackendsRecord(
            t=time.time(),
            own=self.own,
            batch_size=self.batch_size,
            seconds=round(self.seconds, 3),
            budget_seconds=self.budget_seconds,
            note=self.note,
            stopped=self.stopped,
            portability=self.portability,
            candidates=[
                BackendRun(
                    name=c.name,
                    backend=c.config.backend,
                    jit_compile=c.config.jit,
                    status=c.status,
                    reason=c.reason,
                    rounds=[round(r, 3) for r in c.rounds] or None,
                    compile_seconds=c.compile_seconds,
                    seconds=round(c.seconds, 3),
                )
                for c in self.candidates.values()
            ],
        )

    def render(self) -> str:
        """A plain table for people (the CLI's text output)."""
        lines = [
            f"{'candidate':<16} {'samples/s':>11} {'±':>5} {'vs own':>8} {'compile s':>9}  status",
            "-" * 64,
        ]
        for row in sorted(self.table(), key=lambda r: -(r["samples_per_s"] or -1.0)):
            rate = f"{row['samples_per_s']:.0f}" if row["samples_per_s"] is not None else "-"
            band = f"{row['band']:.0%}" if row["band"] is not None else "-"
            speed = f"{row['speedup']:.2f}×" if row["speedup"] is not None else "-"
            first = f"{row['compile_seconds']:.2f}" if row["compile_seconds"] is not None else "-"
            name = row["candidate"] + (" *" if row["own"] else "")
            status = row["status"] + (f": {row['reason']}" if row["reason"] else "")
            lines.append(f"{name:<16} {rate:>11} {band:>5} {speed:>8} {first:>9}  {status}")
        lines.append(
            f"* the run's own ({self.own}); compute only (cached batches of {self.batch_size}, "
            "no input pipeline); ± is the median's 99% band"
        )
        if self.ported:
            lines.append(
                f"measured: the portable variant ({self.ported} calls replaced by keras.ops), "
                "the own included"
            )
        if self.note:
            lines.append(f"note: {self.note}")
        return "\n".join(lines)
