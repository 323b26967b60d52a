"""Data checks of local folders and S3 prefixes: counts, size distribution, compression by magic
bytes, formats, the S301/S305 verdicts, and attaching them to a run (a real moto server for S3)."""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from aws_server import assert_no_secrets
from click.testing import CliRunner

from advisor.cli.main import cli
from advisor.probes.datacheck import check_local
from advisor.probes.formats import classify, is_tfrecord, masked_crc32c

KB = 1000


def tfrecord_bytes(payloads: list[bytes]) -> bytes:
    """TFRecord framing written by hand: length, masked CRC of the length, data, masked CRC."""
    import struct

    out = io.BytesIO()
    for data in payloads:
        length = struct.pack("<Q", len(data))
        out.write(
            length
            + struct.pack("<I", masked_crc32c(length))
            + data
            + struct.pack("<I", masked_crc32c(data))
        )
    return out.getvalue()


def tfrecords_of_sizes(sizes: list[int]) -> list[bytes]:
    """A TFRecord file of one record for each size (framing included), the record a prefix of one
    random buffer: ``tfrecord_bytes`` computes each CRC-32C in pure Python (~10 s for the 28 MB of
    1,205 objects), here one pass over the longest buffer gives the CRC of every prefix."""
    import struct

    table = []  # CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord uses
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    lengths = [max(1, size - 16) for size in sizes]  # 16 bytes of framing per record
    data = np.random.default_rng(1).bytes(max(lengths))
    wanted, masked = set(lengths), {}
    crc = 0xFFFFFFFF
    for i, byte in enumerate(data, start=1):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
        if i in wanted:
            value = crc ^ 0xFFFFFFFF
            masked[i] = (((value >> 15) | (value << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    records = []
    for n in lengths:
        length = struct.pack("<Q", n)
        records.append(
            length
            + struct.pack("<I", masked_crc32c(length))
            + data[:n]
            + struct.pack("<I", masked[n])
        )
    shortest = lengths.index(min(lengths))
    assert records[shortest] == tfrecord_bytes([data[: lengths[shortest]]])  # the same framing
    return records


def test_formats_and_compression_from_real_files(tmp_path):
    tf = pytest.importorskip("tensorflow")
    from PIL import Image

    plain, zipped, zl = (str(tmp_path / n) for n in ("a.tfrecord", "b.tfrecord.gz", "c.tfrecord"))
    for path, option in ((plain, None), (zipped, "GZIP"), (zl, "ZLIB")):
        with tf.io.TFRecordWriter(path, options=option) as writer:
            for _ in range(3):
                writer.write(os.urandom(5000))
    head = lambda p: Path(p).read_bytes()[:1024]  # noqa: E731
    assert classify(head(plain), plain) == ("none", "tfrecord")
    assert classify(head(zipped), zipped) == ("gzip", "tfrecord")
    assert classify(head(zl), zl) == ("zlib", "tfrecord")
    # our hand framing agrees with TensorFlow's reader
    own = tmp_path / "own.tfrecord"
    own.write_bytes(tfrecord_bytes([b"x" * 100, b"y" * 7]))
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(own))] == [b"x" * 100, b"y" * 7]
    Image.new("RGB", (8, 8)).save(tmp_path / "i.jpg")
    Image.new("RGB", (8, 8)).save(tmp_path / "i.png")
    np.save(tmp_path / "a.npy", np.zeros(3))
    with tarfile.open(tmp_path / "shard-000.tar", "w") as tar:
        tar.add(tmp_path / "i.jpg", arcname="0.jpg")
    for name, expected in (
        ("i.jpg", ("none", "jpeg")),
        ("i.png", ("none", "png")),
        ("a.npy", ("none", "npy")),
        ("shard-000.tar", ("none", "tar")),
    ):
        assert classify(head(tmp_path / name), name) == expected, name
    assert classify(gzip.compress(b"a,b\n1,2\n" * 50), "t.csv.gz") == ("gzip", "csv")
    assert classify(b"\x28\xb5\x2f\xfd" + b"\0" * 60, "x.bin")[0] == "zstd"
    assert classify(b"", "empty") == (None, None)


def test_parquet_written_by_duckdb(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    target = tmp_path / "t.parquet"
    duckdb.sql(f"COPY (SELECT range AS x FROM range(1000)) TO '{target}' (FORMAT parquet)")
    assert classify(target.read_bytes()[:1024], str(target)) == ("none", "parquet")


def test_zlib_magic_inside_an_uncompressed_tfrecord_is_not_compression():
    # a record of 0x9c78 bytes starts with 78 9c, the zlib header: the CRC says it is a TFRecord
    data = tfrecord_bytes([b"\0" * 0x9C78])
    assert data[:2] == b"\x78\x9c" and is_tfrecord(data[:1024])
    assert classify(data[:1024], "shard") == ("none", "tfrecord")


def write_shards(folder: Path, sizes: list[int], compress: bool = False) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, payload in enumerate(tfrecords_of_sizes(sizes)):
        path = folder / f"shard-{i:04d}.tfrecord{'.gz' if compress else ''}"
        path.write_bytes(gzip.compress(payload, compresslevel=1) if compress else payload)
        paths.append(path)
    return paths


def test_local_folder_sizes_are_exact(tmp_path):
    sizes = [(i + 1) * 10 * KB for i in range(20)]  # 10 kB … 200 kB
    write_shards(tmp_path / "data", sizes)
    (tmp_path / "data" / ".hidden").write_bytes(b"x" * 10**6)
    summary = check_local(str(tmp_path / "data"))
    assert summary.objects == 20 and summary.total_bytes == sum(sizes)
    assert summary.bytes_p50 == pytest.approx(np.percentile(sizes, 50))
    assert summary.bytes_p10 == pytest.approx(np.percentile(sizes, 10))
    assert summary.bytes_p90 == pytest.approx(np.percentile(sizes, 90))
    assert summary.compression == "none" and summary.format == "tfrecord"
    facts = summary.facts()
    assert facts["storage.files"] == 20 and "cloud.data_object_bytes.p50" not in facts


def test_data_command_on_a_local_folder_decides_s301(tmp_path):
    write_shards(tmp_path / "small", [20 * KB] * 32)
    out = CliRunner().invoke(cli, ["data", str(tmp_path / "small"), "--quiet"])
    assert out.exit_code == 0, out.output
    assert "32 objects" in out.output and "median 20.0 KB" in out.output
    assert "S301 fail" in out.output and "tfrecord" in out.output
    assert "S305 pass: no decompression cost (compression none)" in out.output
    write_shards(tmp_path / "zipped", [20 * KB] * 4, compress=True)
    zipped = CliRunner().invoke(cli, ["data", str(tmp_path / "zipped"), "--quiet"])
    assert "compression: gzip (4 of 4 sampled)" in zipped.output
    assert (
        "S305 unknown" in zipped.output
    )  # compressed: whether it costs needs a training run's CPU
    big = CliRunner().invoke(cli, ["data", str(tmp_path / "nowhere")])
    assert big.exit_code == 2 and big.output.strip().endswith("no such file or folder")


def make_bucket(s3, name: str, prefix: str, sizes: list[int], compress: bool) -> None:
    s3.create_bucket(Bucket=name)
    for i, payload in enumerate(tfrecords_of_sizes(sizes)):
        body = zlib.compress(payload, 1) if compress else payload
        s3.put_object(Bucket=name, Key=f"{prefix}/part-{i:05d}.tfrecord", Body=body)
    s3.put_object(Bucket=name, Key=f"{prefix}/", Body=b"")  # a console "folder" marker


def seed_objects(s3, bucket: str, prefix: str, sizes: list[int]) -> None:
    """TFRecord objects put over HTTP by eight threads (one ``PutObject`` each at a time): what is
    under test is the listing and the ranged reads, not how the objects got there."""
    from concurrent.futures import ThreadPoolExecutor

    def put(item: tuple[int, bytes]) -> None:
        s3.put_object(Bucket=bucket, Key=f"{prefix}/part-{item[0]:05d}.tfrecord", Body=item[1])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, enumerate(tfrecords_of_sizes(sizes))))


@pytest.mark.slow
def test_s3_prefix_check_paginates_and_sniffs_by_ranged_reads(aws, tmp_path):
    import boto3

    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="train-data")
    sizes = [1000 + 37 * i for i in range(1205)]  # more than one page of 1000 keys
    seed_objects(s3, "train-data", "imagenet/train", sizes)
    s3.put_object(Bucket="train-data", Key="imagenet/train/", Body=b"")  # a console "folder" marker
    s3.put_object(Bucket="train-data", Key="imagenet/train-old/x.tfrecord", Body=b"ignored")
    from advisor.service.cloud import check_data

    seen: list[int] = []
    summary = check_data("s3://train-data/imagenet/train", progress=lambda n, b: seen.append(n))
    assert summary.objects == 1205 and summary.total_bytes == sum(sizes)
    assert summary.bytes_p50 == pytest.approx(np.percentile(sizes, 50))
    assert summary.compression == "none" and summary.formats == {"tfrecord": summary.sniffed}
    assert seen and seen[-1] == 1205
    facts = summary.facts()
    assert facts["cloud.data_object_bytes.p50"] == facts["storage.file_bytes.p50"]
    assert facts["cloud.data_objects"] == 1205


def test_s3_compressed_objects_attached_to_a_run(aws, tmp_path, runs_dir):
    import boto3

    from advisor.service import RunService
    from advisor.store.writer import RunWriter

    make_bucket(boto3.client("s3"), "zdata", "shards", [50 * KB] * 40, compress=True)
    writer = RunWriter(runs_dir, manifest={})
    writer.close()
    runner = CliRunner()
    out = runner.invoke(
        cli, ["data", "s3://zdata/shards", "--into", writer.run_id, "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    assert (
        payload["summary"]["compression"] == "zlib"
        and payload["facts"]["storage.format"] == "tfrecord"
    )
    facts = RunService(runs_dir).analyse(writer.run_id).facts
    assert facts["storage.compression"] == "zlib" and facts["cloud.data_objects"] == 40
    assert facts["cloud.data_location"] == "s3://zdata/shards"
    check = runner.invoke(
        cli, ["check", writer.run_id, "--select", "S301", "--format", "json", "--exit-zero"]
    )
    finding = json.loads(check.stdout)["findings"][0]
    assert finding["code"] == "S301" and finding["status"] == "fail"
    assert_no_secrets(runs_dir, Path(os.environ["ADVISOR_CACHE_DIR"]), out.output, check.output)


def test_missing_bucket_and_denied_access_are_one_line(aws, tmp_path):
    import boto3

    runner = CliRunner()
    out = runner.invoke(cli, ["data", "s3://no-such-bucket/x"])
    assert out.exit_code == 2
    assert out.output.strip().splitlines() == [
        "advisor: error: s3://no-such-bucket/x/: listing: bucket 'no-such-bucket' does not exist"
    ]

    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="locked")
    s3.put_object(Bucket="locked", Key="d/a.bin", Body=b"x" * 100)
    iam = boto3.client("iam")
    iam.create_user(UserName="nobody")
    key = iam.create_access_key(UserName="nobody")["AccessKey"]
    aws.enforce_iam()  # moto now checks IAM: this user has no policy (the fixture's reset ends it)
    env = {
        "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
        "AWS_SESSION_TOKEN": "",
    }
    os.environ.pop("AWS_SESSION_TOKEN", None)
    denied = runner.invoke(cli, ["data", "s3://locked/d"], env=env)
    aws.enforce_iam(after=None)
    assert denied.exit_code == 2
    lines = denied.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("advisor: error: s3://locked/d/: listing: ")
    # moto enforces IAM: a user without a policy is denied. (On one CI host moto answered
    # SignatureDoesNotMatch to the same request; the advisor then says the credentials were
    # refused, which the test below pins down on its own.)
    assert (
        "access denied (AccessDenied); the IAM policy needs s3:ListBucket on arn:aws:s3:::locked"
        in lines[0]
        or "AWS refused the credentials (SignatureDoesNotMatch)" in lines[0]
    ), lines[0]
    assert key["SecretAccessKey"] not in denied.output


def test_refused_credentials_and_denied_permissions_say_different_things():
    """The mapping of AWS error codes to one-line messages (botocore's own ClientError)."""
    from botocore.exceptions import ClientError

    from advisor.cloud.aws import cloud_error

    def error(code: str) -> str:
        exc = ClientError({"Error": {"Code": code, "Message": "x"}}, "ListObjectsV2")
        return str(
            cloud_error(exc, "s3://b/p/: listing", permission="s3:ListBucket on arn:aws:s3:::b")
        )

    assert error("AccessDenied") == (
        "s3://b/p/: listing: access denied (AccessDenied); "
        "the IAM policy needs s3:ListBucket on arn:aws:s3:::b"
    )
    for code in ("SignatureDoesNotMatch", "InvalidAccessKeyId", "ExpiredToken"):
        message = error(code)
        assert message.startswith(
            f"s3://b/p/: listing: AWS refused the credentials ({code}); check the access key"
        )
        assert "IAM policy" not in message
