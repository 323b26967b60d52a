"""The S3 run store: run directories as objects under ``s3://bucket/prefix/<run_id>/``.

Same layout as a local store, key for path. Readers list the prefix and keep a local mirror of
what they need (manifests, records, trace summaries — raw profiles stay in S3), downloading only
objects whose ETag changed since the last command; the commands then read the mirror with the
ordinary :class:`~advisor.store.reader.RunReader`, so the formats live in one place. Writers
upload from a local folder (the callback's spool, :mod:`advisor.cloud.spool`).

IAM: ``s3:ListBucket`` on the bucket, ``s3:GetObject`` to read, ``s3:PutObject`` to write.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
from calendar import timegm
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.cloud.aws import Budget, client, cloud_error, join_key, parse_s3_url
from advisor.cloud.price_cache import cache_dir
from advisor.errors import CloudError

MIRROR_INDEX = ".advisor-mirror.json"
MANIFEST = "run.json"
LARGE_FILE = 32 * 1024 * 1024  # above this, a multipart upload


@dataclass(frozen=True)
class RemoteObject:
    key: str  # relative to the store prefix
    etag: str
    size: int
    modified: float  # seconds since the epoch


def local_folder(kind: str, url: str) -> Path:
    """Where a URL's local copy lives: ``<cache>/<kind>/<bucket>/<prefix>`` (``kind``: s3 or
    spool)."""
    bucket, prefix = parse_s3_url(url)
    safe = [
        re.sub(r"[^A-Za-z0-9._=-]", "_", part)
        for part in prefix.split("/")
        if part not in ("", ".", "..")
    ]
    base = (
        Path(os.environ["ADVISOR_SPOOL_DIR"]).expanduser()
        if kind == "spool" and os.environ.get("ADVISOR_SPOOL_DIR")
        else cache_dir() / kind
    )
    return base.joinpath(bucket, *safe)


def raw_profile(rel: str) -> bool:
    """Raw profiler output (large, only needed to summarise again): not mirrored."""
    parts = rel.split("/")
    return "traces" in parts[:-1] and not rel.endswith(".json")


class S3Store:
    """One ``s3://bucket/prefix`` store (or one run of it)."""

    def __init__(self, url: str, s3: Any = None, budget: Budget = "command") -> None:
        self.url = url.rstrip("/")
        self.bucket, self.prefix = parse_s3_url(self.url)
        self._s3 = s3
        self.budget = budget

    @property
    def s3(self) -> Any:
        if self._s3 is None:
            self._s3 = client("s3", budget=self.budget)
        return self._s3

    def key(self, rel: str) -> str:
        return join_key(self.prefix, rel)

    # -- reading ------------------------------------------------------------------------------
    def objects(self, under: str = "") -> list[RemoteObject]:
        """Every object below the prefix (paginated), with keys relative to the prefix."""
        start = join_key(self.prefix, under)
        listing_prefix = f"{start}/" if start else ""
        out: list[RemoteObject] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": listing_prefix}
            if token:
                kwargs["ContinuationToken"] = token
            try:
                page = self.s3.list_objects_v2(**kwargs)
            except Exception as exc:
                raise cloud_error(
                    exc,
                    f"{self.url}: listing the run store",
                    f"s3:ListBucket on arn:aws:s3:::{self.bucket}",
                ) from None
            for obj in page.get("Contents") or []:
                rel = obj["Key"][len(listing_prefix) :]
                if rel and not rel.endswith("/"):
                    modified = obj.get("LastModified")
                    stamp = timegm(modified.utctimetuple()) if modified is not None else 0.0
                    out.append(
                        RemoteObject(
                            rel,
                            str(obj.get("ETag", "")).strip('"'),
                            int(obj.get("Size", 0)),
                            float(stamp),
                        )
                    )
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return out

    def mirror(self, local_root: Path | None = None) -> Path:
        """Bring the local mirror up to date with the store and return its folder."""
        root = local_root or local_folder("s3", self.url)
        root.mkdir(parents=True, exist_ok=True)
        index_path = root / MIRROR_INDEX
        try:
            index: dict[str, str] = json.loads(index_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            index = {}
        remote = {o.key: o for o in self.objects() if not raw_profile(o.key)}
        for rel in [r for r in index if r not in remote]:  # deleted in S3: deleted here
            _remove(root / rel)
            index.pop(rel, None)
        # manifests last: a run appears to readers only once its records are in place
        for obj in sorted(remote.values(), key=lambda o: (o.key.endswith(MANIFEST), o.key)):
            target = _inside(root, obj.key)
            if index.get(obj.key) == obj.etag and target.is_file():
                continue
            self._download(obj, target)
            index[obj.key] = obj.etag
        tmp = index_path.with_name(index_path.name + ".tmp")
        tmp.write_text(json.dumps(index, sort_keys=True), encoding="utf-8")
        os.replace(tmp, index_path)
        return root

    def _download(self, obj: RemoteObject, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.part")
        try:
            response = self.s3.get_object(Bucket=self.bucket, Key=self.key(obj.key))
            with open(tmp, "wb") as fh:
                shutil.copyfileobj(response["Body"], fh, 1 << 20)
        except Exception as exc:
            _remove(tmp)
            raise cloud_error(
                exc,
                f"s3://{self.bucket}/{self.key(obj.key)}: download",
                f"s3:GetObject on arn:aws:s3:::{self.bucket}/*",
            ) from None
        os.replace(tmp, target)
        if obj.modified:
            os.utime(target, (obj.modified, obj.modified))  # staleness checks see S3's time

    # -- writing ------------------------------------------------------------------------------
    def upload_file(self, path: Path, rel: str, *, whole_lines: bool = False) -> int:
        """Upload one file as ``prefix/rel``; returns the bytes sent (S3 checks their MD5).

        ``whole_lines``: send only up to the last newline (a record file being appended to).
        """
        key = self.key(rel)
        what = f"s3://{self.bucket}/{key}: upload"
        try:
            size = path.stat().st_size
            if size > LARGE_FILE and not whole_lines:
                from boto3.s3.transfer import TransferConfig

                self.s3.upload_file(
                    str(path), self.bucket, key, Config=TransferConfig(use_threads=False)
                )
                return size
            data = path.read_bytes()
        except OSError as exc:
            raise CloudError(f"{path}: cannot read for upload ({exc.strerror or exc})") from None
        except Exception as exc:
            raise cloud_error(exc, what, f"s3:PutObject on arn:aws:s3:::{self.bucket}/*") from None
        if whole_lines and data and not data.endswith(b"\n"):
            data = data[: data.rfind(b"\n") + 1]
        md5 = base64.b64encode(hashlib.md5(data).digest()).decode(
            "ascii"
        )  # integrity, not security
        try:
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=data, ContentMD5=md5)
        except Exception as exc:
            raise cloud_error(exc, what, f"s3:PutObject on arn:aws:s3:::{self.bucket}/*") from None
        return len(data)

    def upload_tree(
        self,
        folder: Path,
        rel_prefix: str,
        *,
        changed: Callable[[str, os.stat_result], bool] = lambda rel, st: True,
        done: Callable[[str, os.stat_result, int], None] | None = None,
    ) -> list[str]:
        """Upload the files of ``folder`` that ``changed`` selects, the manifest last."""
        sent: list[str] = []
        for rel in sorted(_files(folder), key=lambda r: (r == MANIFEST, r)):
            path = folder / rel
            try:
                stat = path.stat()
            except OSError:
                continue
            if not changed(rel, stat):
                continue
            size = self.upload_file(
                path, join_key(rel_prefix, rel), whole_lines=rel.endswith(".jsonl")
            )
            if done is not None:
                done(rel, stat, size)
            sent.append(rel)
        return sent


def _files(folder: Path) -> Iterable[str]:
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            if name.startswith("."):  # our own state files, temporaries
                continue
            yield os.path.relpath(os.path.join(dirpath, name), folder).replace(os.sep, "/")


def _inside(root: Path, rel: str) -> Path:
    target = (root / rel).resolve()
    if root.resolve() not in target.parents:
        raise CloudError(f"object key {rel!r} points outside the mirror folder")
    return target


def _remove(path: Path) -> None:
    try:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    except OSError:
        pass
