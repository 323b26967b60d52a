"""boto3 clients with timeouts, and AWS errors turned into one-line messages.

Two budgets: ``"training"`` (inside ``fit``: short timeouts, one retry, so a dead endpoint costs
seconds, never a hang) and ``"command"`` (the CLI: a little more patience). Endpoints follow
boto3's own configuration, including ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_<SERVICE>``,
which is how the tests point every client at a local server.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from advisor.errors import CloudError, first_line, one_line

Budget = Literal["training", "command"]

TIMEOUTS: dict[str, tuple[float, float, int]] = {  # connect s, read s, total attempts
    "training": (2.0, 5.0, 2),
    "command": (3.0, 20.0, 3),
}
INSTALL_HINT = "install the cloud extra: pip install 'keras-advisor[cloud]'"


def boto3_module() -> Any:
    """boto3, or a :class:`CloudError` that says how to install it."""
    try:
        import boto3
    except ImportError:
        raise CloudError(f"AWS support needs boto3: {INSTALL_HINT}") from None
    return boto3


def region_name(region: str | None = None) -> str:
    """The region: the argument, else boto3's (``AWS_REGION``, profile), else us-east-1."""
    if region:
        return region
    boto3 = boto3_module()
    return boto3.session.Session().region_name or os.environ.get("AWS_REGION") or "us-east-1"


def client(service: str, region: str | None = None, budget: Budget = "command") -> Any:
    """A boto3 client for ``service`` with the budget's connect/read timeouts and retries."""
    boto3 = boto3_module()
    from botocore.config import Config

    connect, read, attempts = TIMEOUTS[budget]
    config = Config(
        connect_timeout=connect,
        read_timeout=read,
        retries={"max_attempts": attempts, "mode": "standard"},
        user_agent_extra="keras-advisor",
    )
    return boto3.session.Session().client(service, region_name=region_name(region), config=config)


def _response(exc: BaseException, part: str) -> dict[str, Any]:
    """One part of a botocore error's response (``Error``, ``ResponseMetadata``); {} without."""
    return (getattr(exc, "response", {}) or {}).get(part) or {}


def error_code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = (response.get("Error") or {}).get("Code")
        return str(code) if code else None
    return None


ACCESS_DENIED = {
    "AccessDenied",
    "AccessDeniedException",
    "UnauthorizedOperation",
    "Forbidden",
    "403",
}
# The credentials themselves were refused (a wrong secret, an unknown or expired key): no IAM
# policy would help, so the message says to check them instead.
CREDENTIALS_REFUSED = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "AuthFailure",
    "InvalidToken",
}
THROTTLED = {
    "Throttling",
    "ThrottlingException",
    "SlowDown",
    "RequestLimitExceeded",
    "TooManyRequestsException",
}


def cloud_error(exc: BaseException, what: str, permission: str | None = None) -> CloudError:
    """One line for people: what failed and why (never the credentials, never a traceback)."""
    from botocore import exceptions as bx

    code = error_code(exc)
    if isinstance(exc, (bx.NoCredentialsError, bx.PartialCredentialsError)):
        return CloudError(
            f"{what}: no AWS credentials found (boto3 looks in the environment, "
            "~/.aws and the instance or task role)"
        )
    if isinstance(
        exc,
        (
            bx.EndpointConnectionError,
            bx.ConnectTimeoutError,
            bx.ReadTimeoutError,
            bx.ConnectionClosedError,
        ),
    ):
        return CloudError(f"{what}: cannot reach AWS ({type(exc).__name__}); offline or blocked?")
    if code == "NoSuchBucket":
        bucket = _response(exc, "Error").get("BucketName")
        return CloudError(
            f"{what}: bucket {bucket!r} does not exist"
            if bucket
            else f"{what}: the bucket does not exist"
        )
    if code in CREDENTIALS_REFUSED:
        return CloudError(
            f"{what}: AWS refused the credentials ({code}); check the access key, its secret "
            "and session token (environment, ~/.aws or the instance role) and the clock"
        )
    if code in ACCESS_DENIED:
        need = f"; the IAM policy needs {permission}" if permission else ""
        return CloudError(f"{what}: access denied ({code}){need}")
    if code in THROTTLED:
        return CloudError(f"{what}: AWS is throttling the requests ({code}); try again later")
    if code in ("NoSuchKey", "404", "NotFound", "ResourceNotFound", "ValidationException") and code:
        message = _response(exc, "Error").get("Message") or code
        return CloudError(f"{what}: {first_line(message, 200)}")
    if isinstance(exc, bx.BotoCoreError):
        return CloudError(f"{what}: {one_line(exc, 200)}")
    status = _response(exc, "ResponseMetadata").get("HTTPStatusCode")
    if isinstance(status, int) and status >= 500:
        return CloudError(
            f"{what}: the service answered HTTP {status} (a server error); try again later"
        )
    if code:
        message = _response(exc, "Error").get("Message") or ""
        return CloudError(f"{what}: {code}{': ' + first_line(message, 200) if message else ''}")
    return CloudError(f"{what}: {one_line(exc, 200)}")


def parse_s3_url(url: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix/`` → ("bucket", "some/prefix"); a bad URL is a CloudError."""
    if not url.startswith("s3://"):
        raise CloudError(f"{url}: not an s3://bucket/prefix URL")
    bucket, _, prefix = url[len("s3://") :].partition("/")
    if not bucket or any(c in bucket for c in " \\"):
        raise CloudError(f"{url}: no bucket name (expected s3://bucket/prefix)")
    return bucket, prefix.strip("/")


def join_key(prefix: str, *parts: str) -> str:
    return "/".join(p.strip("/") for p in (prefix, *parts) if p and p.strip("/"))
