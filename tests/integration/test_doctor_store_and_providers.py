"""`tether doctor`'s object-store probe (decision 0083) against a real local S3 server
(moto's), and its per-name checks of the deployment-named providers (decisions 0075,
0077) against a real local OpenAI-protocol server: healthy, bucket missing, store down,
store silent (timeout);
provider up, down, host not on the allow-list. Then the command itself, as an operator
runs it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from tests.integration.test_knowledge_object_store import files_settings
from tests.providers_server import FakeOpenAIServer, unused_port
from tests.s3_server import free_port, object_keys, start_s3
from tether.core.settings import FilesSettings, ProvidersSettings
from tether.runtime.doctor_providers import named_embedding, named_llm
from tether.runtime.doctor_store import explain, probe_store
from tether.runtime.preflight import StartupError

pytestmark = pytest.mark.integration
# Moto's state is per process, shared by every server in it: a bucket of this module's own.
BUCKET = "tether-doctor-files"


@pytest.fixture(scope="module")
def s3_url() -> Iterator[str]:
    url, server = start_s3(BUCKET)
    yield url
    server.stop()


@pytest.fixture(scope="module")
def openai() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(dimension=8).start()
    yield server
    server.stop()


def _files(url: str) -> FilesSettings:
    return files_settings(url).model_copy(update={"bucket": BUCKET})


def test_a_healthy_store_passes_and_keeps_no_probe_object(s3_url: str) -> None:
    found = probe_store(_files(s3_url))
    assert "write, read, list and delete work" in found
    assert f"s3://{BUCKET}/files/" in found
    assert not [k for k in object_keys(s3_url, BUCKET) if ".tether-doctor" in k]


def test_a_missing_bucket_is_named_with_the_fix(s3_url: str) -> None:
    files = _files(s3_url).model_copy(update={"bucket": "no-such-bucket"})
    with pytest.raises(StartupError) as failed:
        probe_store(files)
    assert "'no-such-bucket' does not exist" in failed.value.cause
    assert "TETHER_FILES__BUCKET" in failed.value.fix


def test_a_store_that_is_down_is_unreachable_without_waiting(s3_url: str) -> None:
    files = _files(f"http://127.0.0.1:{unused_port()}")
    with pytest.raises(StartupError) as failed:
        probe_store(files)
    assert "is unreachable" in failed.value.cause
    assert "TETHER_FILES__ENDPOINT_URL" in failed.value.fix


def test_a_store_that_accepts_but_never_answers_is_a_timeout() -> None:
    with socket.socket() as silent:  # listens (the kernel accepts), never reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        files = _files(f"http://127.0.0.1:{silent.getsockname()[1]}")
        files = files.model_copy(update={"read_timeout_seconds": 0.5})
        with pytest.raises(StartupError) as failed:
            probe_store(files)
    assert "did not answer the write in time (ReadTimeoutError)" in failed.value.cause
    assert "TETHER_FILES__CONNECT_TIMEOUT_SECONDS" in failed.value.fix


@pytest.mark.parametrize(
    ("step", "permission"),
    [("write", "s3:PutObject"), ("read", "s3:GetObject"), ("delete", "s3:DeleteObject")],
)
def test_access_denied_names_the_missing_permission(step: str, permission: str) -> None:
    # moto enforces no IAM policy: the store's answer is built as botocore builds it.
    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "PutObject")
    found = explain(_files("http://store"), step, "files/.tether-doctor/x", denied)
    assert f"({permission} is missing)" in found.cause
    assert f"grant {permission} on arn:aws:s3:::{BUCKET}/files/*" in found.fix


def _providers(openai: FakeOpenAIServer, allowed: list[str]) -> ProvidersSettings:
    down = f"http://127.0.0.1:{unused_port()}/v1"
    return ProvidersSettings.model_validate(
        {
            "llm": {
                "up": {"base_url": openai.base_url, "model": "m", "api_key": "k"},
                "down": {"base_url": down, "model": "m"},
            },
            "embedding": {
                "up": {"base_url": openai.base_url, "model": "e", "dimension": 8},
                "down": {"base_url": down, "model": "e", "dimension": 8},
            },
            "allowed_hosts": allowed,
        }
    )


def test_a_named_provider_that_answers_passes(openai: FakeOpenAIServer) -> None:
    openai.reset()
    providers = _providers(openai, [])
    assert named_llm(providers, "up") == f"m at {openai.base_url}: answers"
    assert named_embedding(providers, "up") == f"e at {openai.base_url}: 8 dimensions"
    asked = [r for r in openai.requests if r.path == "/v1/models"]
    assert asked[0].headers["Authorization"] == "Bearer k"  # its own key, to its own origin


def test_a_named_provider_that_is_down_fails_by_its_name(openai: FakeOpenAIServer) -> None:
    providers = _providers(openai, [])
    with pytest.raises(StartupError) as llm:
        named_llm(providers, "down")
    assert "did not answer" in llm.value.cause
    assert "TETHER_PROVIDERS__LLM['down']" in llm.value.fix
    with pytest.raises(StartupError) as embedding:
        named_embedding(providers, "down")
    assert "TETHER_PROVIDERS__EMBEDDING['down']" in embedding.value.fix


def test_a_named_provider_of_a_wrong_dimension_fails(openai: FakeOpenAIServer) -> None:
    openai.reset()
    openai.dimension = 4
    with pytest.raises(StartupError) as failed:
        named_embedding(_providers(openai, []), "up")
    assert "failed" in failed.value.cause
    openai.reset()


def test_a_named_provider_whose_host_is_not_allowed_is_called_and_said(
    openai: FakeOpenAIServer,
) -> None:
    """Workers call a named provider at its own URL whatever the allow-list says (it
    governs the URLs tenants type, decision 0075); doctor says what tenants cannot do."""
    openai.reset()
    allowed = _providers(openai, ["127.0.0.1"])
    assert "ALLOWED_HOSTS" not in named_llm(allowed, "up")
    elsewhere = _providers(openai, ["models.internal"])
    shown = named_llm(elsewhere, "up")
    assert shown.startswith("m at ")
    assert "not on TETHER_PROVIDERS__ALLOWED_HOSTS" in shown
    # Tenants never type an embedding URL: the list says nothing about those.
    assert "ALLOWED_HOSTS" not in named_embedding(elsewhere, "up")


def test_doctor_reports_each_provider_and_the_store_in_its_format(
    openai: FakeOpenAIServer, s3_url: str, tmp_path: Path
) -> None:
    openai.reset()
    providers = _providers(openai, [])
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")} | {
        "TETHER_DATA_DIR": str(tmp_path),
        "TETHER_PORT": str(free_port()),
        "TETHER_PROVIDERS__LLM": json.dumps(
            {n: p.model_dump(mode="json") | {"api_key": None} for n, p in providers.llm.items()}
        ),
        "TETHER_PROVIDERS__EMBEDDING": json.dumps(
            {n: p.model_dump(mode="json") for n, p in providers.embedding.items()}
        ),
        "TETHER_FILES__BACKEND": "s3",
        "TETHER_FILES__ENDPOINT_URL": s3_url,
        "TETHER_FILES__REGION": "eu-west-1",
        "TETHER_FILES__BUCKET": BUCKET,
        "TETHER_FILES__KEY_PREFIX": "files/",
        "TETHER_FILES__ACCESS_KEY_ID": "test",
        "TETHER_FILES__SECRET_ACCESS_KEY": "test",
    }
    result = subprocess.run(
        [sys.executable, "-m", "tether.cli", "doctor"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr  # one provider is down
    out = result.stdout
    for healthy in ("llm:up", "embedding:up", "file_store"):
        assert f"ok   {healthy}" in out, out
    for broken in ("llm:down", "embedding:down"):
        assert f"FAIL {broken}" in out, out
    assert "fix: check TETHER_PROVIDERS__LLM['down']" in out
