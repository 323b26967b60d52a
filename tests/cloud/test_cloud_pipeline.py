"""At train time: a tf.data pipeline that reads ``s3://`` objects itself is detected and its objects
sized like ``advisor data`` does (S301, S305), and the input mode is recorded (S302): "Stream" for
such a pipeline, the channel's mode inside a SageMaker job."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
from click.testing import CliRunner

from advisor.cli.main import cli

pytestmark = pytest.mark.slow
boto3 = pytest.importorskip("boto3")
tf = pytest.importorskip("tensorflow")

OBJECT_BYTES = 200_000


def findings(run_id: str, codes: str) -> dict:
    out = CliRunner().invoke(
        cli, ["check", run_id, "--select", codes, "--format", "json", "--exit-zero"]
    )
    assert out.exit_code == 0, out.output
    return {f["code"]: f for f in json.loads(out.stdout)["findings"]}


def test_pipeline_reading_s3_is_sized_and_streams(aws, runs_dir):
    import keras

    import advisor

    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="pipe-data")
    rng = np.random.default_rng(0)
    paths, sizes = [], []
    for i in range(24):
        body = zlib.compress(rng.bytes(OBJECT_BYTES + 1000 * i), 0)
        s3.put_object(Bucket="pipe-data", Key=f"shards/part-{i:03d}.z", Body=body)
        paths.append(f"s3://pipe-data/shards/part-{i:03d}.z")
        sizes.append(len(body))

    reader = boto3.client("s3")

    def load(path):  # a streaming reader: the pipeline fetches each object from S3 itself
        bucket, key = path.numpy().decode()[len("s3://") :].split("/", 1)
        raw = zlib.decompress(reader.get_object(Bucket=bucket, Key=key)["Body"].read())
        features = np.frombuffer(raw[:32], dtype=np.uint8).astype(np.float32) / 255.0
        return features, features[:1]

    ds = (
        tf.data.Dataset.from_tensor_slices(paths)
        .map(lambda p: tf.py_function(load, [p], [tf.float32, tf.float32]))
        .map(lambda x, y: (tf.ensure_shape(x, [32]), tf.ensure_shape(y, [1])))
        .batch(4)
        .repeat()
    )
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    callback = advisor.AdvisorCallback(window_seconds=0.2, log_every_seconds=None, telemetry=False)
    model.fit(ds, steps_per_epoch=6, epochs=2, callbacks=[callback], verbose=0)

    facts = advisor.RunService(runs_dir).analyse(callback.writer.run_id).facts
    assert (
        facts["cloud.input_mode"] == "Stream"
        and facts["cloud.input_mode_source"] == "pipeline-paths"
    )
    assert facts["storage.files"] == 24 and facts["cloud.data_objects"] == 24
    assert facts["cloud.data_object_bytes.p50"] == pytest.approx(np.median(sizes))
    assert facts["storage.file_bytes.p90"] == pytest.approx(np.percentile(sizes, 90))
    assert (
        facts["storage.compression"] == "zlib"
        and facts["cloud.data_location"] == "s3://pipe-data/shards/part-0"
    )
    result = findings(callback.writer.run_id, "S301,S302")
    assert result["S301"]["status"] == "fail"  # 200 kB objects, 24 of them: far below ~100 MB
    assert result["S302"]["status"] == "pass" and "Stream" in result["S302"]["message"]


def test_sagemaker_file_channel_is_read_inside_the_job(runs_dir, monkeypatch):
    import keras

    import advisor

    config = {
        "train": {
            "TrainingInputMode": "File",
            "S3DistributionType": "FullyReplicated",
            "RecordWrapperType": "None",
        }
    }
    monkeypatch.setenv("SM_INPUT_DATA_CONFIG", json.dumps(config))
    x, y = np.random.rand(256, 4).astype("float32"), np.random.rand(256, 1).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    callback = advisor.AdvisorCallback(log_every_seconds=None, telemetry=False)
    model.fit(x, y, batch_size=32, epochs=1, callbacks=[callback], verbose=0)
    facts = advisor.RunService(runs_dir).analyse(callback.writer.run_id).facts
    assert (
        facts["cloud.input_mode"] == "File"
        and facts["cloud.input_mode_source"] == "sagemaker-config"
    )
    assert findings(callback.writer.run_id, "S302")["S302"]["status"] == "fail"
