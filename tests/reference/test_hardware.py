"""Accelerator and instance tables; instance detection from DMI and from a metadata service.

The metadata service is a real HTTP server on 127.0.0.1 speaking the AWS IMDSv2 and Google Cloud
protocols; the link-local cloud endpoint is never contacted by these tests.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from advisor.probes.instance import detect_instance_type, instance_from_dmi, instance_from_metadata
from advisor.reference.families import family_of, instance_info
from advisor.reference.hardware import ACCELERATORS, compute_dtype, match_accelerator, peak_tflops
from advisor.reference.prices import price_table


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA H200", "H200-SXM"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("NVIDIA H100 PCIe", "H100-PCIE"),
        ("NVIDIA A100-SXM4-40GB", "A100-SXM4"),
        ("NVIDIA A100 80GB PCIe", "A100-PCIE"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("Tesla T4", "T4"),
        ("Tesla V100-SXM2-16GB", "V100-SXM2"),
        ("Tesla K80", "K80"),
        ("NVIDIA GeForce GTX 1080", None),
    ],
)
def test_nvml_names_match_the_table(name: str, key: str | None) -> None:
    acc = match_accelerator(name)
    assert (acc.key if acc else None) == key


def test_every_gpu_of_the_price_table_is_known() -> None:
    gpus = {row["gpu"] for row in price_table()["instances"].values()}
    assert all(match_accelerator(g) is not None for g in gpus), gpus


def test_table_entries_are_consistent() -> None:
    assert len(ACCELERATORS) >= 10
    for acc in ACCELERATORS.values():
        assert acc.source and acc.memory_gb > 0 and acc.peak_tflops["fp32"] > 0
        if acc.bf16:
            assert acc.peak_tflops["bf16"] >= acc.peak_tflops["fp32"]
        assert acc.current_generation == (
            acc.generation in ("ampere", "ada", "hopper", "blackwell")
        )


def test_compute_dtype_and_peaks() -> None:
    h100 = ACCELERATORS["H100-SXM"]
    assert compute_dtype("mixed_bfloat16", "jax", h100) == "bf16"
    assert compute_dtype("mixed_float16", "tensorflow", h100) == "fp16"
    assert compute_dtype("float32", "tensorflow", h100) == "tf32"
    assert compute_dtype("float32", "torch", h100) == "fp32"
    assert peak_tflops(h100, "bf16") == pytest.approx(989.4)
    v100 = ACCELERATORS["V100-SXM2"]
    assert compute_dtype("float32", "tensorflow", v100) == "fp32"
    assert peak_tflops(v100, "bf16") is None


def test_instance_families() -> None:
    p4d = instance_info("p4d.24xlarge")
    assert p4d and p4d.family == "p4d" and p4d.current_generation and p4d.accelerated_networking
    assert p4d.gpus == 8 and p4d.vcpus_per_gpu == 12
    small, large = instance_info("g5.xlarge"), instance_info("g5.48xlarge")
    assert (
        small
        and large
        and small.accelerated_networking is False
        and large.accelerated_networking is True
    )
    assert small.vcpus_per_gpu == 4
    assert instance_info("p3.2xlarge").current_generation is False  # type: ignore[union-attr]
    assert instance_info("gcp/a3-highgpu-8g").accelerated_networking is True  # type: ignore[union-attr]
    nd = family_of("Standard_ND96asr_v4")
    assert nd and nd.family == "ND_A100_v4" and nd.accelerated_networking
    assert instance_info("m5.large") is None and instance_info(None) is None


def test_instance_type_from_argument_env_and_dmi(tmp_path: Path) -> None:
    dmi = tmp_path / "dmi"
    dmi.mkdir()
    assert detect_instance_type("g5.xlarge", env={}, dmi_dir=dmi) == ("g5.xlarge", "argument")
    assert detect_instance_type(env={"ADVISOR_INSTANCE_TYPE": "p5.48xlarge"}, dmi_dir=dmi) == (
        "p5.48xlarge",
        "env",
    )
    assert detect_instance_type(env={}, dmi_dir=dmi) is None
    (dmi / "sys_vendor").write_text("Amazon EC2\n")
    (dmi / "product_name").write_text("g6.12xlarge\n")
    assert instance_from_dmi(dmi) == "g6.12xlarge"
    assert detect_instance_type(env={}, dmi_dir=dmi) == ("g6.12xlarge", "dmi")
    (dmi / "sys_vendor").write_text("QEMU\n")
    assert instance_from_dmi(dmi) is None


class _Imds(BaseHTTPRequestHandler):
    """AWS IMDSv2 (token, then instance type) or Google Cloud, chosen by the server's ``flavor``."""

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, body: str) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def do_PUT(self) -> None:
        flavor = self.server.flavor  # type: ignore[attr-defined]
        if (
            flavor == "aws"
            and self.path == "/latest/api/token"
            and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        ):
            self._send(200, "TOKEN123")
        else:
            self._send(405, "")

    def do_GET(self) -> None:
        flavor = self.server.flavor  # type: ignore[attr-defined]
        if flavor == "hang":
            self.server.release.wait(10)  # type: ignore[attr-defined]
            self._send(200, "late.type")
        elif flavor == "aws" and self.path == "/latest/meta-data/instance-type":
            ok = self.headers.get("X-aws-ec2-metadata-token") == "TOKEN123"
            self._send(200 if ok else 401, "p4d.24xlarge" if ok else "")
        elif (
            flavor == "gcp"
            and self.path.endswith("/instance/machine-type")
            and self.headers.get("Metadata-Flavor") == "Google"
        ):
            self._send(200, "projects/123/machineTypes/a2-highgpu-1g")
        else:
            self._send(404, "")

    do_HEAD = do_GET


@pytest.fixture
def metadata_server() -> Iterator[Any]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Imds)
    server.daemon_threads = True
    server.flavor = "aws"  # type: ignore[attr-defined]
    server.release = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


def test_metadata_imdsv2_and_gcp(metadata_server: Any, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{metadata_server.server_address[1]}"
    assert instance_from_metadata(url, timeout=2.0) == "p4d.24xlarge"
    found = detect_instance_type(
        env={}, metadata=True, dmi_dir=tmp_path, metadata_url=url, metadata_timeout=2.0
    )
    assert found == ("p4d.24xlarge", "metadata")
    # Not asked: no request at all, even with a server there.
    assert detect_instance_type(env={}, metadata=False, dmi_dir=tmp_path, metadata_url=url) is None
    metadata_server.flavor = "gcp"
    assert instance_from_metadata(url, timeout=2.0) == "a2-highgpu-1g"


def test_metadata_that_never_answers_gives_up(metadata_server: Any) -> None:
    metadata_server.flavor = "hang"
    url = f"http://127.0.0.1:{metadata_server.server_address[1]}"
    result: list[Any] = []
    caller = threading.Thread(
        target=lambda: result.append(instance_from_metadata(url, timeout=0.2)), daemon=True
    )
    caller.start()
    caller.join(5.0)  # a hang check, not a timing measurement
    assert not caller.is_alive() and result == [None]


def test_metadata_with_nothing_listening() -> None:
    import socket

    with socket.socket() as s:  # a port that was free a moment ago: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert instance_from_metadata(f"http://127.0.0.1:{port}", timeout=0.5) is None
