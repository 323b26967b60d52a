"""The what-if shuts down the input workers its segments made: torch DataLoader worker pools
(Keras on torch) and the enqueuers of keras.utils.PyDataset inputs with workers.

Keras on torch leaves a segment's iterator in a reference cycle when training stops mid-epoch;
when the garbage collector destroys it, torch waits its 5 s status interval for each worker
before killing it (~10 s a segment with two workers: the torch_workers candidate could not be
measured in a 20 s allowance). ``release_loader_workers`` shuts such pools down while they are
intact. These tests build the cycle directly (the test process runs Keras on TensorFlow, so
they name the torch backend as the what-if does there) and check the facts: the pool made inside
``own_garbage`` is shut and its processes are gone; a pool made before it, the user's, still serves
batches.
"""

from __future__ import annotations

import pytest

from advisor.experiments.cleanup import (
    own_garbage,
    release_loader_workers,
    stop_pydataset_enqueuers,
)

pytestmark = pytest.mark.slow  # starts worker processes and threads


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _loader(torch):
    data = torch.utils.data.TensorDataset(torch.arange(256, dtype=torch.float32).reshape(128, 2))
    return torch.utils.data.DataLoader(data, batch_size=8, num_workers=2, timeout=60)


def _abandoned_iterator(loader):
    """Started, stopped mid-epoch and left in a cycle, as a stopped Keras fit leaves it."""
    it = iter(loader)
    next(it)
    it.cycle = it  # only the garbage collector can free it now
    return it._workers


def test_a_pool_made_inside_is_shut_and_the_users_pool_is_untouched(torch):
    users = iter(_loader(torch))
    next(users)
    with own_garbage():
        workers = _abandoned_iterator(_loader(torch))
        assert len(workers) == 2 and all(w.is_alive() for w in workers)
        assert release_loader_workers("tensorflow") == 0  # there tf.data owns the loader's iterator
        assert release_loader_workers("torch") == 1
        assert not any(
            w.is_alive() for w in workers
        )  # joined, not left for the collector's 5 s waits
    assert next(users)[0].shape == (8, 2)  # the user's pool still serves batches
    assert len(users._workers) == 2 and all(w.is_alive() for w in users._workers)
    users._shutdown_workers()


def test_nothing_is_shut_outside_own_garbage(torch):
    workers = _abandoned_iterator(_loader(torch))
    try:
        assert (
            release_loader_workers("torch") == 0
        )  # nothing frozen: every iterator may be the user's
        assert len(workers) == 2 and all(w.is_alive() for w in workers)
    finally:
        for w in workers:
            w.terminate()


def _started_enqueuer():
    """A PyDataset enqueuer as a Keras fit stopped inside an epoch leaves it: started, one batch
    taken, its feeding thread waiting to queue more."""
    import keras
    import numpy as np
    from keras.src.trainers.data_adapters.py_dataset_adapter import OrderedEnqueuer

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            return np.full((4, 2), i, "float32"), np.zeros((4, 1), "float32")

    enqueuer = OrderedEnqueuer(Batches(workers=2), workers=2, max_queue_size=2)
    enqueuer.start()
    first = next(enqueuer.get())
    assert first[0][0, 0] == 0 and enqueuer.run_thread.is_alive()
    return enqueuer


def test_a_pydataset_enqueuer_made_inside_is_stopped_and_the_users_is_untouched():
    users = _started_enqueuer()
    with own_garbage():
        ours = _started_enqueuer()
        thread = ours.run_thread
        assert stop_pydataset_enqueuers() == 1  # only ours: the user's was made before
        assert not ours.running and not thread.is_alive()
    assert users.running and users.run_thread.is_alive()
    assert next(users.get())[0][0, 0] == 1  # the user's still feeds, in order
    users.stop()


def test_no_enqueuer_is_stopped_outside_own_garbage():
    enqueuer = _started_enqueuer()
    try:
        assert stop_pydataset_enqueuers() == 0  # nothing frozen: every enqueuer may be the user's
        assert enqueuer.running
    finally:
        enqueuer.stop()


def test_a_measurement_leaving_does_not_thaw_one_still_inside():
    """Two measurements overlap (threads of one process): the first one out must not unfreeze the
    objects the other relies on. Before, the other then found nothing of its own to stop (a
    loaded suite run, where an earlier test's measurement thread was still ending)."""
    import gc
    import threading

    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with own_garbage():
            inside.set()
            leave.wait(30)

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(30)
    with own_garbage():
        ours = _started_enqueuer()
        leave.set()
        thread.join(30)
        assert not thread.is_alive() and gc.get_freeze_count() > 0
        assert stop_pydataset_enqueuers() == 1
        assert not ours.running
    assert gc.get_freeze_count() == 0  # the last one out thawed them
