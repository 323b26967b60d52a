"""What one ``fit`` call and one epoch cost beyond their steps, per backend (one process each).

    KERAS_BACKEND=tensorflow python benchmarks/fit_overhead.py [mlp|cnn|rnn]

Times (median of 5) ``fit`` of 1 epoch × 4 steps, 1 × 64 and 4 × 64 on the model families of
``benchmarks/backends.py`` (4,096 rows, batch 64, ``jit_compile`` as Keras resolves it), and
solves for the step, the cost per ``fit`` call and per further epoch; also 4 × 64 without
shuffling against with. Why whole fits of short epochs on TensorFlow read slower than the backend
what-if (benchmarks/RESULTS.md). Noisy on a busy host: a negative cost is noise.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from backends import BATCH, build  # noqa: E402


def main() -> int:
    model, x, y = build(sys.argv[1] if len(sys.argv) > 1 else "mlp")
    model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0)  # compiling, warming up

    def timed(epochs: int, steps: int, shuffle: bool = True) -> float:
        runs = []
        for _ in range(5):
            started = time.perf_counter()
            model.fit(
                x,
                y,
                batch_size=BATCH,
                epochs=epochs,
                steps_per_epoch=steps,
                shuffle=shuffle,
                verbose=0,
            )
            runs.append(time.perf_counter() - started)
        return sorted(runs)[2]

    short, epoch, four, four_unshuffled = (
        timed(1, 4),
        timed(1, 64),
        timed(4, 64),
        timed(4, 64, False),
    )
    step = (epoch - short) / 60
    print(
        f"{os.environ.get('KERAS_BACKEND', 'tensorflow')}: step {step * 1e3:.2f} ms; per fit call "
        f"{(short - 4 * step) * 1e3:.0f} ms; "
        f"per further epoch {((four - epoch) / 3 - 64 * step) * 1e3:.0f} ms; "
        f"4×64 unshuffled ÷ shuffled {four_unshuffled / four:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
