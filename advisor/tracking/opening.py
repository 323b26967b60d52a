"""Opening a custom loop's run, and the loop's time accounting (its goodput record).

The run directory is the one ``AdvisorCallback`` writes: the same manifest (with the loop's batch
size and ``loop="custom"`` in its config), a session for the collectors a loop can run
(telemetry, MLflow) and the loop's context record.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import time
from typing import Any

from advisor.collectors.collector import Collector, Guard
from advisor.collectors.compile_events import move_compile
from advisor.collectors.manifest import instance_and_price, run_manifest
from advisor.collectors.options import AdvisorOptions
from advisor.collectors.session import DataInfo, Session
from advisor.probes.distributed import detect_rank_world
from advisor.store.schema import BudgetRecord, ContextRecord
from advisor.tracking.context import detect_backend, loop_context
from advisor.tracking.flop_source import FlopSource


def open_loop_run(
    opts: AdvisorOptions,
    batch_size: int | None,
    backend: str | None,
    flops: FlopSource | None = None,
) -> tuple[Any, Session, Guard]:
    """(writer, session, guard) of a loop's run beginning now; the collectors attached (the
    speed of light's when the loop gives its FLOPs: ``flops``)."""
    from advisor.collectors.registry import build_collectors
    from advisor.store.writer import RunWriter

    rank, world = detect_rank_world()
    backend = backend or detect_backend()
    instance, found = instance_and_price(opts)
    price, price_source = found.usd_per_hour, found.source
    framework: dict[str, Any] = {"backend": backend, "legacy_keras": False}
    module = sys.modules.get(backend or "")
    if module is not None:
        framework["backend_version"] = getattr(module, "__version__", None)
    config = opts.recorded()
    config.update(batch_size=batch_size, loop="custom")
    manifest = run_manifest(
        framework=framework,
        num_workers=world,
        steps_per_execution=1,
        instance=instance,
        price=(price, price_source),
        options=opts,
        config=config,
        strategy="default" if world == 1 else "custom",
        replicas=world,
        per_replica_batch_size=batch_size,
        global_batch_size=batch_size * world if batch_size else None,
    )
    writer = RunWriter(opts.runs_dir, rank=rank, manifest=manifest, name=opts.name)
    session = Session(
        writer=writer,
        model=None,
        rank=rank,
        num_workers=world,
        options=opts,
        data=DataInfo(kind="custom", batch_size=batch_size),
        keras_flavor="custom",
        backend=backend,
        train_begin_t=time.perf_counter(),
        price_per_hour=price,
    )
    wanted = ("compile", *(n for n in ("telemetry", "mlflow", "memory") if getattr(opts, n)))
    collectors: list[Collector] = build_collectors(dataclasses.replace(opts, collectors=wanted))
    if opts.speed_of_light and flops is not None:
        from advisor.collectors.speed_of_light import SpeedOfLightCollector

        collectors.append(
            SpeedOfLightCollector(loop_flops=functools.partial(flops.count, batch_size))
        )
    for collector in collectors:
        collector.attach(session)
    guard = Guard(collectors, session)
    values = loop_context(backend, world, batch_size, opts.log_every_seconds is not None)
    writer.write(ContextRecord(t=time.time(), values=values))
    session.notes.context = values
    return writer, session, guard


def goodput_record(
    final: bool,
    wall: float,
    own: float,
    window_seconds: float,
    first_step_seconds: float | None,
    validation_seconds: float,
    steps: int,
    compile_seconds: dict[str, float] | None = None,
    own_outside: float = 0.0,
) -> BudgetRecord:
    """Where the loop's time went, as its markers tell: start-up (to the first step's end),
    steps, validation blocks and the advisor's own time; the rest (between markers) is
    unaccounted (docs/goodput.md). ``window_seconds``: all windows' time (the steps, start-up
    included, and the advisor's work in them). ``compile_seconds``: the compile events' seconds by
    the phase they ran in, moved into the ``compile`` category. ``own_outside``: the advisor's
    own time between windows (its epoch-end work, which no step's time includes)."""
    own = min(own, window_seconds)
    startup = min(first_step_seconds or 0.0, window_seconds - own)
    seconds = {
        "startup": startup,
        "train_steps": max(0.0, window_seconds - own - startup),
        "validation": validation_seconds,
        "advisor_hooks": own + own_outside,
    }
    compile_startup = move_compile(seconds, compile_seconds or {})
    seconds["unaccounted"] = wall - sum(seconds.values())
    return BudgetRecord(
        t=time.time(),
        final=final,
        wall_seconds=round(wall, 6),
        seconds={k: round(v, 6) for k, v in seconds.items()},
        steps=steps,
        source="track",
        compile_startup_seconds=round(compile_startup, 6) if "compile" in seconds else None,
    )


class Validation:
    """``with run.validation():`` ends validation on exit; a bare call ends at the next marker
    (``run`` is the loop's ``TrackedRun``)."""

    def __init__(self, run: Any) -> None:
        self.run = run

    def __enter__(self) -> Validation:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.run._on:
            try:
                self.run._end_validation()
            except Exception as err:
                self.run._fail("validation", err)
