"""A text classifier built from custom layers, as in the Keras "text classification with
Transformer" example: a token-and-position embedding and a Transformer block, each a
``keras.layers.Layer`` subclass (the block without ``get_config``, as users often leave it), fed
integer token arrays (random, of IMDB's shape: 200 tokens of a 20,000-word vocabulary).

The arrays are in memory, so the input costs little; the diagnosis must run through (no crash on
layers without a config), the baseline must decide or be skipped with its reason, and no
unmeasured generic advice may lead.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

VOCAB, MAXLEN, EMBED, HEADS, FF = 20_000, 200, 32, 2, 32


def model():
    import keras
    from keras import layers, ops

    class TransformerBlock(layers.Layer):  # no get_config: it cannot be rebuilt from a config
        def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
            super().__init__()
            self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.ffn = keras.Sequential(
                [layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)]
            )
            self.norm1 = layers.LayerNormalization(epsilon=1e-6)
            self.norm2 = layers.LayerNormalization(epsilon=1e-6)
            self.drop1, self.drop2 = layers.Dropout(rate), layers.Dropout(rate)

        def call(self, inputs, training=False):
            attended = self.drop1(self.att(inputs, inputs), training=training)
            out1 = self.norm1(inputs + attended)
            return self.norm2(out1 + self.drop2(self.ffn(out1), training=training))

    class TokenAndPositionEmbedding(layers.Layer):
        def __init__(self, maxlen, vocab_size, embed_dim, **kwargs):
            super().__init__(**kwargs)
            self.maxlen, self.vocab_size, self.embed_dim = maxlen, vocab_size, embed_dim
            self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
            self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

        def call(self, x):
            positions = ops.arange(0, ops.shape(x)[-1], 1)
            return self.token_emb(x) + self.pos_emb(positions)

        def get_config(self):
            return {
                **super().get_config(),
                "maxlen": self.maxlen,
                "vocab_size": self.vocab_size,
                "embed_dim": self.embed_dim,
            }

    inputs = keras.Input((MAXLEN,), dtype="int32")
    x = TokenAndPositionEmbedding(MAXLEN, VOCAB, EMBED)(inputs)
    x = layers.GlobalAveragePooling1D()(TransformerBlock(EMBED, HEADS, FF)(x))
    x = layers.Dropout(0.1)(layers.Dense(20, activation="relu")(layers.Dropout(0.1)(x)))
    classifier = keras.Model(inputs, layers.Dense(2, activation="softmax")(x))
    classifier.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return classifier


def main() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    tokens = rng.integers(1, VOCAB, size=(4096, MAXLEN)).astype("int32")
    labels = rng.integers(0, 2, size=(4096,)).astype("int64")
    common.fit(model(), tokens, seconds=common.family_seconds(60), y=labels, batch_size=32)


if __name__ == "__main__":
    main()
