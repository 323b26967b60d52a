"""What a data file is, from its first bytes: compression (gzip, zlib, zstd, ...) and format
(TFRecord, Parquet, JPEG, tar shards, ...). Magic bytes decide; the extension only breaks ties.

Used for local files (``advisor.probes.storage``) and for the ranged reads of S3 objects
(``advisor.cloud.s3data``): one classifier, so both sides name things the same way.
"""

from __future__ import annotations

import os
import struct
import zlib

HEAD_BYTES = 1024  # enough for every magic below (a tar header ends at byte 512)

_COMPRESSION_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x04\x22\x4d\x18", "lz4"),
    (b"\xff\x06\x00\x00sNaPpY", "snappy"),
)
_FORMAT_MAGIC = (
    (b"PAR1", "parquet"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"\x93NUMPY", "npy"),
    (b"\x89HDF\r\n\x1a\n", "hdf5"),
    (b"ARROW1", "arrow"),
    (b"Obj\x01", "avro"),
    (b"ORC", "orc"),
    (b"PK\x03\x04", "zip"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
)
COMPRESSION_EXTENSIONS = {
    ".gz": "gzip",
    ".gzip": "gzip",
    ".zst": "zstd",
    ".zstd": "zstd",
    ".zlib": "zlib",
    ".bz2": "bzip2",
    ".xz": "xz",
    ".lz4": "lz4",
    ".snappy": "snappy",
}
TEXT_EXTENSIONS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "jsonl", ".txt": "text"}
IMAGE_FORMATS = frozenset({"jpeg", "png", "gif", "webp", "tiff"})


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC: rotate right by 15 and add a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def is_tfrecord(head: bytes) -> bool:
    """A TFRecord file starts with a uint64 length and the masked CRC-32C of those 8 bytes."""
    if len(head) < 12:
        return False
    (stored,) = struct.unpack("<I", head[8:12])
    return masked_crc32c(head[:8]) == stored


def _compression_of(head: bytes) -> str | None:
    for magic, name in _COMPRESSION_MAGIC:
        if head.startswith(magic):
            return name
    if (
        len(head) >= 2
        and head[0] == 0x78
        and head[1] in (0x01, 0x5E, 0x9C, 0xDA)
        and ((head[0] << 8) | head[1]) % 31 == 0
        and not is_tfrecord(head)
    ):
        try:  # a real zlib stream inflates; a record that merely starts with 0x78 does not
            zlib.decompressobj().decompress(head, HEAD_BYTES)
        except zlib.error:
            return None
        return "zlib"
    return None


def _inflate_head(head: bytes, compression: str) -> bytes | None:
    """The first bytes inside a gzip or zlib stream (None for other codecs or damage)."""
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "zlib": zlib.MAX_WBITS}.get(compression)
    if wbits is None:
        return None
    try:
        return zlib.decompressobj(wbits).decompress(head, HEAD_BYTES)
    except zlib.error:
        return None


def _format_of(head: bytes, name: str) -> str | None:
    for magic, fmt in _FORMAT_MAGIC:
        if head.startswith(magic):
            return fmt
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    if is_tfrecord(head):
        return "tfrecord"
    ext = _inner_extension(name)
    if ext in TEXT_EXTENSIONS and _printable(head):
        return TEXT_EXTENSIONS[ext]
    return None


def _inner_extension(name: str) -> str:
    base, ext = os.path.splitext(name.lower())
    if ext in COMPRESSION_EXTENSIONS:
        ext = os.path.splitext(base)[1]
    return ext


def _printable(head: bytes) -> bool:
    sample = head[:512]
    return bool(sample) and sum(32 <= b < 127 or b in (9, 10, 13) for b in sample) >= 0.95 * len(
        sample
    )


def classify(head: bytes, name: str = "") -> tuple[str | None, str | None]:
    """(compression, format) of a file from its first bytes and its name.

    compression: ``none``, ``gzip``, ``zlib``, ``zstd``, ``bzip2``, ``xz``, ``lz4``, ``snappy``, or
    None when the file is empty. format: ``tfrecord``, ``parquet``, ``jpeg``, ``png``, ``tar``,
    ``npy``, ``csv``, ... (looked up inside gzip and zlib streams), or None when unrecognised.
    A compression extension (``.gz``) counts only when the bytes do not say otherwise.
    """
    if not head:
        return None, None
    compression = _compression_of(head)
    if compression is None:
        fmt = _format_of(head, name)
        if fmt is None:
            ext_codec = COMPRESSION_EXTENSIONS.get(os.path.splitext(name.lower())[1])
            if ext_codec is not None:
                return ext_codec, None
        return "none", fmt
    inner = _inflate_head(head, compression)
    return compression, (_format_of(inner, name) if inner else None)
