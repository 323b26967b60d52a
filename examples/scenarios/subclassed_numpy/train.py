"""A subclassed model fed numpy arrays, as in the Keras guide "Making new layers and models via
subclassing": a ``keras.Model`` whose layers are attributes and whose ``call`` wires them, with
a residual block, trained with ``fit(x, y, batch_size=...)`` on arrays in memory.

Nothing here is slow: the baseline must measure the input (arrays cost little) and the input
rules must pass; what fails is advice of lesser weight.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def model():
    import keras
    from keras import layers

    class ResidualMLP(keras.Model):
        def __init__(self, width=256, classes=common.CLASSES):
            super().__init__()
            self.inp = layers.Dense(width, activation="relu")
            self.hidden = [layers.Dense(width, activation="relu") for _ in range(2)]
            self.norm = layers.LayerNormalization()
            self.out = layers.Dense(classes)

        def call(self, x, training=False):
            h = self.inp(x)
            residual = h
            for layer in self.hidden:
                h = layer(h)
            return self.out(self.norm(h + residual))

    net = ResidualMLP()
    net.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return net


def main() -> None:
    x, y = common.arrays(16384)
    common.fit(model(), x, seconds=common.family_seconds(60), y=y, batch_size=128)


if __name__ == "__main__":
    main()
