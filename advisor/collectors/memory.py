"""Memory: the training process's memory at every epoch, and a warning during the fit when it
grows toward running out before the fit ends.

At each epoch's begin and end it reads the process's resident set (psutil), the high-water mark
in between (Linux's ``VmHWM``, reset at the epoch's begin), its children's resident memory (input
workers), the memory it can still take (the host's available memory, or less under a cgroup
limit) and each device's allocator counters (``probes.memory.device_memory``). One ``memory``
record per epoch; nothing on the batch path. After each epoch the growth of the epoch-end readings
is judged as the facts judge it (``advisor.growth``): when it grows epoch after epoch beyond its
noise and the memory left runs out before the fit's last epoch, one warning goes to the log and
the run, with the rate, the deadline and the suspects.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.option_spec import Option

log = logging.getLogger("advisor")

OPTIONS = (
    Option(
        "memory",
        "bool",
        True,
        "record memory per epoch; warn during the fit when it grows toward running out.",
    ),
)
MIN_WARN_MB_PER_EPOCH = 4.0  # the rule M180's default: smaller growth is not called a leak
# The growth is judged after every epoch up to this many, then each time the epochs seen grew by
# a JUDGE_GROWTH share since the last judgement: a custom loop marking thousands of short epochs
# keeps an epoch end of well under a millisecond (each judgement sorts every reading).
JUDGE_EVERY_UP_TO = 64
JUDGE_GROWTH = 1 / 32
WORKER_INPUTS = ("torch", "pydataset")  # inputs whose loaders may start worker processes
EPOCH_HOOKS = ("on_epoch_end", "on_epoch_begin", "on_test_end", "on_train_batch_end")


class MemoryCollector(Collector):
    name = "memory"

    def __init__(self, psutil_module: Any = None) -> None:
        super().__init__()
        self._psutil = psutil_module
        self.host: Any = None
        self.epochs: list[int] = []
        self.readings: list[int] = []
        self.seconds: list[float] = []
        self.begins: list[int | None] = []
        self.planned_epochs: int | None = None
        self.warning: str | None = None
        self._begin: tuple[float, int | None] | None = None
        self._children: bool | None = None  # scan for child processes (None: not decided yet)
        self._judged_at = 0  # readings at the last judgement

    def on_train_begin(self) -> None:
        from advisor.probes.memory import HostMemory

        self.host = HostMemory(self._psutil)
        self.planned_epochs = planned_epochs(self.session.fit_callbacks)
        self._epoch_begins()

    def on_epoch_begin(self, epoch: int) -> None:
        self._epoch_begins()

    def _epoch_begins(self) -> None:
        if self.host is None:
            return
        self._begin = (time.perf_counter(), self.host.rss())
        self.host.reset_peak()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None) -> None:
        from advisor.probes.memory import device_memory
        from advisor.store.schema import MemoryRecord

        if self.host is None:
            return
        t0, rss_begin = self._begin or (time.perf_counter(), None)
        seconds = time.perf_counter() - t0
        rss = self.host.rss()
        record = MemoryRecord(
            t=time.time(),
            epoch=epoch,
            seconds=seconds,
            rss_begin=rss_begin,
            rss=rss,
            rss_peak=self.host.peak(),
            children_rss=self._children_rss(),
            available=self.host.available(),
            devices=device_memory(self.session.backend),
        )
        self.session.writer.write(record)
        self.epochs.append(epoch)
        self.readings.append(rss)
        self.begins.append(rss_begin)
        self.seconds.append(seconds)
        self._begin = None  # a custom loop marks only epoch ends: the next begins here
        if self.warning is None and self._judge_now():
            self._judged_at = len(self.readings)
            self._judge(record.available)
        if self._begin is None:
            self._begin = (time.perf_counter(), self.host.rss())
            self.host.reset_peak()

    def _judge_now(self) -> bool:
        """Judge after every epoch up to JUDGE_EVERY_UP_TO, then on a geometric schedule."""
        n = len(self.readings)
        return n <= JUDGE_EVERY_UP_TO or n - self._judged_at >= n * JUDGE_GROWTH

    def _children_rss(self) -> int | None:
        """Children's memory; after the first epoch only where there are any, or where the input
        starts workers (a scan of every process costs milliseconds)."""
        if self._children is False:
            return None
        found = self.host.children_rss()
        if self._children is None:
            self._children = found is not None or self.session.data.kind in WORKER_INPUTS
        return found

    def _judge(self, available: int | None) -> None:
        """Warn once when the growth so far runs the memory out before the fit's last epoch."""
        from advisor.growth import analyse, deadline, describe
        from advisor.stats import median

        growth = analyse(self.epochs, self.readings)
        if growth is None or not growth.growing or growth.rate_mb < MIN_WARN_MB_PER_EPOCH:
            return
        epoch_s = median(self.seconds[1:])
        due = deadline(
            growth.rate_mb, available or 0, self.epochs[-1], epoch_s, self.planned_epochs
        )
        if due is None or not due.before_end:
            return
        self.warning = (
            f"{describe(growth, due, epoch_s, self.planned_epochs)}; suspect: {self._suspect()}"
        )
        log.warning("advisor: %s", self.warning)
        self.session.event("memory", self.warning, level="warning")

    def _suspect(self) -> str:
        from advisor.growth import MB, attribute, unbounded_cache

        between = within = 0.0
        for k in range(1, len(self.readings)):
            begin = self.begins[k]
            if begin is not None:
                between += (begin - self.readings[k - 1]) / MB
                within += (self.readings[k] - begin) / MB
        hooks = epoch_hook_callbacks(self.session.fit_callbacks)
        across = self._across_hooks()
        summary = self.session.notes.pipeline.get("summary")  # the tf.data inspection's
        return attribute(
            between,
            within,
            after=[h["name"] for h in hooks if h["after"]],
            before=[h["name"] for h in hooks if not h["after"]],
            loop=self.session.keras_flavor == "custom",
            hooks=across.get("hooks", []),
            inner=across.get("inner", []),
            cache=unbounded_cache(summary.get("stages") if isinstance(summary, dict) else None),
        )

    def _across_hooks(self) -> dict[str, Any]:
        """The goodput wrappers' memory across callback hooks (empty when they did not wrap)."""
        memory = self.session.notes.hook_memory
        return memory.summary() if memory is not None else {}

    def on_train_end(self) -> None:
        from advisor.store.schema import ContextRecord

        values: dict[str, Any] = {
            "memory.planned_epochs": self.planned_epochs,
            "memory.peak_resets": bool(self.host is not None and self.host.peak_resets),
            "memory.callbacks": epoch_hook_callbacks(self.session.fit_callbacks),
            "memory.in_fit_warning": self.warning,
        }
        across = self._across_hooks()
        if across.get("hooks"):
            values["memory.hook_growth"] = across["hooks"]
        if across.get("inner"):
            values["memory.inner_calls"] = across["inner"]
        values = {k: v for k, v in values.items() if v is not None}
        self.session.writer.write(ContextRecord(t=time.time(), values=values))


def planned_epochs(callbacks: list[Any]) -> int | None:
    """The fit's ``epochs``, from the parameters Keras gives every callback of the fit."""
    for callback in callbacks:
        params = getattr(callback, "params", None)
        if isinstance(params, dict) and isinstance(params.get("epochs"), int):
            return int(params["epochs"])
    return None


def epoch_hook_callbacks(callbacks: list[Any]) -> list[dict[str, Any]]:
    """The fit's own callbacks (not Keras's, not the advisor's) with hooks that run once an epoch
    or more, in the fit's order, each with ``after``: it runs after the advisor's hooks."""
    from advisor.collectors.goodput_wrap import kind_of, overrides

    out: list[dict[str, Any]] = []
    seen_advisor = False
    for callback in callbacks:
        module = type(callback).__module__
        if module.startswith("advisor."):
            seen_advisor = True
            continue
        if kind_of(callback) == "keras" or module.startswith(("keras.", "tf_keras.")):
            continue
        hooks = [h for h in EPOCH_HOOKS if overrides(callback, h)]
        if hooks:
            out.append({"name": type(callback).__name__, "hooks": hooks, "after": seen_advisor})
    return out
