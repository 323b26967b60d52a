"""Measured what-if: try each recommended change on the user's own model and data, for a few
seconds, beside the unchanged configuration, and report the gain that was measured.

The engine reuses the baseline's measuring loop (``experiments.rounds``): every trial — the
unchanged configuration and each candidate change — is an *arm*; arms are measured for a time
(not a step count) in interleaved rounds whose order alternates, each segment after its own
warm-up. Each round gives a paired ratio candidate ÷ unchanged; the speedup is their median and
its noise band the order-statistic interval of ``advisor.noise``.

Safety: the model's weights, optimizer, metrics and fit attributes are snapshotted before and
restored after every round and at the end (``ModelState``, bit for bit); compiled-step variants
are swapped in and out (``whatif.model.StepSwap``); nothing of the user's input is consumed
(tf.data pipelines are rebuilt copies, Python inputs are copied). Everything stays within
``allowance`` seconds: nothing is started whose estimate does not fit, every segment stops at the
deadline. Ctrl-C ends the what-if and keeps what was measured.

The run's state and its segments are in ``state.py``; its phases (calibrate, choose, prepare,
measure) in ``phases.py``; this module runs them in order and puts everything back.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Sequence

from advisor.experiments.cleanup import own_garbage
from advisor.experiments.settings import WHATIF_NAMES, WHATIF_ROUNDS
from advisor.experiments.whatif.interrupt import Interrupted, ctrl_c_stops
from advisor.experiments.whatif.phases import WhatIfRun, candidates
from advisor.experiments.whatif.result import SKIPPED, CandidateResult, WhatIfResult
from advisor.experiments.whatif.state import WhatIfError
from advisor.experiments.whatif.trials import Situation, Trial

__all__ = ["MIN_ALLOWANCE", "WhatIfError", "candidates", "run_whatif"]

log = logging.getLogger("advisor")

# below this nothing can be measured: a nested fit alone takes a good part of it
MIN_ALLOWANCE = 1.0


def _put_back(restore: Callable[[], object], attempts: int = 3) -> bool:
    """Run ``restore`` to its end even when Ctrl-C lands in it (it starts over); True if it did."""
    interrupted = False
    for _ in range(attempts):
        try:
            restore()
            return interrupted
        except KeyboardInterrupt:
            interrupted = True
    restore()  # a fourth Ctrl-C in a row: the last attempt may raise it
    return interrupted


def run_whatif(
    situation: Situation,
    requested: str | Sequence[str] = "auto",
    *,
    allowance: float,
    rounds: int = WHATIF_ROUNDS,
    mode: str = "api",
    fit_seconds: float | None = None,
    started: float | None = None,
    seconds: float | None = None,
) -> WhatIfResult:
    """Measure the candidates ``requested`` ("auto": those the situation points to) against the
    unchanged configuration within ``allowance`` seconds from ``started`` (a ``perf_counter``
    time, default now: the caller's own preparation counts); the model is left exactly as it
    was. ``seconds``: the rounds' measured time in all (default: a share of what the allowance
    leaves after preparing), so that a generous allowance need not be spent when a shorter
    measurement is enough; the allowance still caps everything."""
    from advisor.experiments.model_state import ModelState
    from advisor.experiments.whatif.model import restore_step_settings, step_settings

    run = WhatIfRun(situation, requested, allowance, rounds, mode, fit_seconds, started, seconds)
    result = run.result
    if allowance < MIN_ALLOWANCE:
        result.skipped = (
            f"an allowance of {allowance:.2f} s is too short to measure anything "
            f"(at least {MIN_ALLOWANCE:g} s)"
        )
        result.seconds = time.perf_counter() - run.t0
        return result
    result.skipped = run.too_slow()  # before the collection and the snapshot spend anything
    if result.skipped is not None:
        result.seconds = time.perf_counter() - run.t0
        _settle_the_unreached(result, requested)
        return result
    timer = time.perf_counter()
    gc.collect()  # training's garbage now; its duration sizes the collection at the end
    collect_s = time.perf_counter() - timer
    timer = time.perf_counter()
    state = ModelState(situation.model)
    settings = step_settings(situation.model)
    # Everything older than the what-if is left out of its collections (each segment collects
    # its own garbage: on the development VM a full collection of a process with TensorFlow
    # loaded took 0.25 s, and in a long-lived process far more; of what the what-if adds ~1 ms;
    # benchmarks/RESULTS.md, "After each segment collects its own garbage"); unfrozen at the end.
    # So the end reserves a restore (about what the snapshot took) and a small collection, not
    # another full one like the one above (``collect_s``). Segments end mid-epoch: their
    # iterators are left in reference cycles. Collected at interpreter exit, an iterator with a
    # py_function in flight hangs the process; collected at the end (even through a Ctrl-C),
    # it closes cleanly.
    run.end_seconds = run.reserve = 0.05 + min(collect_s, 0.05) + (time.perf_counter() - timer)

    def put_back() -> None:
        state.restore()
        restore_step_settings(situation.model, settings)

    with own_garbage(lambda: _put_back(gc.collect)):
        try:
            _run_phases(run, state.restore)
        finally:
            if _put_back(put_back):
                result.interrupted = True
            _release(run.trials)
    result.seconds = time.perf_counter() - run.t0
    _settle_the_unreached(result, requested)
    return result


def _run_phases(run: WhatIfRun, restore: Callable[[], None]) -> None:
    """Calibrate, choose, prepare and measure; a Ctrl-C or the unchanged configuration's failure
    ends them, recorded in the result with what was measured until then."""
    result = run.result
    try:
        with ctrl_c_stops(run.stop):
            log.debug("advisor: what-if: calibrating (Ctrl-C now ends it)")
            if run.calibrate():
                restore()
                run.choose()
                ready = run.prepare(restore)
                if not ready and run.trials:
                    result.stopped = "no candidate could be prepared within the allowance"
                if ready:
                    run.measure(ready, restore)
        if run.stop.requested:  # the Ctrl-C came after the last segment's check
            raise Interrupted
    except (KeyboardInterrupt, Interrupted):
        result.interrupted = True
        result.stopped = "interrupted (Ctrl-C): what was measured until then is kept"
    except WhatIfError as exc:
        result.error = f"the unchanged configuration failed: {exc}"


def _release(trials: list[Trial]) -> None:
    """Release what each trial made (its clones), then forget the trials."""
    for trial in trials:
        if trial.close is not None:
            try:
                trial.close()
            # releasing a clone must not fail the run
            except Exception as exc:  # noqa: BLE001
                log.debug("advisor: what-if: releasing %s failed: %s", trial.name, exc)
    trials.clear()


def _settle_the_unreached(result: WhatIfResult, requested: str | Sequence[str]) -> None:
    """Every candidate left skipped says why: the run's stop, or that it was never reached."""
    for name in WHATIF_NAMES:  # a candidate asked for by name that was never reached
        if not isinstance(requested, str) and name in requested and name not in result.candidates:
            result.add(CandidateResult(name, SKIPPED, result.stopped or "not reached"))
    for entry in result.candidates.values():
        if entry.status == SKIPPED and entry.reason is None:
            entry.reason = result.stopped or "not reached"
