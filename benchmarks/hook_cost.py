"""What the time budget adds to one call of a user callback's hook: wrapped against bare.

    python benchmarks/hook_cost.py [--calls 200000] [--repeats 7]

The goodput collector (advisor/collectors/goodput_wrap.py) wraps every hook a fit's other
callbacks override; each call of a wrapped hook reads the clock twice and updates the ledger.
This times a no-op ``on_train_batch_end`` called directly and through the wrapper, in
alternating repeats, and prints the median extra cost per call, and what five such callbacks
add to a 1 ms step. The whole-fit overhead (noisier, a ratio of two fits) is
``benchmarks/overhead.py --user-callbacks 5``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    from advisor.collectors.goodput import GoodputCollector
    from advisor.collectors.ledger import TRAIN, Ledger

    class UserCallback:
        def on_train_batch_end(self, batch, logs=None):
            return None

    bare = UserCallback()
    ledger = Ledger(time.perf_counter(), TRAIN)
    wrapper = GoodputCollector()._hook_wrapper(
        bare.on_train_batch_end, "cb:UserCallback.on_train_batch_end", ledger, bare, False
    )

    def timed(call) -> float:
        t0 = time.perf_counter()
        for i in range(args.calls):
            call(i, None)
        return (time.perf_counter() - t0) / args.calls

    extra = []
    for r in range(args.repeats):
        a, b = (
            (timed(bare.on_train_batch_end), timed(wrapper))
            if r % 2 == 0
            else tuple(reversed((timed(wrapper), timed(bare.on_train_batch_end))))
        )
        extra.append(b - a)
        print(f"repeat {r + 1}: bare {a * 1e6:.3f} µs, wrapped {b * 1e6:.3f} µs per call")
    cost = statistics.median(extra)
    print(
        f"median extra per wrapped call: {cost * 1e6:.3f} µs; five callbacks on a 1 ms step: "
        f"{5 * cost / 1e-3:.2%} (target ≤ 1%)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
