"""A memory leak in a custom torch loop (``advisor.track``): the loop keeps every step's tensors.

The loop keeps each batch's hidden activations and its loss as tensors, meaning to average them
at the end; the list is never cleared, so the process grows by about 1 MB a step (48 MB an
epoch). ``advisor check`` must call it a leak (M180) with its rate and when memory runs out, and
point at the loop's own code. A loop cannot tell the advisor how many epochs it will run, so the
finding gives the deadline in epochs and hours but cannot say whether it comes before the end
(an info finding, not a warning). The fix: keep ``loss.item()``, and detach or drop activations.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

BATCH = 256
STEPS = 48  # steps per epoch


def main() -> None:
    import torch

    import advisor

    torch.set_num_threads(1)
    x, y = (torch.from_numpy(a) for a in common.arrays(BATCH * STEPS))
    body = torch.nn.Sequential(torch.nn.Linear(common.FEATURES, 1024), torch.nn.ReLU())
    head = torch.nn.Linear(1024, common.CLASSES)
    params = [*body.parameters(), *head.parameters()]
    optimizer = torch.optim.Adam(params)
    kept: list[tuple[torch.Tensor, torch.Tensor]] = []  # never cleared: the leak
    t0 = time.perf_counter()
    with advisor.track(batch_size=BATCH, runs_dir=os.environ.get("ADVISOR_RUNS_DIR")) as run:
        while time.perf_counter() - t0 < common.SECONDS:
            for i in range(STEPS):
                xb, yb = x[i * BATCH : (i + 1) * BATCH], y[i * BATCH : (i + 1) * BATCH]
                hidden = body(xb)
                loss = torch.nn.functional.cross_entropy(head(hidden), yb)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                kept.append((hidden, loss))  # tensors, not numbers
                run.step()
            run.epoch()
    print(f"fit: {time.perf_counter() - t0:.2f} s, {len(kept) // STEPS} epochs")


if __name__ == "__main__":
    main()
