"""A real AWS API server on 127.0.0.1 for the cloud tests: moto's ``ThreadedMotoServer``.

Every boto3 client reaches it through ``AWS_ENDPOINT_URL`` (boto3's own setting, no test hook in
the code). Credentials are sentinels, so tests can prove no secret lands in a run, a report or a
log. moto has no Pricing API: the pricing tests use botocore's Stubber instead.
"""

from __future__ import annotations

import socket
import urllib.request

import pytest

SENTINEL_KEY_ID = "AKIASENTINEL7KEY0ID1"
SENTINEL_SECRET = "sentinel-secret-never-stored-7f3a9c"
SENTINEL_TOKEN = "sentinel-session-token-never-stored-51d2"
SENTINELS = (SENTINEL_KEY_ID, SENTINEL_SECRET, SENTINEL_TOKEN)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class MotoServer:
    """A moto server that a test may stop and start again on the same port."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._cls = ThreadedMotoServer
        self._server = None

    def start(self) -> None:
        self._server = self._cls(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")
        urllib.request.urlopen(request, timeout=10).read()


def point_at(monkeypatch: pytest.MonkeyPatch, url: str, tmp_path) -> None:
    """boto3's environment: the endpoint, sentinel credentials, no files, no metadata service."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", SENTINEL_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SENTINEL_SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SENTINEL_TOKEN)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "advisor-cache"))


def assert_no_secrets(*places) -> None:
    """No sentinel credential in any file under the given folders, nor in the given texts."""
    from pathlib import Path

    for place in places:
        if isinstance(place, Path):
            files = [place] if place.is_file() else [p for p in place.rglob("*") if p.is_file()]
            for file in files:
                data = file.read_bytes()
                for secret in SENTINELS:
                    assert secret.encode() not in data, f"{secret[:12]}… found in {file}"
        else:
            for secret in SENTINELS:
                assert secret not in str(place), f"{secret[:12]}… found in output"
