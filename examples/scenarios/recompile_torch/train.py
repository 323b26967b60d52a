"""A custom torch loop whose ``torch.compile``d step sees a different batch size every few steps
(batches cut from variable-size groups, no ``drop_last``), compiled with ``dynamic=False``: Dynamo's
size guard fails at every new size and the step compiles again, up to its recompile limit.

``advisor.track`` times each compilation through Dynamo's compile callbacks and reads the failed
guard ("tensor 'x' size mismatch at index 0") for its cause; C453 names the step.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

SIZES = [96, 80, 112, 64, 72, 120]  # the batch size changes every 4 steps


def main() -> None:
    import torch

    import advisor

    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = common.arrays(max(SIZES) * 4)
    features, labels = torch.from_numpy(x), torch.from_numpy(y)
    # wide enough that a step takes ~10 ms: the loop's cost is its recompiles, not Python's
    # per-step dispatch (a sub-millisecond step would make G551 the larger finding)
    model = torch.nn.Sequential(
        torch.nn.Linear(common.FEATURES, 1024),
        torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024),
        torch.nn.ReLU(),
        torch.nn.Linear(1024, common.CLASSES),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def forward_loss(batch: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(model(batch), target)

    # aot_eager: Dynamo and AOTAutograd as with the default backend, without Inductor's C++ code
    # generation (tens of seconds a compile on a busy 2-core machine); the guards are the same.
    compiled = torch.compile(forward_loss, dynamic=False, backend="aot_eager")
    step = 0
    t0 = time.perf_counter()
    with advisor.track(backend="torch") as run:
        while time.perf_counter() - t0 < common.SECONDS:
            for i in range(len(SIZES) * 4):
                size = SIZES[(i // 4 + step // 24) % len(SIZES)]
                optimizer.zero_grad()
                loss = compiled(features[:size], labels[:size])
                loss.backward()
                optimizer.step()
                step += 1
                run.step(size)
            run.epoch()
    print(f"loop: {time.perf_counter() - t0:.2f} s, {step} steps")


if __name__ == "__main__":
    main()
