"""Opening a fit's run: what the callback learns at train begin, its manifest, writer and
session; and the options that say where the run goes and what it is called."""

from __future__ import annotations

import atexit
import time
import weakref
from typing import TYPE_CHECKING, Any

from advisor.collectors.fitinfo import discover
from advisor.collectors.ledger import ADVISOR, Ledger
from advisor.collectors.manifest import instance_and_price, run_manifest
from advisor.collectors.preemption import SigtermHandler
from advisor.collectors.session import Session
from advisor.probes.distributed import detect_rank_world
from advisor.probes.framework import detect_framework, steps_per_execution

if TYPE_CHECKING:
    from advisor.collectors.options import AdvisorOptions


# Runs still open when the interpreter exits (fit raised, or the script exited mid-fit): each is
# closed as failed, with that reason.
OPEN_RUNS: weakref.WeakSet[Any] = weakref.WeakSet()


def _close_open_runs() -> None:
    for callback in list(OPEN_RUNS):
        callback._abort("the process exited before training ended")


atexit.register(_close_open_runs)


def _terminate_open_runs(signal_name: str) -> None:
    for callback in list(OPEN_RUNS):
        callback._terminate(signal_name)


# Installed while a run is open (from the main thread): SIGTERM closes the open runs as terminated.
SIGTERM = SigtermHandler(_terminate_open_runs)


def open_run(
    opts: AdvisorOptions, fit_locals: dict[str, Any] | None, model: Any, t0: float
) -> tuple[Any, Session, str | None, Any]:
    """(writer, session, the S3 store's URL or None, the price found) of a fit beginning now;
    ``t0`` is when the callback's ``on_train_begin`` began: the budget's wall clock starts there."""
    from advisor.store.paths import store_url
    from advisor.store.writer import RunWriter

    rank, world = detect_rank_world()
    data, fit_callbacks = discover(fit_locals)
    flavor, backend, framework = detect_framework(model)
    spe = steps_per_execution(model)
    instance, found = instance_and_price(opts)
    url = store_url(opts.runs_dir)
    price = found.usd_per_hour
    manifest = run_manifest(
        framework=framework,
        num_workers=world,
        steps_per_execution=spe,
        instance=instance,
        price=(price, found.source),
        options=opts,
        config=opts.recorded(),
    )
    runs_dir: Any = opts.runs_dir
    if url is not None:  # an S3 store: write to the local spool, upload in the background
        from advisor.cloud.spool import spool_root

        runs_dir = spool_root(url, rank)
    writer = RunWriter(runs_dir, rank=rank, manifest=manifest, name=opts.name)
    session = Session(
        writer=writer,
        model=model,
        rank=rank,
        num_workers=world,
        options=opts,
        data=data,
        fit_callbacks=fit_callbacks,
        keras_flavor=flavor,
        backend=backend,
        steps_per_execution=spe,
        train_begin_t=time.perf_counter(),
        price_per_hour=price,
        ledger=Ledger(t0, ADVISOR),
    )
    return writer, session, url, found


def report_closed(writer: Any, where: object) -> None:
    """Say where a finished run was written — or, when its end record could not be written (a
    full disk, a read-only store), that it is not complete and how it will read."""
    import logging

    log = logging.getLogger("advisor")
    if writer.end_lost is None:
        log.info("advisor: run %s written to %s", writer.run_id, where)
    else:
        log.warning(
            "advisor: run %s in %s is not complete: its end record could not be written (%s); "
            "`advisor check` will not judge it (killed, or end record lost)",
            writer.run_id,
            where,
            writer.end_lost,
        )
