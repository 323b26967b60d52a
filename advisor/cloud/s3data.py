"""The data check of S3 prefixes and of the ``s3://`` paths a tf.data pipeline reads.

Lists with ``list_objects_v2`` page by page (streamed into
:class:`~advisor.probes.datacheck.DataCheck`, never held as a listing), then reads the first KiB of
a random sample of objects with a ranged GET to recognise compression and format. IAM:
``s3:ListBucket`` on the bucket and ``s3:GetObject`` on the objects.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Iterator
from typing import Any

from advisor.cloud.aws import Budget, client, cloud_error, parse_s3_url
from advisor.errors import CloudError
from advisor.probes.datacheck import MAX_OBJECTS, SNIFF_SAMPLE, DataCheck, DataSummary, Progress
from advisor.probes.formats import HEAD_BYTES

WILDCARDS = "*?["


def list_objects(
    s3: Any, bucket: str, prefix: str, deadline: float | None = None
) -> Iterator[tuple[str, int]]:
    """(key, size) under ``prefix``, page by page; folder markers (``.../``) skipped."""
    what = f"s3://{bucket}/{prefix}: listing"
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": 1000}
        if token:
            kwargs["ContinuationToken"] = token
        try:
            page = s3.list_objects_v2(**kwargs)
        except Exception as exc:
            raise cloud_error(exc, what, f"s3:ListBucket on arn:aws:s3:::{bucket}") from None
        for obj in page.get("Contents") or []:
            key = obj["Key"]
            if not key.endswith("/"):
                yield key, int(obj.get("Size", 0))
        token = page.get("NextContinuationToken")
        if not page.get("IsTruncated") or not token:
            return
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"s3://{bucket}/{prefix}: listing stopped at the time limit")


def head_reader(s3: Any, bucket: str) -> Any:
    """A function key → first bytes, by a ranged GET (a one-line error when it is refused)."""

    def read(key: str) -> bytes:
        try:
            body = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes=0-{HEAD_BYTES - 1}")["Body"]
            try:
                return bytes(body.read())
            finally:
                body.close()
        except Exception as exc:
            raise cloud_error(
                exc, "ranged read", f"s3:GetObject on arn:aws:s3:::{bucket}/*"
            ) from None

    return read


def check_s3(
    url: str,
    *,
    sample: int = SNIFF_SAMPLE,
    limit: int = MAX_OBJECTS,
    progress: Progress | None = None,
    budget: Budget = "command",
    s3: Any = None,
) -> DataSummary:
    """The data check of ``s3://bucket/prefix`` (a folder; else a key prefix)."""
    bucket, prefix = parse_s3_url(url)
    s3 = s3 or client("s3", budget=budget)
    check = DataCheck(url, sample=sample, limit=limit, progress=progress)
    folder = f"{prefix}/" if prefix else ""
    check.add_all(list_objects(s3, bucket, folder))
    if not check.sizes and prefix:
        check.add_all(list_objects(s3, bucket, prefix))
    if not check.sizes:
        raise CloudError(f"{url}: no objects there")
    return _finish(check, s3, bucket)


def _finish(check: DataCheck, s3: Any, bucket: str) -> DataSummary:
    summary = check.finish(head_reader(s3, bucket))
    summary.unreadable = [u.replace("ranged read: ", "") for u in summary.unreadable]
    return summary


def size_paths(
    paths: list[str],
    *,
    seconds: float = 10.0,
    sample: int = 8,
    limit: int = 100_000,
    s3: Any = None,
) -> DataSummary:
    """The data check of the ``s3://`` paths (keys or globs) a pipeline reads, in one bucket.

    Lists the longest common prefix once and keeps the objects the paths name; gives up listing
    after ``seconds`` (training is waiting) and sizes what it has, saying so.
    """
    by_bucket: dict[str, list[str]] = {}
    for path in paths:
        bucket, key = parse_s3_url(path)
        by_bucket.setdefault(bucket, []).append(key)
    bucket = max(by_bucket, key=lambda b: len(by_bucket[b]))
    keys = by_bucket[bucket]
    patterns = [k for k in keys if any(c in k for c in WILDCARDS)]
    exact = {k for k in keys if k not in patterns}
    prefix = _common_prefix([k.split("*")[0].split("?")[0].split("[")[0] for k in keys])
    s3 = s3 or client("s3", budget="training")
    check = DataCheck(f"s3://{bucket}/{prefix}", sample=sample, limit=limit)
    deadline = time.monotonic() + seconds
    try:
        for key, size in list_objects(s3, bucket, prefix, deadline):
            wanted = key in exact or any(fnmatch.fnmatchcase(key, p) for p in patterns)
            if wanted and not check.add(key, size):
                break
    except TimeoutError:
        check.truncated = True
    return _finish(check, s3, bucket)


def _common_prefix(keys: list[str]) -> str:
    if not keys:
        return ""
    first, last = min(keys), max(keys)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]
