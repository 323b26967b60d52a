"""Cleanup after a measurement: what it made — iterators, prefetch threads, DataLoader worker
pools, PyDataset enqueuers — is destroyed before it returns, and nothing the user made is
touched."""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def own_garbage(collect: Callable[[], object] = gc.collect) -> Iterator[None]:
    """Around a baseline or a what-if: destroy the iterators it made before it returns (with
    ``collect``). An iterator over a pipeline copy that is still alive at interpreter exit, its
    prefetch thread waiting in a ``tf.py_function`` for the GIL, hangs the process's shutdown.

    The objects older than the measurement are frozen (``gc.freeze``) meanwhile, so its
    collections look only at what it made: a full collection of a process with TensorFlow, JAX
    and torch loaded took 0.35–0.4 s on the project's 2-vCPU development VM, in the test suite's
    long-lived process more, against well under a millisecond with the freeze
    (benchmarks/RESULTS.md, "Figures quoted in the experiments' docstrings"). When something
    else has frozen objects already (a pre-fork server does),
    nothing is frozen here, the collection is a full one, and their freeze is left alone.

    Measurements may overlap (two threads of one process): the first in freezes, the last out
    unfreezes, so one leaving never thaws the objects another still relies on."""
    global _holders
    with _lock:
        ours = _holders > 0 or gc.get_freeze_count() == 0
        if ours:
            if _holders == 0:
                gc.freeze()
            _holders += 1
    try:
        yield
    finally:
        try:
            collect()
        finally:
            if ours:
                with _lock:
                    _holders -= 1
                    if _holders == 0:
                        gc.unfreeze()


_lock = threading.Lock()
# Measurements inside own_garbage that rely on its freeze: while one is, the older objects are
# frozen and the young generations hold only what measurements made.
_holders = 0


def tear_down(backend: str | None) -> None:
    """After a segment: destroy the input it iterated (its iterator, prefetch threads, loader
    workers) before the next segment starts. A ``fit`` stopped mid-epoch leaves its iterator
    to the garbage collector, and a parallel pipeline's threads go on filling its buffers
    meanwhile: on the heavy-augmentation scenario's CPU-bound pipeline on the 2-vCPU development
    VM, the next segment (the cached input's) read 15–40 % slower beside them in three pairs
    (benchmarks/baseline_teardown.py; benchmarks/RESULTS.md, "The baseline tears each segment's
    input down"). Cheap inside ``own_garbage`` (only what the measurement made is looked at)."""
    release_loader_workers(backend)
    stop_pydataset_enqueuers()
    gc.collect()


def release_loader_workers(backend: str | None) -> int:
    """Shut down the worker processes of the torch ``DataLoader`` iterators the measurement made,
    on Keras's torch ``backend`` (elsewhere: nothing).

    Keras on torch iterates the loader itself, and training stopped mid-epoch leaves that
    iterator in a reference cycle; destroyed by the garbage collector, a worker pool's shutdown
    waits torch's status interval (5 s) for each worker before killing it (~10 s a segment with
    two workers), while the same shutdown called on the intact iterator took ~0.04 s on the
    development VM. On TensorFlow a tf.data generator owns the loader's iterator (a segment of
    the same candidate tore down in 0.02–0.3 s there): not ours to shut. Both figures:
    benchmarks/RESULTS.md, "After each segment collects its own garbage". Only the young
    generations are searched, and only while ``own_garbage`` has frozen everything older, so an
    iterator the user made is never touched; persistent pools belong to their loader and are
    left alone. Returns the iterators shut."""
    module = sys.modules.get("torch.utils.data.dataloader")
    kind = getattr(module, "_MultiProcessingDataLoaderIter", None)
    if backend != "torch" or kind is None or not _holders:
        return 0
    shut = 0
    for obj in _made_here():
        if (
            type(obj) is kind
            and not getattr(obj, "_persistent_workers", False)
            and not getattr(obj, "_shutdown", True)
        ):
            try:
                obj._shutdown_workers()
                shut += 1
            except Exception:  # a pool already half gone: the collector finishes it
                pass
    return shut


def stop_pydataset_enqueuers() -> int:
    """Stop the worker threads and pools of the ``keras.utils.PyDataset`` inputs (workers > 1 or
    multiprocessing) that the measurement trained on. Returns the enqueuers stopped.

    Keras stops a PyDataset's enqueuer when an epoch's iterator runs to its end; a ``fit`` that
    stops inside an epoch (every timed segment does) leaves it running. Its feeding thread then
    waits forever to queue one more batch, and with it stay a pool of workers (threads, or
    processes with multiprocessing) and up to ``max_queue_size`` finished batches: six threads a
    segment with ``workers=2``, so the seven segments of a ``pydataset_workers`` what-if in a
    test run left 42 behind in the user's process (benchmarks/RESULTS.md, "Figures quoted in
    the experiments' docstrings"). Keras's own ``stop()`` (the one an epoch's end calls) drains
    the queue, so its batches are freed, and joins the thread. Only enqueuers made while
    ``own_garbage`` froze the older objects are looked at; the user's own are never touched."""
    module = sys.modules.get("keras.src.trainers.data_adapters.py_dataset_adapter")
    kind = getattr(module, "PyDatasetEnqueuer", None)
    if kind is None or not _holders:
        return 0
    stopped = 0
    for obj in _made_here():
        if isinstance(obj, kind) and getattr(obj, "running", False):
            try:
                obj.stop()
                stopped += 1
            except Exception:  # a worker's error re-raised by the drain: the enqueuer is stopped
                pass
    return stopped


def _made_here() -> Iterator[Any]:
    """The objects of the young generations: while ``own_garbage`` has frozen everything older,
    only what the measurement made (callers check ``_holders`` first)."""
    for generation in (0, 1, 2):
        yield from gc.get_objects(generation)
