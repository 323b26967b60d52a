"""Timing the user's code inside a fit: the wrappers the goodput collector puts on the fit's
other callbacks' hooks and on the model's ``save``/``save_weights``, and how it takes them off.

Each wrapper enters the :class:`~advisor.collectors.ledger.Ledger`, calls the original with the
same arguments, and leaves it: the callbacks run in their order, with their arguments and return
values, and a hook that raises still raises (after ``on_raise``, which puts the originals back).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.collectors.ledger import CHECKPOINT, Ledger

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
MAX_WALK_FILES = 10_000  # a saved directory is sized from at most this many files
# Keras's own callbacks whose batch hook waits for the step on tf_keras (they read the logs as
# numbers, and tf_keras hands them tensors): timing them would charge the step to the callback.
SYNCING_ON_TF_KERAS = frozenset({"ProgbarLogger", "TerminateOnNaN"})
# Exceptions that end an epoch, not the fit (Keras catches them around its batch loop).
EPOCH_ENDING = frozenset({"StopIteration", "OutOfRangeError"})
MISSING = object()
# Memory across hooks (HookMemory): a batch hook's resident memory is read around one call in
# BATCH_SAMPLE_EVERY (the others cost a counter); the hooks that run once an epoch, every call.
BATCH_SAMPLE_EVERY = 64
INNER_METHODS = ("predict", "evaluate")  # a model's methods noted when a hook calls them


class HookMemory:
    """The resident memory grown across each callback's hooks, and the ``model.predict`` /
    ``evaluate`` calls made while one of its hooks runs (the memory collector names the suspect
    from them). ``rss`` reads the process's resident memory in bytes."""

    def __init__(self, rss: Callable[[], int]) -> None:
        self.rss = rss
        self.grown: dict[str, float] = {}  # callback name → bytes, scaled by the sampling
        self.sampled: dict[str, int] = {}  # callback name → calls read
        self.hooks: dict[str, set[str]] = {}  # callback name → hooks read
        self.inner: dict[str, int] = {}  # "Name.hook calls model.predict" → calls
        self.failed = False

    def add(self, key: str, grown: int, every: int) -> None:
        name, _, hook = key[3:].rpartition(".")
        self.grown[name] = self.grown.get(name, 0.0) + float(grown * every)
        self.sampled[name] = self.sampled.get(name, 0) + 1
        self.hooks.setdefault(name, set()).add(hook)

    def summary(self) -> dict[str, Any]:
        """What the run keeps: per callback the MB grown across its hooks (an estimate where
        batch hooks were sampled), and the predict/evaluate calls made inside hooks."""
        return {
            "hooks": [
                {
                    "name": name,
                    "mb": round(grown / (1 << 20), 1),
                    "sampled": self.sampled[name],
                    "hooks": sorted(self.hooks[name]),
                }
                for name, grown in sorted(self.grown.items(), key=lambda kv: -kv[1])
            ],
            "inner": [{"where": k, "calls": n} for k, n in self.inner.items()],
        }


def inner_wrapper(original: Any, method: str, ledger: Ledger, memory: HookMemory) -> Any:
    """``model.predict``/``evaluate`` noted when called inside a callback's hook (the ledger's
    state is then that hook's); Keras's own validation calls run outside hooks and pass through."""

    def call(*args: Any, **kwargs: Any) -> Any:
        state = ledger.state
        if state.startswith("cb:") and ledger.on_training_thread():
            where = f"{state[3:]} calls model.{method}"
            memory.inner[where] = memory.inner.get(where, 0) + 1
        return original(*args, **kwargs)

    call.__wrapped__ = original  # type: ignore[attr-defined]
    return call


def kind_of(callback: Any) -> str:
    names = {klass.__name__ for klass in type(callback).__mro__}
    if names & CHECKPOINT_CLASSES:
        return "checkpoint"
    if type(callback).__name__ in KERAS_CLASSES and type(callback).__module__.startswith(
        ("keras", "tf_keras")
    ):
        return "keras"
    return "callback"


def overrides(callback: Any, hook: str) -> bool:
    """The callback has a hook of its own: set on the instance (``LambdaCallback`` keeps its
    functions there) or overridden by its class (Keras marks its base no-ops ``_is_default``)."""
    own = getattr(callback, "__dict__", {}).get(hook)
    if callable(own):
        return True
    method = getattr(type(callback), hook, None)
    return method is not None and not getattr(method, "_is_default", False)


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
        # prefix.index, prefix.data-…
        parts = [p for p in target.parent.glob(target.name + ".*") if p.is_file()]
        return sum(p.stat().st_size for p in parts) if parts else None
    except OSError:
        return None


class Saves:
    """Count, seconds and bytes of the saves made during the fit, and who made them."""

    def __init__(self) -> None:
        self.count = 0
        self.bytes: int | None = None
        self.by: dict[str, int] = {}
        self.times: list[list[float]] = []  # [wall clock at its start, seconds], the first 400

    def add(self, who: str, written: int | None, seconds: float | None = None) -> None:
        self.count += 1
        if seconds is not None and len(self.times) < 400:
            self.times.append([round(time.time() - seconds, 4), round(seconds, 4)])
        self.by[who] = self.by.get(who, 0) + 1
        if written is not None:
            self.bytes = (self.bytes or 0) + written


def hook_wrapper(
    original: Any,
    key: str,
    ledger: Ledger,
    saves: Saves,
    on_raise: Callable[[BaseException], None],
    overlapped_lock: Any,
    callback: Any = None,
    checkpoint: bool = False,
    memory: HookMemory | None = None,
) -> Any:
    """``original`` timed under the ledger state ``key``: on the training thread as a state of
    its own (a checkpoint ``callback``'s as checkpoint time), elsewhere (Keras's async dispatch)
    as overlapped time beside training. With ``memory``, the resident memory grown across the
    call is added to it, for one call in ``BATCH_SAMPLE_EVERY`` of a batch hook."""
    # Ledger.enter and .leave, inlined: this runs at every call of a user's batch hook.
    clock, ident = time.perf_counter, threading.get_ident
    seconds, calls, stack, main = ledger.seconds, ledger.calls, ledger.stack, ledger.thread
    epoch_end = "epoch_end" in key
    every = BATCH_SAMPLE_EVERY if "batch" in key else 1
    count = [every - 1]  # the first call is read

    def hook(*args: Any, **kwargs: Any) -> Any:
        aside = ident() != main  # Keras's async dispatch: beside training, kept apart
        t0 = now = clock()
        before = ledger.saves
        rss0 = None
        if memory is not None and not aside:
            count[0] += 1
            if count[0] >= every:
                count[0] = 0
                rss0 = _rss(memory)
        if aside:
            pass
        elif checkpoint:
            ledger.enter(key)
        else:
            state = ledger.state
            seconds[state] = seconds.get(state, 0.0) + (now - ledger.last)
            ledger.last = now
            stack.append(state)
            ledger.state = key
            calls[key] = calls.get(key, 0) + 1
        try:
            return original(*args, **kwargs)
        except BaseException as exc:
            on_raise(exc)  # the fit ends with it (Keras skips on_train_end)
            raise
        finally:
            now = clock()
            if rss0 is not None and memory is not None:
                rss1 = _rss(memory)
                if rss1 is not None:
                    memory.add(key, rss1 - rss0, every)
            if aside:
                with overlapped_lock:
                    ledger.overlapped[key] = ledger.overlapped.get(key, 0.0) + now - t0
            elif checkpoint:
                ledger.leave()
                # A checkpoint callback that saved without model.save (tf_keras's
                # BackupAndRestore writes a TensorFlow checkpoint): one save, sized by its folder.
                folder = getattr(callback, "backup_dir", None) or getattr(
                    callback, "_backup_dir", None
                )
                if folder and ledger.saves == before and now - t0 > 0.001 and epoch_end:
                    saves.add(key[3:], bytes_at(folder), now - t0)
            else:
                state = ledger.state
                seconds[state] = seconds.get(state, 0.0) + (now - ledger.last)
                ledger.last = now
                ledger.state = stack.pop() if stack else ledger.current_phase

    hook.__wrapped__ = original  # type: ignore[attr-defined]
    return hook


def _rss(memory: HookMemory) -> int | None:
    """The process's resident memory; None (and never again) where it cannot be read."""
    if memory.failed:
        return None
    try:
        return memory.rss()
    except Exception as exc:  # never the fit's problem
        memory.failed = True
        log.info("advisor: memory across callback hooks is off (%s)", exc)
        return None


def save_wrapper(
    original: Any,
    ledger: Ledger,
    saves: Saves,
    inside_fit: Callable[[], bool],
    unwrap: Callable[[], None],
) -> Any:
    """``model.save``/``save_weights`` timed as checkpoint time, with the bytes it wrote."""

    def save(*args: Any, **kwargs: Any) -> Any:
        if not ledger.on_training_thread() or ledger.state == CHECKPOINT:
            return original(*args, **kwargs)  # another thread, or a save inside a save
        if not inside_fit():  # the fit raised outside a hook and left its wrappers
            unwrap()
            return original(*args, **kwargs)
        who = ledger.state[3:] if ledger.state.startswith("cb:") else "fit"
        ledger.enter(CHECKPOINT)
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            took = time.perf_counter() - t0
            ledger.leave()
            ledger.saves += 1
            path = args[0] if args else kwargs.get("filepath")
            saves.add(who, bytes_at(path) if path is not None else None, took)

    save.__wrapped__ = original  # type: ignore[attr-defined]
    return save


def put_back(obj: Any, attr: str, before: Any) -> None:
    try:
        if before is MISSING:
            object.__delattr__(obj, attr)
        else:
            object.__setattr__(obj, attr, before)
    except Exception as exc:
        log.debug("advisor: could not restore %s.%s (%s)", type(obj).__name__, attr, exc)


def drop_stale(obj: Any, attr: str) -> None:
    """A wrapper left by an earlier fit that raised (Keras then skips ``on_train_end``): put back
    what was there before it, so that wrappers never pile up."""
    current = getattr(obj, "__dict__", {}).get(attr)
    if current is not None and hasattr(current, "_advisor_before"):
        put_back(obj, attr, current._advisor_before)
