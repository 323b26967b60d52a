"""Which instance is this? From the argument, ``$ADVISOR_INSTANCE_TYPE``, DMI, or the metadata
service.

AWS Nitro writes the instance type into the machine's DMI data (a local file, no network). The
cloud metadata service is asked only when the user allows it, with a hard deadline (0.5 s) that
cannot hang a job off-cloud. Runs inside training; returns plain values.
"""

from __future__ import annotations

import os
import re
import threading
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

METADATA_URL = "http://169.254.169.254"
METADATA_TIMEOUT_S = 0.5
DMI_DIR = "/sys/devices/virtual/dmi/id"

_AWS_TYPE_RE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")


def instance_from_dmi(dmi_dir: str | os.PathLike[str] = DMI_DIR) -> str | None:
    """AWS Nitro instances name their type in the DMI product name; reading it needs no network."""
    try:
        vendor = (
            (Path(dmi_dir) / "sys_vendor").read_text(encoding="ascii", errors="replace").strip()
        )
        product = (
            (Path(dmi_dir) / "product_name").read_text(encoding="ascii", errors="replace").strip()
        )
    except OSError:
        return None
    if vendor == "Amazon EC2" and _AWS_TYPE_RE.match(product):
        return product
    return None


def _request(url: str, method: str, headers: dict[str, str], timeout: float) -> str:
    req = urllib.request.Request(
        url, method=method, headers=headers, data=b"" if method == "PUT" else None
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy
    with opener.open(req, timeout=timeout) as resp:
        return resp.read(256).decode("ascii", "replace").strip()


def _ask_metadata(base: str, timeout: float) -> str | None:
    """AWS IMDSv2, then Google Cloud, then Azure, on one link-local endpoint."""
    import urllib.error

    base = base.rstrip("/")
    try:
        token = _request(
            f"{base}/latest/api/token",
            "PUT",
            {"X-aws-ec2-metadata-token-ttl-seconds": "60"},
            timeout,
        )
        value = _request(
            f"{base}/latest/meta-data/instance-type",
            "GET",
            {"X-aws-ec2-metadata-token": token},
            timeout,
        )
        if _AWS_TYPE_RE.match(value):
            return value
    except urllib.error.HTTPError:
        pass  # something answers, but not as AWS: try the others
    except (OSError, ValueError):
        return None  # nothing there (refused, unreachable, timed out)
    try:
        value = _request(
            f"{base}/computeMetadata/v1/instance/machine-type",
            "GET",
            {"Metadata-Flavor": "Google"},
            timeout,
        )
        if value:
            return value.rsplit("/", 1)[-1]
    except urllib.error.HTTPError:
        pass
    except (OSError, ValueError):
        return None
    try:
        value = _request(
            f"{base}/metadata/instance/compute/vmSize?api-version=2021-02-01&format=text",
            "GET",
            {"Metadata": "true"},
            timeout,
        )
        return value or None
    except (OSError, ValueError):
        return None


def instance_from_metadata(
    url: str = METADATA_URL, timeout: float = METADATA_TIMEOUT_S
) -> str | None:
    """Ask the cloud metadata service; returns within ``timeout`` seconds whatever happens."""
    result: list[str | None] = [None]

    def work() -> None:
        try:
            result[0] = _ask_metadata(url, timeout)
        except Exception:
            result[0] = None

    thread = threading.Thread(target=work, name="advisor-metadata", daemon=True)
    thread.start()
    thread.join(timeout)
    return result[0] if not thread.is_alive() else None


def detect_instance_type(
    argument: str | None = None,
    env: Mapping[str, str] | None = None,
    metadata: bool | None = False,
    dmi_dir: str | os.PathLike[str] = DMI_DIR,
    metadata_url: str | None = None,
    metadata_timeout: float = METADATA_TIMEOUT_S,
    ask: Callable[[str, float], str | None] | None = None,
) -> tuple[str, str] | None:
    """(instance type, source): the argument, ``$ADVISOR_INSTANCE_TYPE``, DMI, then the metadata
    service (only with ``metadata=True``; ``$ADVISOR_METADATA_URL`` overrides the endpoint)."""
    env = os.environ if env is None else env
    if argument:
        return argument, "argument"
    if env.get("ADVISOR_INSTANCE_TYPE"):
        return env["ADVISOR_INSTANCE_TYPE"], "env"
    found = instance_from_dmi(dmi_dir)
    if found:
        return found, "dmi"
    if metadata:
        url = metadata_url or env.get("ADVISOR_METADATA_URL") or METADATA_URL
        value = (ask or instance_from_metadata)(url, metadata_timeout)
        if value:
            return value, "metadata"
    return None
