"""Many tiny files: the data set is 4,096 TFRecord files of one small record each.

Every batch of 256 opens 256 files. Reading is parallel (``num_parallel_reads=AUTOTUNE``) and
prefetched, and decoding a record is a cheap reinterpretation of its bytes, so the pipeline does
everything right but its files: each costs a file open and a reader of its own, far more than
its 260 bytes. Pack the records into shards of about 100 MB
(S301); caching right after the reading stage shows the cost (S304).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

FILES = 4096
FEATURES = 64


def write_files(folder: Path) -> list[str]:
    import numpy as np
    import tensorflow as tf

    x, y = common.arrays(FILES, features=FEATURES)
    paths = []
    for i in range(FILES):  # one record each: 64 float32 features and the label, as raw bytes
        path = folder / f"part-{i:05d}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            writer.write(np.append(x[i], np.float32(y[i])).astype("float32").tobytes())
        paths.append(str(path))
    return paths


def main() -> None:
    import tensorflow as tf

    def parse(record):  # and augment with a random sign, so there is nothing to cache after it
        values = tf.ensure_shape(tf.io.decode_raw(record, tf.float32), [FEATURES + 1])
        sign = tf.where(tf.random.uniform(()) < 0.5, -1.0, 1.0)
        return sign * values[:FEATURES], tf.cast(values[FEATURES], tf.int64)

    with tempfile.TemporaryDirectory(prefix="advisor-tiny-files-") as folder:
        files = write_files(Path(folder))
        ds = tf.data.TFRecordDataset(files, num_parallel_reads=tf.data.AUTOTUNE)
        ds = (
            ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(256).prefetch(tf.data.AUTOTUNE)
        )
        common.fit(common.mlp(), ds)


if __name__ == "__main__":
    main()
