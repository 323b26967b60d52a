"""The slow callbacks' batch hooks, called in a nested fit: the baseline's "hooks" arm.

The arm trains the cached input with the hooks the fit's budget found slow (more than a tenth of
a step), called at every batch as the fit called them, beside the cached input without them; the
ratio is the ceiling "without the slow callbacks' batch hooks" (docs/goodput.md). The hooks run
on the real callbacks, so what they do outside the model (print, write a file) happens for those
few seconds too; the model's state is restored after the baseline as for every arm. A hook that
raises is not called again, and the measurement goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from advisor.probes.framework import is_tf_keras

log = logging.getLogger("advisor")
BEGIN_HOOKS = ("on_train_batch_begin", "on_batch_begin")


def hooks_callback(model: Any, hooks: Sequence[tuple[str, Any]]) -> Any:
    """A callback of the model's Keras flavour that calls ``hooks`` (("Class.hook", method)) at
    every batch begin or end, as their names say."""
    if is_tf_keras(model):
        import tf_keras

        base: Any = tf_keras.callbacks.Callback
    else:
        import keras

        base = keras.callbacks.Callback
    begin = [(name, fn) for name, fn in hooks if name.rsplit(".", 1)[-1] in BEGIN_HOOKS]
    end = [(name, fn) for name, fn in hooks if name.rsplit(".", 1)[-1] not in BEGIN_HOOKS]

    def call_all(calls: list[tuple[str, Any]], batch: int, logs: Any) -> None:
        for item in list(calls):
            try:
                item[1](batch, logs)
            except Exception as exc:  # noqa: BLE001 — the user's hook: never the measurement's failure
                log.debug(
                    "advisor: %s raised in the hooks arm (%s); not called again", item[0], exc
                )
                calls.remove(item)

    class _SlowHooks(base):  # type: ignore[misc, valid-type]
        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            if begin:
                call_all(begin, batch, logs)

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if end:
                call_all(end, batch, logs)

    return _SlowHooks()
