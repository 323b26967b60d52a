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
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.ledger import ADVISOR, CHECKPOINT, PHASES, TRAIN, Ledger

log = logging.getLogger("advisor")

# Hooks a fit calls; a callback's override of any of them is wrapped.
FIT_HOOKS = (
    "on_train_begin",
    "on_train_end",
    "on_epoch_begin",
    "on_epoch_end",
    "on_train_batch_begin",
    "on_train_batch_end",
    "on_batch_begin",
    "on_batch_end",
    "on_test_begin",
    "on_test_end",
    "on_test_batch_begin",
    "on_test_batch_end",
)
BATCH_HOOKS = frozenset(
    {"on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end"}
)
CHECKPOINT_CLASSES = frozenset(
    {"ModelCheckpoint", "BackupAndRestore", "BackupAndRestoreExperimental"}
)
KERAS_CLASSES = frozenset({"History", "ProgbarLogger"})  # added by fit itself
SAVE_METHODS = ("save", "save_weights")
MEASURE_COLLECTORS = {
    "baseline": "advisor_measure",
    "whatif": "advisor_measure",
    "profiler": "profile",
}
SLOW_HOOK_SHARE = (
    0.10  # a batch hook above this share of the step is tried in the baseline's "hooks" arm
)
MAX_WALK_FILES = 10_000  # a saved directory is sized from at most this many files


def kind_of(callback: Any) -> str:
    names = {klass.__name__ for klass in type(callback).__mro__}
    if names & CHECKPOINT_CLASSES:
        return "checkpoint"
    if type(callback).__name__ in KERAS_CLASSES and type(callback).__module__.startswith(
        ("keras", "tf_keras")
    ):
        return "keras"
    return "callback"


def _overrides(callback: Any, hook: str) -> bool:
    """The callback has a hook of its own: set on the instance (``LambdaCallback`` keeps its
    functions there) or overridden by its class (Keras marks its base no-ops ``_is_default``)."""
    own = getattr(callback, "__dict__", {}).get(hook)
    if callable(own):
        return True
    method = getattr(type(callback), hook, None)
    return method is not None and not getattr(method, "_is_default", False)


# Keras's own callbacks whose batch hook waits for the step on tf_keras (they read the logs as
# numbers, and tf_keras hands them tensors): timing them would charge the step to the callback.
SYNCING_ON_TF_KERAS = frozenset({"ProgbarLogger", "TerminateOnNaN"})
# Exceptions that end an epoch, not the fit (Keras catches them around its batch loop).
EPOCH_ENDING = frozenset({"StopIteration", "OutOfRangeError"})


def bytes_at(path: Any) -> int | None:
    """Bytes of the file or directory a save wrote (a TensorFlow checkpoint prefix: its files)."""
    try:
        target = Path(os.fspath(path))
    except TypeError:
        return None
    try:
        if target.is_file():
            return target.stat().st_size
        if target.is_dir():
            total = 0
            for n, file in enumerate(p for p in target.rglob("*") if p.is_file()):
                if n >= MAX_WALK_FILES:
                    break
                total += file.stat().st_size
            return total
        parts = [
            p for p in target.parent.glob(target.name + ".*") if p.is_file()
        ]  # prefix.index, prefix.data-…
        return sum(p.stat().st_size for p in parts) if parts else None
    except OSError:
        return None


class _Saves:
    """Count, seconds and bytes of the saves made during the fit, and who made them."""

    def __init__(self) -> None:
        self.count = 0
        self.bytes: int | None = None
        self.by: dict[str, int] = {}

    def add(self, who: str, written: int | None) -> None:
        self.count += 1
        self.by[who] = self.by.get(who, 0) + 1
        if written is not None:
            self.bytes = (self.bytes or 0) + written


class GoodputCollector(Collector):
    name = "budget"

    def __init__(self, wrap: bool = True) -> None:
        super().__init__()
        self.wrap = (
            wrap  # False: the phases and the advisor's own time only, nothing of the user's wrapped
        )
        self._restore: list[tuple[Any, str, Any]] = []  # (object, attribute, the wrapper put there)
        self._keys: dict[
            str, tuple[str, str, str]
        ] = {}  # ledger state → (callback name, hook, kind)
        self._originals: dict[str, Any] = {}  # ledger state → the hook it wraps
        self._saves = _Saves()
        self._last_written = 0.0
        self._lock = threading.Lock()  # the overlapped time of hooks on Keras's worker threads
        self._fit_frame: int | None = (
            None  # id of the fit's frame: a save outside it finds the wrappers stale
        )

    # -- hooks ---------------------------------------------------------------------------------
    def on_train_begin(self) -> None:
        ledger = self.session.ledger
        if ledger is None or not self.wrap:
            return
        from advisor.collectors.fitinfo import fit_frame_id

        self._fit_frame = fit_frame_id()
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
                if _overrides(callback, hook):
                    key = f"cb:{name}.{hook}"
                    _drop_stale(callback, hook)
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
                _drop_stale(model, method)
                original = getattr(model, method, None)
                if callable(original):
                    self._wrap(model, method, self._save_wrapper(original, ledger))

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None) -> None:
        self.session.notes.slow_batch_hooks = self.slow_batch_hooks()
        self._write(final=False)

    def on_train_end(self) -> None:
        self.unwrap()

    def on_before_close(self, status: str) -> None:
        self.unwrap()
        if status == "finished":
            self._write(final=True)
        # A failed run is closed when the next fit begins or the process exits, maybe much later:
        # its last epoch-end record stands, and the rest of the run reads as unaccounted.

    # -- wrapping --------------------------------------------------------------------------------
    def _wrap(self, obj: Any, attr: str, wrapper: Any) -> None:
        before = obj.__dict__.get(attr, _MISSING) if hasattr(obj, "__dict__") else _MISSING
        wrapper._advisor_before = (
            before  # what a later fit puts back if this one never ends (it raised)
        )
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
                _put_back(obj, attr, getattr(wrapper, "_advisor_before", _MISSING))

    def _hook_wrapper(
        self, original: Any, key: str, ledger: Ledger, callback: Any, checkpoint: bool
    ) -> Any:
        # Ledger.enter and .leave, inlined: this runs at every call of a user's batch hook.
        enter, leave, clock, ident = (
            ledger.enter,
            ledger.leave,
            time.perf_counter,
            threading.get_ident,
        )
        seconds, calls, stack, main = ledger.seconds, ledger.calls, ledger.stack, ledger.thread
        saves = self._saves
        collector = self

        def hook(*args: Any, **kwargs: Any) -> Any:
            if ident() != main:  # Keras's async dispatch: beside training, kept apart
                t0 = clock()
                try:
                    return original(*args, **kwargs)
                except BaseException as exc:
                    collector.fit_raised(exc)
                    raise
                finally:
                    with collector._lock:
                        ledger.overlapped[key] = ledger.overlapped.get(key, 0.0) + clock() - t0
            if not checkpoint:
                now = clock()
                state = ledger.state
                seconds[state] = seconds.get(state, 0.0) + (now - ledger.last)
                ledger.last = now
                stack.append(state)
                ledger.state = key
                calls[key] = calls.get(key, 0) + 1
                try:
                    return original(*args, **kwargs)
                except BaseException as exc:
                    collector.fit_raised(exc)  # the fit ends with it (Keras skips on_train_end)
                    raise
                finally:
                    now = clock()
                    state = ledger.state
                    seconds[state] = seconds.get(state, 0.0) + (now - ledger.last)
                    ledger.last = now
                    ledger.state = stack.pop() if stack else ledger.current_phase
            before, t0 = ledger.saves, clock()
            enter(key)
            try:
                return original(*args, **kwargs)
            except BaseException as exc:
                collector.fit_raised(exc)
                raise
            finally:
                leave()
                # A checkpoint callback that saved without model.save (tf_keras's BackupAndRestore
                # writes a TensorFlow checkpoint): one save, sized by its directory.
                folder = getattr(callback, "backup_dir", None) or getattr(
                    callback, "_backup_dir", None
                )
                if (
                    folder
                    and ledger.saves == before
                    and clock() - t0 > 0.001
                    and "epoch_end" in key
                ):
                    saves.add(key[3:], bytes_at(folder))

        hook.__wrapped__ = original  # type: ignore[attr-defined]
        return hook

    def _save_wrapper(self, original: Any, ledger: Ledger) -> Any:
        saves = self._saves

        collector = self

        def save(*args: Any, **kwargs: Any) -> Any:
            if not ledger.on_training_thread() or ledger.state == CHECKPOINT:
                return original(*args, **kwargs)  # another thread, or a save inside a save
            if not collector._inside_fit():  # the fit raised outside a hook and left its wrappers
                collector.unwrap()
                return original(*args, **kwargs)
            who = ledger.state[3:] if ledger.state.startswith("cb:") else "fit"
            ledger.enter(CHECKPOINT)
            try:
                return original(*args, **kwargs)
            finally:
                ledger.leave()
                ledger.saves += 1
                path = args[0] if args else kwargs.get("filepath")
                saves.add(who, bytes_at(path) if path is not None else None)

        save.__wrapped__ = original  # type: ignore[attr-defined]
        return save

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
                continue  # checkpoints, Keras's own, and callbacks that saved: not called again in the arm
            spent = ledger.seconds.get(key, 0.0)
            step = (train + spent) / steps
            if step > 0 and spent / steps > SLOW_HOOK_SHARE * step:
                out.append((f"{name}.{hook}", self._originals[key]))
        return out

    def _steps(self) -> int | None:
        windows = self.session.notes.windows
        return sum(w.steps for w in windows) if windows else None

    def record(self, final: bool) -> Any:
        from advisor.store.schema import BudgetRecord, CallbackTime, CheckpointTime

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
        wall = ledger.wall(now)
        seconds["unaccounted"] = wall - sum(seconds.values())
        saves = self._saves
        checkpoint = CheckpointTime(
            count=saves.count,
            seconds=round(seconds["checkpoint"], 6),
            bytes=saves.bytes,
            by=dict(saves.by),
        )
        return BudgetRecord(
            t=time.time(),
            final=final,
            wall_seconds=round(wall, 6),
            seconds={k: round(v, 6) for k, v in seconds.items()},
            steps=self._steps(),
            callbacks=sorted(rows, key=lambda r: -r.seconds),
            checkpoint=checkpoint,
        )

    def _write(self, final: bool) -> None:
        if self.session.ledger is None:
            return
        self.session.writer.write(self.record(final))


_MISSING = object()


def _put_back(obj: Any, attr: str, before: Any) -> None:
    try:
        if before is _MISSING:
            object.__delattr__(obj, attr)
        else:
            object.__setattr__(obj, attr, before)
    except Exception as exc:
        log.debug("advisor: could not restore %s.%s (%s)", type(obj).__name__, attr, exc)


def _drop_stale(obj: Any, attr: str) -> None:
    """A wrapper left by an earlier fit that raised (Keras then skips ``on_train_end``): put back
    what was there before it, so that wrappers never pile up."""
    current = getattr(obj, "__dict__", {}).get(attr)
    if current is not None and hasattr(current, "_advisor_before"):
        _put_back(obj, attr, current._advisor_before)
