"""A baseline's or a what-if's garbage: what it made is collected before it returns, and only that
is looked at."""

from __future__ import annotations

import gc
import weakref

from advisor.collectors.baseline_rounds import own_garbage


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def garbage() -> weakref.ref:
    """A cycle nothing else refers to (made in a frame that is gone when it returns)."""
    return weakref.ref(Node())


def holders(ref: weakref.ref) -> str:
    """On failure: who still holds the cycle, and which threads run."""
    import threading

    node = ref()
    kinds = [type(r).__name__ for r in gc.get_referrers(node) if r is not node.__dict__] if node else []
    return f"held by {kinds}; threads {[t.name for t in threading.enumerate()]}"


def test_what_the_baseline_made_is_collected_and_older_objects_are_unfrozen_after():
    older = Node()
    with own_garbage():
        assert gc.get_freeze_count() > 0  # the objects older than the baseline are left out
        ref = garbage()
    assert ref() is None, holders(ref)  # the cycle made inside was collected on the way out
    assert gc.get_freeze_count() == 0  # and nothing stays frozen
    assert older.me is older


def test_a_freeze_already_in_place_is_left_as_it_was():
    gc.freeze()  # as a pre-fork server does
    try:
        frozen = gc.get_freeze_count()
        with own_garbage():
            ref = garbage()
        assert ref() is None, holders(ref)  # a full collection instead
        # their freeze untouched: an unfreeze would leave none (frozen objects can still die of
        # their reference counts meanwhile, so the count itself may drop by a few)
        assert gc.get_freeze_count() > frozen // 2, (gc.get_freeze_count(), frozen)
    finally:
        gc.unfreeze()
