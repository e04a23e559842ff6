"""A real local S3 server (moto's) for the tests of the object-store backend (decision
0083). Moto keeps one state per process, shared by every server in it: each test module
uses a bucket of its own."""

from __future__ import annotations

import socket
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

REGION = "eu-west-1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def s3_client(url: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=url,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def start_s3(bucket: str) -> tuple[str, ThreadedMotoServer]:
    """A started server holding an empty ``bucket``: its URL, and the server to stop."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    s3_client(url).create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION}
    )
    return url, server


def object_keys(url: str, bucket: str, prefix: str = "") -> list[str]:
    answer = s3_client(url).list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(item["Key"] for item in answer.get("Contents", []))
