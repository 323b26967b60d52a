"""Fixtures of the cloud tests: one moto server for the session, emptied for each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aws_server import MotoServer, point_at


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    pytest.importorskip("moto.server", reason="the cloud tests need moto[server] (the test extra)")
    server = MotoServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def aws(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch, tmp_path) -> MotoServer:
    """The shared server, emptied, with this test's environment pointing at it."""
    moto_server.reset()
    point_at(monkeypatch, moto_server.url, tmp_path)
    return moto_server
