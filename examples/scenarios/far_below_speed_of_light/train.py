"""Far below the speed of light, for a known reason: the step mostly waits for its input.

A tiny MLP (one hidden layer of 16) computes a batch of 16 in well under a millisecond, but its
input goes through a ``tf.py_function`` map without ``num_parallel_calls`` that holds Python for
2 ms per element (decoding, say): about 32 ms of waiting before every step. The dataset repeats
(one iterator for the whole fit), so the epochs' starts do not stall. The fit reaches well under a
thousandth of what this CPU computes (G552), and the largest measured reason for the gap is the
input wait (the baseline's cached-input measurement), far ahead of compile and callbacks; the
rule that names the cause, C401, ranks first. The sleep costs no CPU, so a busy machine does not
shorten the wait.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

ELEMENT_SECONDS = 0.002
BATCH = 16
STEPS = 64  # an epoch of about two seconds


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(1024)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024, seed=0).repeat()
    ds = ds.map(common.py_function_map(ELEMENT_SECONDS)).batch(BATCH).prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(width=16, depth=1), ds, steps_per_epoch=STEPS)


if __name__ == "__main__":
    main()
