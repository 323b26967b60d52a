"""The backend what-if's parent: exports the model and a sample of batches once, then starts each
backend × compile mode in a fresh process (``child.py --serve``), the run's own first, one after
another: each imports its backend, rebuilds the model, compiles and warms up, then waits. Once
all are warm, the parent runs the rounds in turn — a round of the own, then one of each
candidate, and again — never two at once (two would share the cores and distort each other), so
that round *i* of every candidate saw the same minutes of the machine as the own's round *i*
and a speedup is a median of paired ratios, not two medians taken minutes apart.

Every child runs in its own process group with a timeout (whatever it started, e.g. torch.compile's
workers, is killed with it) and within the allowance: a candidate whose process cannot start in
the time left (its rounds included) is reported as skipped. Nothing a child does touches the
user's model. Waiting children hold their backend's memory: on a GPU they are started with
growing allocation (``TF_FORCE_GPU_ALLOW_GROWTH``, ``XLA_PYTHON_CLIENT_PREALLOCATE=false``)
unless the environment says otherwise.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.errors import UsageError
from advisor.experiments.backends.export import Exported, export
from advisor.experiments.backends.process import Child, installed, start_child
from advisor.experiments.backends.result import (
    FAILED,
    MEASURED,
    SKIPPED,
    BackendCandidate,
    BackendsResult,
    Config,
    all_configs,
)

log = logging.getLogger("advisor")

MEASURE_SECONDS = 3.0  # measured time per candidate, its rounds together
ROUNDS = 6
WARMUP_SECONDS = 0.5
MAX_SECONDS = 300.0  # the whole backend what-if
CHILD_TIMEOUT = 120.0  # one process, import to exit (torch.compile on a CPU can take a minute)
MIN_CHILD_SECONDS = 10.0  # a candidate is not started with less than this left of the allowance
ROUND_TIMEOUT = 30.0  # at least, for one round's answer (a segment is about seconds / rounds)
MEASURING = "measuring"  # warm, its rounds under way (never left in a result)


def own_config(model: Any) -> Config:
    """The model's own backend and compile mode (``jit_compile`` as Keras resolved it)."""
    from advisor.probes.framework import detect_framework

    _, backend, _ = detect_framework(model)
    jit = getattr(model, "jit_compile", None)
    return Config(backend if backend in ("tensorflow", "jax", "torch") else "tensorflow", bool(jit))


def choose(candidates: str | Sequence[str] | None, own: Config) -> list[Config]:
    """The configs to run, the run's own first; ``None`` or ``"all"``: every backend × mode."""
    if candidates is None or candidates == "all":
        chosen = all_configs()
    else:
        names = [candidates] if isinstance(candidates, str) else list(candidates)
        if not names:
            raise UsageError("backends: an empty list names no candidate")
        chosen = [Config.parse(n) for n in names]
    return [own] + [c for c in dict.fromkeys(chosen) if c != own]


def run_child_rounds(
    children: list[Child], rounds: int, seconds: float, deadline: float
) -> str | None:
    """``rounds`` passes, each a round of every live child in turn (the own first); returns why
    it stopped early, if it did. A child whose round fails or does not answer is failed and
    killed."""
    segment = seconds / max(1, rounds)
    for index in range(rounds):
        live = [c for c in children if c.candidate.status == MEASURING]
        if not live:
            return None
        if index and time.perf_counter() + 1.5 * segment * len(live) > deadline:
            return f"the allowance ran out after {index} of {rounds} rounds"
        for child in live:
            began = time.perf_counter()
            wait = max(ROUND_TIMEOUT, 20 * segment)
            if not child.send("round"):
                child.fail(FAILED, f"round {index + 1}: {child.ended()}")
                continue
            kind, message = child.read(wait)
            child.candidate.seconds += time.perf_counter() - began
            if kind == "timeout":
                child.fail(
                    FAILED, f"round {index + 1} timed out after {wait:.0f} s (process killed)"
                )
            elif kind == "ended" or message is None:
                child.fail(FAILED, f"round {index + 1}: {child.ended()}")
            elif "rate" not in message:
                child.fail(
                    message.get("status", FAILED),
                    message.get("reason") or f"round {index + 1} failed",
                )
            else:
                child.candidate.rounds.append(float(message["rate"]))
                child.candidate.round_ends.append(float(message.get("ended") or 0.0))
                child.candidate.steps += int(message.get("steps") or 0)
    return None


def measure_exported(
    exported: Exported,
    own: Config,
    candidates: str | Sequence[str] | None = None,
    *,
    workdir: Path,
    seconds: float = MEASURE_SECONDS,
    rounds: int = ROUNDS,
    warmup: float = WARMUP_SECONDS,
    max_seconds: float = MAX_SECONDS,
    timeout: float = CHILD_TIMEOUT,
    torch_threads: int | None = None,
    started: float | None = None,
) -> BackendsResult:
    """Start the chosen candidates on an exported model one after another, then run their rounds
    interleaved with the own's (see the module's docstring)."""
    t0 = started if started is not None else time.perf_counter()
    deadline = t0 + max_seconds
    configs = choose(candidates, own)
    result = BackendsResult(
        own.name,
        exported.batch_size,
        exported.batches,
        budget_seconds=max_seconds,
        note=exported.note,
    )
    for config in configs:
        result.candidates[config.name] = BackendCandidate(config, SKIPPED, "not reached")
    children: list[Child] = []
    try:
        for config in configs:
            # the rounds still to come, this one's included
            reserve = 1.5 * seconds * (len(children) + 1)
            left = deadline - time.perf_counter() - reserve
            if installed(config.backend) and left < MIN_CHILD_SECONDS:
                skipped = result.candidates[config.name]
                skipped.reason = f"the allowance ({max_seconds:.0f} s) ran out before it"
                result.stopped = result.stopped or "the allowance ran out"
                continue
            log.debug("advisor: backends: starting %s", config.label)
            candidate, child = start_child(
                exported,
                config,
                workdir,
                seconds=seconds,
                rounds=rounds,
                warmup=warmup,
                timeout=min(timeout, max(1.0, left)),
                torch_threads=torch_threads,
            )
            result.candidates[config.name] = candidate
            if child is not None:
                candidate.status = MEASURING
                children.append(child)
        stopped = run_child_rounds(children, rounds, seconds, deadline)
        if stopped:
            result.stopped = result.stopped or stopped
    finally:
        for child in children:
            if child.candidate.status == MEASURING:
                child.candidate.status = MEASURED if child.candidate.rounds else FAILED
                if not child.candidate.rounds:
                    child.candidate.reason = "no round was measured"
            child.stop(wait=False)  # all told at once, then each waited for
        for child in children:
            child.stop()
    result.seconds = time.perf_counter() - t0
    return result


def unexported(
    own: Config,
    candidates: str | Sequence[str] | None,
    reason: str,
    batch_size: int | None,
    seconds: float,
) -> BackendsResult:
    """The result when the model could not be written for the candidates: none measured, each
    with the reason (recorded, so that ``show``, ``check`` and G560 say why)."""
    result = BackendsResult(own.name, int(batch_size or 0), 0, seconds=seconds, note=reason)
    for config in choose(candidates, own):
        status = FAILED if installed(config.backend) else "not_installed"
        result.candidates[config.name] = BackendCandidate(config, status, reason)
    return result


def _measure_own_here(
    model: Any,
    data: Any,
    batch_size: int | None,
    sample: int | None,
    result: BackendsResult,
    seconds: float,
    rounds: int,
    warmup: float,
) -> None:
    """Both compile modes of the model's own backend, measured on the live model in this
    process (``inprocess.py``), into ``result`` (the other candidates keep their reason)."""
    from advisor.experiments.backends.export import SAMPLE_BATCHES, sample_batches
    from advisor.experiments.backends.inprocess import measure_live

    backend = result.own.split("+")[0]
    configs = [
        Config(backend, jit)
        for jit in (result.own.endswith("+jit"), not result.own.endswith("+jit"))
    ]
    x, y, size, batches = sample_batches(data, batch_size, sample or SAMPLE_BATCHES)
    result.batch_size, result.batches = size, batches
    found = measure_live(
        model, x, y, size, batches, configs, seconds=seconds, rounds=rounds, warmup=warmup
    )
    for name, candidate in found.items():
        if candidate.status != MEASURED:
            candidate.reason = "; ".join(r for r in (candidate.reason, result.note) if r)
        result.candidates[name] = candidate
    here = (
        f"{backend}'s own modes measured in this process on the live model (not interleaved with "
        "the other candidates' rounds)"
    )
    result.note = "; ".join(n for n in (result.note, here) if n)


def portability(model: Any, port: bool) -> tuple[list[dict[str, Any]] | None, Any]:
    """The portability table of the model's own classes (``probes.portability``), read from
    their source (None when it cannot be read: the measurement goes on without it), and with
    ``port`` their portable variants (``portable.port_live``; ``UsageError`` when a blocker has
    no replacement)."""
    from advisor.experiments.backends import custom
    from advisor.experiments.backends.portable import blocker_text, port_live
    from advisor.probes.portability import scan_targets

    targets = custom.collect(model)
    try:
        scanned = scan_targets(targets)
    except Exception as exc:  # noqa: BLE001 — a prediction; the measurement decides anyway
        if port:
            raise UsageError(f"port: the custom classes' source cannot be read: {exc}") from None
        log.debug("advisor: backends: the portability table failed: %s", exc)
        return None, None
    rows = [s.to_dict() for s in scanned]
    for row in rows:
        for blocker in row["blockers"]:
            log.info("advisor: backends: %s: %s", row["class"], blocker_text(blocker))
    return rows, port_live(targets, scanned) if port else None


def measure_backends(
    model: Any,
    data: Any,
    candidates: str | Sequence[str] | None = None,
    *,
    batch_size: int | None = None,
    seconds: float = MEASURE_SECONDS,
    rounds: int = ROUNDS,
    warmup: float = WARMUP_SECONDS,
    max_seconds: float = MAX_SECONDS,
    timeout: float = CHILD_TIMEOUT,
    torch_threads: int | None = None,
    sample: int | None = None,
    port: bool = False,
) -> BackendsResult:
    """Measure ``model``'s training speed on every installed backend × compile mode (or the
    ``candidates`` named, e.g. ``["jax+jit", "torch"]``), each in a fresh process, beside its own
    measured the same way. Compute only: the batches are a cached sample of ``data``. ``port``:
    measure the portable variant of its custom classes (their backend calls replaced by
    ``keras.ops``; ``result.diff`` is the rewrite)."""
    from advisor.experiments.backends.export import SAMPLE_BATCHES

    started = time.perf_counter()
    if not isinstance(seconds, (int, float)) or seconds <= 0 or rounds < 1:
        raise UsageError("backends: seconds must be positive and rounds at least 1")
    own = own_config(model)
    table, ported = portability(model, port)
    swap = ported.swap if ported is not None else None
    with tempfile.TemporaryDirectory(prefix="advisor-backends-") as tmp:
        try:
            exported = export(model, data, Path(tmp), batch_size, sample or SAMPLE_BATCHES, swap)
            if exported.custom_error:  # no fresh process could find the user's classes
                raise UsageError(exported.custom_error)
        except UsageError as exc:  # the model cannot travel: its own backend measured here
            result = unexported(own, candidates, str(exc), batch_size, 0.0)
            result.portability = table
            _measure_own_here(model, data, batch_size, sample, result, seconds, rounds, warmup)
            result.seconds = time.perf_counter() - started
            return result
        result = measure_exported(
            exported,
            own,
            candidates,
            workdir=Path(tmp),
            seconds=seconds,
            rounds=rounds,
            warmup=warmup,
            max_seconds=max_seconds,
            timeout=timeout,
            torch_threads=torch_threads,
            started=started,
        )
    result.portability = table
    if ported is not None:
        result.ported, result.diff = ported.replaced, ported.diff
    mine = [c for c in result.candidates.values() if c.config.backend == own.backend]
    if not any(c.status == MEASURED for c in mine):  # its own backend always has a figure
        why = "; ".join(f"{c.name} in a fresh process: {c.reason}" for c in mine)
        result.note = "; ".join(n for n in (result.note, why) if n)
        _measure_own_here(model, data, batch_size, sample, result, seconds, rounds, warmup)
        result.seconds = time.perf_counter() - started
    return result
