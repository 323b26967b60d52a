"""A baseline's or a what-if's garbage: what it made is collected before it returns, and only that
is looked at.

Each check runs in a fresh interpreter. In the suite's long-lived process other threads (a run's
heartbeat, loader threads) allocate and trigger collections of their own, and CPython's
``gc.collect()`` returns at once while another thread is collecting: a clean-clone CI run saw the
cycle outlive ``own_garbage()`` that way (noted in docs/testing.md)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PRELUDE = '''
import gc, threading, weakref
from advisor.experiments.cleanup import own_garbage

class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the collector frees it

def garbage():
    """A cycle nothing else refers to (made in a frame that is gone when it returns)."""
    return weakref.ref(Node())

def holders(ref):
    node = ref()
    holders = gc.get_referrers(node) if node else []
    kinds = [type(r).__name__ for r in holders if r is not node.__dict__]
    return f"held by {kinds}; threads {[t.name for t in threading.enumerate()]}"
'''


def run(body: str) -> None:
    code = PRELUDE + textwrap.dedent(body) + "\nprint('ok')\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]


def test_what_the_baseline_made_is_collected_and_older_objects_are_unfrozen_after():
    run("""
        older = Node()
        with own_garbage():
            assert gc.get_freeze_count() > 0  # the objects older than the baseline are left out
            ref = garbage()
        assert ref() is None, holders(ref)  # the cycle made inside was collected on the way out
        assert gc.get_freeze_count() == 0  # and nothing stays frozen
        assert older.me is older
    """)


def test_a_freeze_already_in_place_is_left_as_it_was():
    run("""
        gc.freeze()  # as a pre-fork server does
        frozen = gc.get_freeze_count()
        with own_garbage():
            ref = garbage()
        assert ref() is None, holders(ref)  # a full collection instead
        # their freeze untouched: an unfreeze would leave none (frozen objects can still die of
        # their reference counts meanwhile, so the count itself may drop by a few)
        assert gc.get_freeze_count() > frozen // 2, (gc.get_freeze_count(), frozen)
    """)


def test_a_failing_check_fails():
    """The runner above is no check that cannot fail: a false assertion in the child fails it."""
    try:
        run("assert False, 'expected'")
    except AssertionError as e:
        assert "expected" in str(e)
    else:
        raise AssertionError("a failing child passed")
