"""A real AWS API server on 127.0.0.1 for the cloud tests: moto's server, in a process of its own.

Every boto3 client reaches it through ``AWS_ENDPOINT_URL`` (boto3's own setting, no test hook in
the code). Credentials are sentinels, so tests can prove no secret lands in a run, a report or a
log. moto has no Pricing API: the pricing tests use botocore's Stubber instead.

The server runs in its own interpreter, as AWS runs on its own machines. It used to be moto's
``ThreadedMotoServer``, a thread of the test process, and in two of four full suites (a CI run
among them) it stopped answering for more than 40 s after a training test in the same process
(every request thread waiting, the process idle; ``PutMetricData`` and the next ``reset`` timed
out), while the same tests alone never did. Whatever the test process's threads hold, a server
process does not share it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

SENTINEL_KEY_ID = "AKIASENTINEL7KEY0ID1"
SENTINEL_SECRET = "sentinel-secret-never-stored-7f3a9c"
SENTINEL_TOKEN = "sentinel-session-token-never-stored-51d2"
SENTINELS = (SENTINEL_KEY_ID, SENTINEL_SECRET, SENTINEL_TOKEN)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# moto's server, ending by itself when the process that started it is gone (a killed test worker
# leaves no server behind). Not ``preexec_fn``: Python code between fork and exec can deadlock
# in a process with many threads, and a test process with TensorFlow loaded has dozens.
SERVER = """
import os, sys, threading, time
parent = os.getppid()
def watch():
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
from moto.server import main
main(["-H", sys.argv[1], "-p", sys.argv[2]])
"""


class MotoServer:
    """A moto server process that a test may stop and start again on the same port (a restarted
    server starts empty, as moto keeps its state in memory)."""

    START_TIMEOUT_S = 60.0  # a busy 2-core host imports moto in ~1 s, quiet in ~0.6 s

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(tempfile.mkdtemp(prefix="moto-server-")) / "server.log"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        with self.log.open("ab") as log:  # never a pipe: nothing reads it, and a full pipe blocks
            self._process = subprocess.Popen(
                [sys.executable, "-c", SERVER, "127.0.0.1", str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
            )
        deadline = time.monotonic() + self.START_TIMEOUT_S
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"the moto server exited with {self._process.returncode}: "
                    f"{self.log.read_text(errors='replace')[-2000:]}"
                )
            try:
                urllib.request.urlopen(f"{self.url}/moto-api/data.json", timeout=2).read()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"the moto server did not answer within {self.START_TIMEOUT_S:g} s"
                    ) from None
                time.sleep(0.05)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)

    def reset(self) -> None:
        """Empty every service, and stop enforcing IAM again."""
        self._post("reset")
        self.enforce_iam(after=None)

    def enforce_iam(self, after: int | None = 0) -> None:
        """From ``after`` more requests on, check every request's credentials and IAM policies
        (moto's ``INITIAL_NO_AUTH_ACTION_COUNT``, set in the server's process); None: never."""
        self._post("reset-auth", b"inf" if after is None else str(after).encode())

    def _post(self, path: str, data: bytes = b"") -> None:
        request = urllib.request.Request(
            f"{self.url}/moto-api/{path}",
            data=data,
            method="POST",
            headers={"Content-Type": "text/plain"},
        )  # a form's body is not ``data``
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
    # The server is on loopback: no proxy of the host may stand between (a proxy can rewrite the
    # request, and moto's IAM check then sees a signature that does not match).
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def assert_no_secrets(*places) -> None:
    """No sentinel credential in any file under the given folders, nor in the given texts; and
    something was searched (a folder never written and empty texts would prove nothing)."""
    from pathlib import Path

    searched = 0
    for place in places:
        if isinstance(place, Path):
            files = [place] if place.is_file() else [p for p in place.rglob("*") if p.is_file()]
            searched += len(files)
            for file in files:
                data = file.read_bytes()
                for secret in SENTINELS:
                    assert secret.encode() not in data, f"{secret[:12]}… found in {file}"
        else:
            searched += bool(str(place))
            for secret in SENTINELS:
                assert secret not in str(place), f"{secret[:12]}… found in output"
    assert searched, f"no file and no text to search in {places}"
