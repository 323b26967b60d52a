"""What a baseline measured: per-round throughputs of each arm, their medians and noise bands."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from advisor import noise
from advisor.noise import Band
from advisor.stats import median

ARMS = ("real", "cached", "data_only", "source_cached")


@dataclass
class InputBaseline:
    """Throughputs (samples/s) measured side by side in interleaved rounds; None where not
    measured. The ``*_samples_per_s`` figures are medians over the rounds."""

    input_kind: str
    batch_size: int
    steps: int  # measured steps of the less-measured training arm (cached or real), all rounds
    warmup_steps: int
    real_samples_per_s: float | None = None
    cached_samples_per_s: float | None = None
    data_only_samples_per_s: float | None = None
    source_cached_samples_per_s: float | None = None
    hooks_samples_per_s: float | None = None  # the cached input with the slow callback hooks called
    hooks_of: list[str] = field(default_factory=list)  # those hooks, "Class.hook"
    seconds: float = 0.0  # wall time of the whole baseline (calibration and restores included)
    notes: list[str] = field(default_factory=list)
    rounds: int = 0
    round_rates: dict[str, list[float | None]] = field(
        default_factory=dict
    )  # arm → samples/s per round
    arm_steps: dict[str, int] = field(default_factory=dict)  # arm → measured steps, all rounds
    measured_seconds: float = 0.0  # time inside measured segments
    target_seconds: float | None = None
    budget_seconds: float | None = None
    stopped: str | None = None

    def set_rounds(self, arm: str, rates: list[float | None], steps: int) -> None:
        self.round_rates[arm] = rates
        self.arm_steps[arm] = steps
        setattr(self, f"{arm}_samples_per_s", median([r for r in rates if r is not None]))
        trained = [self.arm_steps[a] for a in ("cached", "real") if a in self.arm_steps]
        self.steps = min(trained) if trained else steps

    # -- paired figures ------------------------------------------------------------------------
    @property
    def bound(self) -> Band | None:
        """The input's cost per round (1 − real ÷ cached) and its band."""
        costs = noise.paired(
            self.round_rates.get("real", []), self.round_rates.get("cached", []), noise.input_cost
        )
        return noise.band(costs)

    @property
    def paired_rounds(self) -> int:
        """Rounds that measured both the cached and the real input."""
        real, cached = self.round_rates.get("real", []), self.round_rates.get("cached", [])
        return len(noise.paired(real, cached, noise.input_cost))

    @property
    def stalled_rounds(self) -> int:
        """Rounds set aside because the cached or the real arm stalled (``noise.steady_rounds``)."""
        return noise.stalled_count(
            self.round_rates.get("real", []), self.round_rates.get("cached", [])
        )

    @property
    def bound_fraction(self) -> float | None:
        """Share of step time spent waiting for input: the median paired 1 − real ÷ cached (≥ 0).
        None when fewer than MIN_ROUNDS rounds paired (noise could not be told from cost)."""
        band = self.bound
        return max(0.0, band.value) if band is not None else None

    @property
    def bound_band(self) -> float | None:
        band = self.bound
        return band.half_width if band is not None else None

    @property
    def bound_outside_band(self) -> bool | None:
        """The cost is larger than its noise band (None: too few rounds for a band)."""
        band = self.bound
        return band.above_zero if band is not None else None

    @property
    def data_only_ratio(self) -> float | None:
        """Data-only ÷ real throughput: the median of the rounds' ratios (None: too few rounds)."""
        band = noise.band(
            noise.paired(
                self.round_rates.get("data_only", []), self.round_rates.get("real", []), noise.ratio
            )
        )
        return band.value if band is not None else None

    @property
    def source_cache_gain(self) -> float | None:
        """Source-cached ÷ real throughput − 1, the median of the rounds (None: too few rounds)."""
        band = noise.band(
            noise.paired(
                self.round_rates.get("source_cached", []),
                self.round_rates.get("real", []),
                noise.relative_gain,
            )
        )
        return max(0.0, band.value) if band is not None else None

    # -- output --------------------------------------------------------------------------------
    def summary(self) -> str:
        parts = []
        bound = self.bound_fraction
        if bound is not None:
            band = self.bound_band
            plus = f" ± {band:.0%}" if band is not None else ""
            if self.bound_outside_band is False:
                parts.append(
                    f"input costs {bound:.0%}{plus} of step time: inside the noise band, no "
                    f"measurable input cost (cached {self.cached_samples_per_s:.0f} vs real "
                    f"{self.real_samples_per_s:.0f} samples/s)"
                )
            else:
                parts.append(
                    f"input costs {bound:.0%}{plus} of step time; with input removed this model "
                    f"trains at {self.cached_samples_per_s:.0f} samples/s instead of "
                    f"{self.real_samples_per_s:.0f}"
                )
        elif self.cached_samples_per_s is not None:
            parts.append(f"cached-input ceiling {self.cached_samples_per_s:.0f} samples/s")
            if self.real_samples_per_s is not None:
                parts.append(
                    f"real input {self.real_samples_per_s:.0f} samples/s (too few rounds to tell "
                    "an input cost from noise)"
                )
        if self.data_only_samples_per_s is not None:
            parts.append(f"the input alone delivers {self.data_only_samples_per_s:.0f} samples/s")
        if self.source_cached_samples_per_s is not None:
            parts.append(
                "with a cache after the file source: "
                f"{self.source_cached_samples_per_s:.0f} samples/s"
            )
        if parts:
            return "; ".join(parts)
        return f"nothing measured: {self.stopped}" if self.stopped else "nothing measured"

    def to_record(self, mode: str) -> Any:
        from advisor.store.ranges import baseline_rate_ceiling
        from advisor.store.schema import BaselineRecord

        # A rate above what its arm can reach is no measurement (a batch a microsecond for the
        # arms that train, a batch in 10 ns for the input alone): it is not written, so the
        # reader never refuses the whole record for it.
        def rate(value: float | None, arm: str) -> float | None:
            ceiling = baseline_rate_ceiling(f"{arm}_samples_per_s", self.batch_size)
            return None if value is None or value > ceiling else value

        def rounds(arm: str) -> list[float | None] | None:
            rates = self.round_rates.get(arm)
            return [None if r is None else rate(round(r, 3), arm) for r in rates] if rates else None

        return BaselineRecord(
            t=time.time(),
            steps=self.steps,
            batch_size=self.batch_size,
            input_kind=self.input_kind,
            real_samples_per_s=rate(self.real_samples_per_s, "real"),
            cached_samples_per_s=rate(self.cached_samples_per_s, "cached"),
            data_only_samples_per_s=rate(self.data_only_samples_per_s, "data_only"),
            source_cached_samples_per_s=rate(self.source_cached_samples_per_s, "source_cached"),
            mode=mode,
            warmup_steps=self.warmup_steps,
            seconds=self.seconds,
            rounds=self.rounds or None,
            real_rounds=rounds("real"),
            cached_rounds=rounds("cached"),
            data_only_rounds=rounds("data_only"),
            source_cached_rounds=rounds("source_cached"),
            real_steps=self.arm_steps.get("real"),
            cached_steps=self.arm_steps.get("cached"),
            measured_seconds=round(self.measured_seconds, 4),
            target_seconds=self.target_seconds,
            budget_seconds=self.budget_seconds,
            stopped=self.stopped,
            hooks_rounds=rounds("hooks"),
            hooks_samples_per_s=rate(self.hooks_samples_per_s, "hooks"),
            hooks_steps=self.arm_steps.get("hooks"),
            hooks_of=list(self.hooks_of) or None,
        )
