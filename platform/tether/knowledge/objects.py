"""The S3-compatible object store of uploaded files (decision 0083), through boto3.

boto3 is synchronous: every call runs in a worker thread, one part or one read at a
time, so neither direction holds more than a part of the file at once. Timeouts and a
bounded number of attempts (``FilesSettings``) make an unreachable store an error, never
a wait. Credentials stay in the client; nothing here logs them or puts them in errors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from functools import partial
from typing import Any

import anyio.to_thread
import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from tether.core.settings import FilesSettings
from tether.knowledge.errors import FileStoreUnavailable, StoredFileMissing

READ_BYTES = 256 * 1024
# S3 deletes at most this many keys per request.
DELETE_BATCH = 1000
_MISSING = {"NoSuchKey", "404", "NotFound"}
_CLIENTS: dict[tuple[object, ...], Any] = {}


def s3_client(settings: FilesSettings) -> Any:
    """One client per configuration and process (boto3 clients are thread-safe)."""
    secret = settings.secret_access_key
    access = settings.access_key_id
    cache_key = (
        settings.endpoint_url,
        settings.region,
        None if access is None else access.get_secret_value(),
        None if secret is None else secret.get_secret_value(),
        settings.connect_timeout_seconds,
        settings.read_timeout_seconds,
        settings.max_attempts,
    )
    client = _CLIENTS.get(cache_key)
    if client is None:
        config = Config(
            connect_timeout=settings.connect_timeout_seconds,
            read_timeout=settings.read_timeout_seconds,
            retries={"max_attempts": settings.max_attempts, "mode": "standard"},
            # Path-style addressing: MinIO, Ceph and most self-hosted stores need it.
            s3={"addressing_style": "path"} if settings.endpoint_url else None,
        )
        client = boto3.session.Session().client(
            "s3",
            endpoint_url=settings.endpoint_url,
            region_name=settings.region,
            aws_access_key_id=cache_key[2],
            aws_secret_access_key=cache_key[3],
            config=config,
        )
        _CLIENTS[cache_key] = client
    return client


def _failure(action: str, exc: Exception) -> FileStoreUnavailable:
    """A typed error naming the action and the error's class or code, never the request
    (which carries the signature)."""
    code = exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else None
    return FileStoreUnavailable(f"the file store failed to {action} ({code or type(exc).__name__})")


def _parts(pieces: Iterable[memoryview], size: int) -> Iterable[bytes]:
    """``pieces`` regrouped into parts of ``size`` bytes (the last may be shorter)."""
    part = bytearray()
    for piece in pieces:
        part += piece
        while len(part) >= size:
            yield bytes(part[:size])
            del part[:size]
    if part:
        yield bytes(part)


class ObjectStore:
    """The bucket of one deployment: put by parts, read in slices, delete keys or
    prefixes."""

    def __init__(self, settings: FilesSettings) -> None:
        self._settings = settings
        self._bucket = settings.bucket
        self._s3 = s3_client(settings)

    def key(self, *parts: object) -> str:
        return self._settings.key_prefix + "/".join(str(p) for p in parts)

    async def put(self, key: str, pieces: Iterable[memoryview]) -> int:
        """Store the object by multipart upload (one part in memory at a time); its size."""
        try:
            return await anyio.to_thread.run_sync(self._put, key, pieces)
        except (BotoCoreError, ClientError) as exc:
            raise _failure("store the file", exc) from exc

    def _put(self, key: str, pieces: Iterable[memoryview]) -> int:
        parts = iter(_parts(pieces, self._settings.part_bytes))
        first = next(parts, b"")
        second = next(parts, None)
        if second is None:  # smaller than a part: one request
            self._s3.put_object(Bucket=self._bucket, Key=key, Body=first)
            return len(first)
        upload = self._s3.create_multipart_upload(Bucket=self._bucket, Key=key)["UploadId"]
        try:
            done, total = [], 0
            for number, part in enumerate((first, second, *parts), start=1):
                answer = self._s3.upload_part(
                    Bucket=self._bucket, Key=key, UploadId=upload, PartNumber=number, Body=part
                )
                done.append({"PartNumber": number, "ETag": answer["ETag"]})
                total += len(part)
            self._s3.complete_multipart_upload(
                Bucket=self._bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": done}
            )
            return total
        except (BotoCoreError, ClientError):
            # Parts of an aborted upload would be billed and never seen again.
            self._s3.abort_multipart_upload(Bucket=self._bucket, Key=key, UploadId=upload)
            raise

    async def read(self, key: str) -> AsyncIterator[bytes]:
        """The object in slices of ``READ_BYTES``, read as they are consumed."""
        try:
            answer = await anyio.to_thread.run_sync(
                partial(self._s3.get_object, Bucket=self._bucket, Key=key)
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _MISSING:
                raise StoredFileMissing(key) from exc
            raise _failure("read the file", exc) from exc
        except BotoCoreError as exc:
            raise _failure("read the file", exc) from exc
        body = answer["Body"]
        try:
            while True:
                try:
                    piece: bytes = await anyio.to_thread.run_sync(body.read, READ_BYTES)
                except (BotoCoreError, ClientError, OSError) as exc:
                    raise _failure("read the file", exc) from exc
                if not piece:
                    return
                yield piece
        finally:
            body.close()

    async def size(self, key: str) -> int | None:
        """The object's size in bytes, or None when there is none under ``key``."""
        try:
            answer = await anyio.to_thread.run_sync(
                partial(self._s3.head_object, Bucket=self._bucket, Key=key)
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _MISSING:
                return None
            raise _failure("look up a file", exc) from exc
        except BotoCoreError as exc:
            raise _failure("look up a file", exc) from exc
        return int(answer["ContentLength"])

    async def delete(self, key: str) -> int:
        """Delete the key, or every key under it when it ends with ``/``; how many were
        asked to go. Deleting what is not there is no error."""
        try:
            return await anyio.to_thread.run_sync(self._delete, key)
        except (BotoCoreError, ClientError) as exc:
            raise _failure("delete files", exc) from exc

    def _delete(self, key: str) -> int:
        if not key.endswith("/"):
            self._s3.delete_object(Bucket=self._bucket, Key=key)
            return 1
        removed = 0
        pages = self._s3.get_paginator("list_objects_v2").paginate(
            Bucket=self._bucket, Prefix=key, PaginationConfig={"PageSize": DELETE_BATCH}
        )
        for page in pages:
            keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            if keys:
                self._s3.delete_objects(
                    Bucket=self._bucket, Delete={"Objects": keys, "Quiet": True}
                )
                removed += len(keys)
        return removed
