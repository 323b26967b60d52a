"""A torch DataLoader with num_workers=0, on Keras's torch backend.

With no workers, the DataLoader builds every batch on the training thread, between steps:
each sample here costs a third of a millisecond of Python (a 21 ms batch of 64), the model's
step a few milliseconds. ``num_workers=4`` builds batches ahead, in other processes (C401).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ["KERAS_BACKEND"] = "torch"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import torch
    from torch.utils.data import DataLoader, Dataset

    torch.set_num_threads(1)
    x, y = common.arrays(6144)

    class Samples(Dataset):
        def __len__(self) -> int:
            return len(x)

        def __getitem__(self, i: int):
            time.sleep(0.00033)  # decoding one sample in Python
            return torch.from_numpy(x[i]), torch.tensor(y[i])

    loader = DataLoader(Samples(), batch_size=64, shuffle=True, num_workers=0)
    common.fit(common.mlp(), loader)


if __name__ == "__main__":
    main()
