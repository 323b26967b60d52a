"""A variational autoencoder with its own ``train_step``, fed ``fit(x)`` without targets.

As in the Keras VAE example: an encoder to a 2-d latent (mean, log-variance, a sampled ``z``), a
decoder back to 28×28 images, and a ``train_step`` that adds the reconstruction loss to the KL
term and trains on the images alone. The data are arrays in memory (random images of MNIST's
shape), so the input costs next to nothing: the cached-input baseline must measure that and
decide the input rules (M108 passes), which needs the cached batch to reach ``train_step`` as
training gave it — the bare array, not ``(x,)``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

LATENT = 2


def build() -> object:
    import keras
    import tensorflow as tf
    from keras import layers, ops

    class Sampling(layers.Layer):
        """z = mean + exp(log_var / 2) · ε."""

        def call(self, inputs):
            z_mean, z_log_var = inputs
            epsilon = keras.random.normal(ops.shape(z_mean))
            return z_mean + ops.exp(0.5 * z_log_var) * epsilon

    images = keras.Input((28, 28, 1))
    h = layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")(images)
    h = layers.Conv2D(64, 3, strides=2, padding="same", activation="relu")(h)
    h = layers.Dense(16, activation="relu")(layers.Flatten()(h))
    z_mean, z_log_var = layers.Dense(LATENT)(h), layers.Dense(LATENT)(h)
    encoder = keras.Model(images, [z_mean, z_log_var, Sampling()([z_mean, z_log_var])])

    latent = keras.Input((LATENT,))
    h = layers.Reshape((7, 7, 64))(layers.Dense(7 * 7 * 64, activation="relu")(latent))
    h = layers.Conv2DTranspose(64, 3, strides=2, padding="same", activation="relu")(h)
    h = layers.Conv2DTranspose(32, 3, strides=2, padding="same", activation="relu")(h)
    decoder = keras.Model(
        latent, layers.Conv2DTranspose(1, 3, padding="same", activation="sigmoid")(h)
    )

    class VAE(keras.Model):
        def __init__(self, encoder, decoder, **kwargs):
            super().__init__(**kwargs)
            self.encoder, self.decoder = encoder, decoder
            self.total_loss_tracker = keras.metrics.Mean(name="loss")

        @property
        def metrics(self):
            return [self.total_loss_tracker]

        def call(self, data):
            return self.decoder(self.encoder(data)[2])

        def train_step(self, data):
            with tf.GradientTape() as tape:
                z_mean, z_log_var, z = self.encoder(data)
                reconstruction = self.decoder(z)
                reconstruction_loss = ops.mean(
                    ops.sum(keras.losses.binary_crossentropy(data, reconstruction), axis=(1, 2))
                )
                kl = -0.5 * (1 + z_log_var - ops.square(z_mean) - ops.exp(z_log_var))
                loss = reconstruction_loss + ops.mean(ops.sum(kl, axis=1))
            grads = tape.gradient(loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
            self.total_loss_tracker.update_state(loss)
            return {"loss": self.total_loss_tracker.result()}

    vae = VAE(encoder, decoder)
    vae.compile(optimizer=keras.optimizers.Adam())
    return vae


def main() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    images = rng.uniform(size=(4096, 28, 28, 1)).astype("float32")
    common.fit(build(), images, seconds=common.family_seconds(100), batch_size=64)


if __name__ == "__main__":
    main()
