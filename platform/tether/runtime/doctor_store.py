"""``tether doctor``'s check of the object store holding uploaded files (decision 0083):
write, read back, list and delete one small probe object under the key prefix, with the
store's own timeouts and attempts, and name what failed: the bucket, a permission (the
step says which), the credentials, the network, or time."""

from __future__ import annotations

import uuid

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError

from tether.core.settings import FilesSettings
from tether.knowledge.objects import s3_client
from tether.runtime.preflight import StartupError

PROBE = b"tether doctor probe\n"
# Each step of the probe and the S3 permission it needs (what Tether itself needs:
# uploads write, indexing reads, base deletion lists a prefix, deletion deletes).
PERMISSIONS = {
    "write": "s3:PutObject",
    "read": "s3:GetObject",
    "list": "s3:ListBucket",
    "delete": "s3:DeleteObject",
}
_DENIED = {"AccessDenied", "403", "Forbidden", "AllAccessDisabled"}
_CREDENTIALS = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken"}
_CREDENTIALS_FIX = (
    "check TETHER_FILES__ACCESS_KEY_ID and __SECRET_ACCESS_KEY (or the pod's role when unset)"
)


def where(files: FilesSettings) -> str:
    endpoint = files.endpoint_url or f"AWS S3 ({files.region or 'default region'})"
    return f"s3://{files.bucket}/{files.key_prefix} at {endpoint}"


def probe_store(files: FilesSettings) -> str:
    """Write, read, list and delete a probe object; what was checked, or StartupError."""
    s3, bucket = s3_client(files), files.bucket
    key = f"{files.key_prefix}.tether-doctor/{uuid.uuid4()}"
    step = "write"
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=PROBE)
        step = "read"
        body = s3.get_object(Bucket=bucket, Key=key)["Body"]
        try:
            back = body.read()
        finally:
            body.close()
        step = "list"
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
        step = "delete"
        s3.delete_object(Bucket=bucket, Key=key)
    except (BotoCoreError, ClientError) as exc:
        raise explain(files, step, key, exc) from exc
    if back != PROBE or listed.get("KeyCount", 0) != 1:
        raise StartupError(
            f"{where(files)} gave back other bytes (or no listing) for the probe object",
            "check that the endpoint is an S3-compatible store and not a proxy that rewrites",
        )
    return f"{where(files)}: write, read, list and delete work"


def explain(files: FilesSettings, step: str, key: str, exc: Exception) -> StartupError:
    """What a failure of ``step`` means and what to do, never the request (signed)."""
    left = f"; delete the probe object {key} by hand" if step in ("list", "delete") else ""
    if isinstance(exc, (ConnectTimeoutError, ReadTimeoutError)):
        return StartupError(
            f"{where(files)} did not answer the {step} in time ({type(exc).__name__})",
            "check the endpoint and the network path from this host (NetworkPolicy egress, "
            f"proxies); TETHER_FILES__CONNECT_TIMEOUT_SECONDS and __READ_TIMEOUT_SECONDS{left}",
        )
    if isinstance(exc, (EndpointConnectionError, BotoConnectionError)):
        return StartupError(
            f"{where(files)} is unreachable ({type(exc).__name__})",
            "check TETHER_FILES__ENDPOINT_URL (or __REGION) and that the store is up and "
            "reachable from this host",
        )
    if isinstance(exc, NoCredentialsError):
        return StartupError(f"no credentials for {where(files)}", _CREDENTIALS_FIX)
    code = exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else None
    if code == "NoSuchBucket":
        return StartupError(
            f"the bucket {files.bucket!r} does not exist at {where(files)}",
            "create it (in the release's region) or correct TETHER_FILES__BUCKET",
        )
    if code in _DENIED:
        permission = PERMISSIONS[step]
        return StartupError(
            f"access denied: the credentials may not {step} under {where(files)} "
            f"({permission} is missing)",
            f"grant {permission} on arn:aws:s3:::{files.bucket}"
            + ("" if step == "list" else f"/{files.key_prefix}*")
            + f" (Tether needs {', '.join(PERMISSIONS.values())}){left}",
        )
    if code in _CREDENTIALS:
        return StartupError(f"{where(files)} refused the credentials ({code})", _CREDENTIALS_FIX)
    return StartupError(
        f"{where(files)} failed the {step} ({code or type(exc).__name__})",
        f"check the store's configuration (TETHER_FILES__*){left}",
    )
