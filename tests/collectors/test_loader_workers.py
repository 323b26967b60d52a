"""The what-if shuts down the torch DataLoader worker pools its segments made (Keras on torch).

Keras on torch leaves a segment's iterator in a reference cycle when training stops mid-epoch;
when the garbage collector destroys it, torch waits its 5 s status interval for each worker
before killing it (~10 s a segment with two workers: the torch_workers candidate could not be
measured in a 20 s budget). ``release_loader_workers`` shuts such pools down while they are
intact. These tests build the cycle directly (the test process runs Keras on TensorFlow, so
they name the torch backend as the what-if does there) and check the facts: the pool made inside ``own_garbage`` is shut and its processes are gone; a pool
made before it, the user's, still serves batches.
"""

from __future__ import annotations

import pytest

from advisor.collectors.baseline_rounds import own_garbage, release_loader_workers

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # starts worker processes


def _loader():
    data = torch.utils.data.TensorDataset(torch.arange(256, dtype=torch.float32).reshape(128, 2))
    return torch.utils.data.DataLoader(data, batch_size=8, num_workers=2, timeout=60)


def _abandoned_iterator(loader):
    """Started, stopped mid-epoch and left in a cycle, as a stopped Keras fit leaves it."""
    it = iter(loader)
    next(it)
    it.cycle = it  # only the garbage collector can free it now
    return it._workers


def test_a_pool_made_inside_is_shut_and_the_users_pool_is_untouched():
    users = iter(_loader())
    next(users)
    with own_garbage():
        workers = _abandoned_iterator(_loader())
        assert all(w.is_alive() for w in workers)
        assert release_loader_workers("tensorflow") == 0  # there tf.data owns the loader's iterator
        assert release_loader_workers("torch") == 1
        assert not any(w.is_alive() for w in workers)  # joined, not left for the collector's 5 s waits
    assert next(users)[0].shape == (8, 2)  # the user's pool still serves batches
    assert all(w.is_alive() for w in users._workers)
    users._shutdown_workers()


def test_nothing_is_shut_outside_own_garbage():
    workers = _abandoned_iterator(_loader())
    try:
        assert release_loader_workers("torch") == 0  # nothing frozen: every iterator may be the user's
        assert all(w.is_alive() for w in workers)
    finally:
        for w in workers:
            w.terminate()
