"""Budget: where every second of the fit went (goodput), by phase, callback hook and save.

At train begin this collector wraps, for the fit's duration only, every hook that the fit's
other callbacks override (``on_train_batch_end``, ``on_epoch_end``, …) and the model's ``save``
and ``save_weights``: each wrapper enters the :class:`~advisor.collectors.ledger.Ledger`, calls
the original with the same arguments, and leaves it. Nothing else changes: the callbacks run in
their order, with their arguments and return values, and a hook that raises still raises. At
train end (and if the fit fails) the originals are put back.

A record of the budget so far is written at every epoch end, and the final one just before the
run closes (after the baseline and the what-if, whose time it counts). Checkpoint callbacks
(``ModelCheckpoint``, ``BackupAndRestore`` and subclasses) count as checkpoint time; so does a
``model.save``/``save_weights`` made by any callback, with the bytes its files hold.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.compile_events import move_compile
from advisor.collectors.gc_pauses import GcPauses
from advisor.collectors.goodput_wrap import (
    BATCH_HOOKS,
    EPOCH_ENDING,
    FIT_HOOKS,
    INNER_METHODS,
    MISSING,
    SAVE_METHODS,
    SYNCING_ON_TF_KERAS,
    HookMemory,
    Saves,
    drop_stale,
    hook_wrapper,
    inner_wrapper,
    kind_of,
    overrides,
    put_back,
    save_wrapper,
)
from advisor.collectors.ledger import ADVISOR, CHECKPOINT, PHASES, TRAIN, Ledger
from advisor.collectors.option_spec import Option

log = logging.getLogger("advisor")

MEASURE_COLLECTORS = {
    "baseline": "advisor_measure",
    "whatif": "advisor_measure",
    "precision": "advisor_measure",
    "speed_of_light": "advisor_measure",
    "profiler": "profile",
}
# A batch hook above this share of the step is tried in the baseline's "hooks" arm.
SLOW_HOOK_SHARE = 0.10
OPTIONS = (
    Option(
        "goodput",
        "bool",
        True,
        "account for the fit's wall clock (goodput): time the hooks of the fit's other callbacks "
        "and the model's saves, by wrapping them for the fit's duration only, and count the "
        "backend's compile events (docs/goodput.md). False: only the advisor's own phases are "
        "timed.",
        old_names=("budget",),
        recorded_as="budget",
    ),
)


class GoodputCollector(Collector):
    name = "goodput"

    def __init__(self, wrap: bool = True) -> None:
        super().__init__()
        # False: the phases and the advisor's own time only, nothing of the user's wrapped
        self.wrap = wrap
        # (object, attribute, the wrapper put there)
        self._restore: list[tuple[Any, str, Any]] = []
        # ledger state → (callback name, hook, kind)
        self._keys: dict[str, tuple[str, str, str]] = {}
        self._originals: dict[str, Any] = {}  # ledger state → the hook it wraps
        self._saves = Saves()
        self._gc = GcPauses()
        self._last_written = 0.0
        self._lock = threading.Lock()  # the overlapped time of hooks on Keras's worker threads
        # id of the fit's frame: a save outside it finds the wrappers stale
        self._fit_frame: int | None = None
        self._memory: HookMemory | None = None  # memory across hooks (the memory collector's)

    # -- hooks ---------------------------------------------------------------------------------
    def on_train_begin(self) -> None:
        ledger = self.session.ledger
        if ledger is not None:
            self._gc.spans = self.session.notes.gc_spans
            self._gc.start()  # full garbage collections, to match stalls with (gc_pauses.py)
        if ledger is None or not self.wrap:
            return
        from advisor.collectors.fitinfo import fit_frame_id

        self._fit_frame = fit_frame_id()
        self._memory = self._hook_memory()
        seen: dict[str, int] = {}
        for callback in self.session.fit_callbacks:
            if getattr(callback, "_advisor_own", False):
                continue  # the advisor's own hooks are counted apart
            base = type(callback).__name__
            seen[base] = seen.get(base, 0) + 1
            name = base if seen[base] == 1 else f"{base}#{seen[base]}"
            kind = kind_of(callback)
            if self.session.keras_flavor == "tf_keras" and base in SYNCING_ON_TF_KERAS:
                continue
            for hook in FIT_HOOKS:
                if overrides(callback, hook):
                    key = f"cb:{name}.{hook}"
                    drop_stale(callback, hook)
                    original = getattr(callback, hook)
                    self._keys[key] = (name, hook, kind)
                    self._originals[key] = original
                    self._wrap(
                        callback,
                        hook,
                        self._hook_wrapper(original, key, ledger, callback, kind == "checkpoint"),
                    )
        model = self.session.model
        if model is not None:
            for method in SAVE_METHODS:
                drop_stale(model, method)
                original = getattr(model, method, None)
                if callable(original):
                    self._wrap(model, method, self._save_wrapper(original, ledger))
            for method in INNER_METHODS if self._memory is not None else ():
                drop_stale(model, method)
                original = getattr(model, method, None)
                if callable(original):
                    self._wrap(model, method, inner_wrapper(original, method, ledger, self._memory))

    def _hook_memory(self) -> HookMemory | None:
        """Memory across the callbacks' hooks, where the memory collector is on (it reads it)."""
        if not getattr(self.session.options, "memory", False):
            return None
        try:
            from advisor.probes.memory import HostMemory

            memory = HookMemory(HostMemory().rss)
        except Exception as exc:  # no psutil: the hooks are timed without it
            log.info("advisor: memory across callback hooks is off (%s)", exc)
            return None
        self.session.notes.hook_memory = memory
        return memory

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None) -> None:
        self.session.notes.slow_batch_hooks = self.slow_batch_hooks()
        self._write(final=False)

    def on_train_end(self) -> None:
        self.unwrap()
        self._gc.stop()

    def on_before_close(self, status: str) -> None:
        self.unwrap()
        self._gc.stop()
        if status == "finished":
            self._write(final=True)
        # A failed run is closed when the next fit begins or the process exits, maybe much later:
        # its last epoch-end record stands, and the rest of the run reads as unaccounted.

    # -- wrapping --------------------------------------------------------------------------------
    def _wrap(self, obj: Any, attr: str, wrapper: Any) -> None:
        before = obj.__dict__.get(attr, MISSING) if hasattr(obj, "__dict__") else MISSING
        # what a later fit puts back if this one never ends (it raised)
        wrapper._advisor_before = before
        try:
            object.__setattr__(obj, attr, wrapper)
        except Exception as exc:  # a class with __slots__ or a frozen object: left alone
            log.debug("advisor: cannot time %s.%s (%s)", type(obj).__name__, attr, exc)
            return
        self._restore.append((obj, attr, wrapper))

    def fit_raised(self, exc: BaseException) -> None:
        """A wrapped hook raised: the exception ends the fit without ``on_train_end``, so the
        originals go back now (the run itself is closed as failed by the next fit or at exit).
        ``StopIteration`` and tf.data's ``OutOfRangeError`` only end the epoch: nothing changes."""
        if type(exc).__name__ not in EPOCH_ENDING:
            self.unwrap()

    def _inside_fit(self) -> bool:
        """The fit that wrapped is still running (its frame is on this thread's stack)."""
        frame, target = sys._getframe(1), self._fit_frame
        if target is None:
            return True
        while frame is not None:
            if id(frame) == target and frame.f_code.co_name == "fit":
                return True
            frame = frame.f_back  # type: ignore[assignment]
        return False

    def unwrap(self) -> None:
        """Put back every original (also when the fit failed); safe to call twice. An attribute
        that no longer holds this fit's wrapper (a later fit took it over) is left alone."""
        while self._restore:
            obj, attr, wrapper = self._restore.pop()
            if wrapper is not None and getattr(obj, "__dict__", {}).get(attr) is wrapper:
                put_back(obj, attr, getattr(wrapper, "_advisor_before", MISSING))

    def _hook_wrapper(
        self, original: Any, key: str, ledger: Ledger, callback: Any, checkpoint: bool
    ) -> Any:
        return hook_wrapper(
            original,
            key,
            ledger,
            self._saves,
            self.fit_raised,
            self._lock,
            callback,
            checkpoint,
            self._memory,
        )

    def _save_wrapper(self, original: Any, ledger: Ledger) -> Any:
        return save_wrapper(original, ledger, self._saves, self._inside_fit, self.unwrap)

    # -- the budget ----------------------------------------------------------------------------
    def slow_batch_hooks(self) -> list[tuple[str, Any]]:
        """The batch hooks that cost more than SLOW_HOOK_SHARE of a training step so far, as
        ("Class.hook", original bound method), for the baseline's "hooks" arm."""
        ledger = self.session.ledger
        steps = self._steps()
        if ledger is None or not steps:
            return []
        train = ledger.seconds.get(TRAIN, 0.0)
        out = []
        for key, (name, hook, kind) in self._keys.items():
            if (
                hook not in BATCH_HOOKS
                or kind != "callback"
                or any(w.startswith(f"{name}.") for w in self._saves.by)
            ):
                # checkpoints, Keras's own, and callbacks that saved: not called again in the arm
                continue
            spent = ledger.seconds.get(key, 0.0)
            step = (train + spent) / steps
            if step > 0 and spent / steps > SLOW_HOOK_SHARE * step:
                out.append((f"{name}.{hook}", self._originals[key]))
        return out

    def _steps(self) -> int | None:
        windows = self.session.notes.windows
        return sum(w.steps for w in windows) if windows else None

    def record(self, final: bool) -> Any:
        from advisor.store.schema import BudgetRecord, CallbackTime, CheckpointTime, GcTime

        ledger = self.session.ledger
        assert ledger is not None
        now = time.perf_counter()
        spent = ledger.snapshot(now)
        seconds = {phase: spent.get(phase, 0.0) for phase in PHASES}
        seconds.update(
            callbacks=0.0,
            checkpoint=spent.get(CHECKPOINT, 0.0),
            advisor_hooks=spent.get(ADVISOR, 0.0),
            advisor_measure=0.0,
            profile=0.0,
        )
        rows = []
        for key, (name, hook, kind) in self._keys.items():
            value, overlapped = spent.get(key, 0.0), ledger.overlapped.get(key, 0.0)
            calls = ledger.calls.get(key, 0)
            if not calls and not overlapped:
                continue
            seconds["checkpoint" if kind == "checkpoint" else "callbacks"] += value
            rows.append(
                CallbackTime(
                    name=name,
                    hook=hook,
                    seconds=round(value, 6),
                    calls=calls,
                    kind=kind,
                    overlapped_seconds=round(overlapped, 6),
                )
            )
        for state, value in spent.items():
            if state.startswith("advisor:"):
                seconds[MEASURE_COLLECTORS.get(state[8:], "advisor_hooks")] += value
        # The advisor's batch hooks run inside the steps: their sampled estimate moves over.
        own = min(self.session.notes.own_batch_seconds, seconds[TRAIN])
        seconds[TRAIN] -= own
        seconds["advisor_hooks"] += own
        compile_startup = move_compile(seconds, self.session.notes.compile_seconds)
        wall = ledger.wall(now)
        seconds["unaccounted"] = wall - sum(seconds.values())
        saves = self._saves
        checkpoint = CheckpointTime(
            count=saves.count,
            seconds=round(seconds["checkpoint"], 6),
            bytes=saves.bytes,
            by=dict(saves.by),
            times=list(saves.times),
        )
        gc_time = self._gc
        return BudgetRecord(
            t=time.time(),
            final=final,
            wall_seconds=round(wall, 6),
            seconds={k: round(v, 6) for k, v in seconds.items()},
            steps=self._steps(),
            callbacks=sorted(rows, key=lambda r: -r.seconds),
            checkpoint=checkpoint,
            gc=GcTime(
                count=gc_time.count, seconds=round(gc_time.seconds, 6), pauses=list(gc_time.pauses)
            ),
            compile_startup_seconds=round(compile_startup, 6) if "compile" in seconds else None,
        )

    def _write(self, final: bool) -> None:
        if self.session.ledger is None:
            return
        self.session.writer.write(self.record(final))
