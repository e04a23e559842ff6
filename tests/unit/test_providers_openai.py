"""The OpenAI-compatible adapters against a real local HTTP server speaking the protocol
(tests/providers_server.py): good answers, garbage, schema violations, slow answers,
server errors and rate limits. Nothing here is mocked."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import numpy as np
import pytest

from tests.providers_server import FakeOpenAIServer, Reply, unit_vector, unused_port
from tether.providers.base import ProviderError
from tether.providers.factory import (
    ChatConfig,
    EmbeddingConfig,
    create_chat_provider,
    create_embedding_provider,
)
from tether.providers.json_schema import UnsupportedSchema
from tether.providers.openai_chat import OpenAIChatProvider
from tether.providers.openai_embeddings import OpenAICompatibleEndpoint, OpenAIEmbeddingProvider

DIM = 8
FACTS_SCHEMA = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
    "required": ["facts"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    running = FakeOpenAIServer(dimension=DIM).start()
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def _fresh_server(server: FakeOpenAIServer) -> None:
    server.reset()


def make_endpoint(base_url: str, **overrides: Any) -> OpenAICompatibleEndpoint:
    options = {"timeout_seconds": 10.0, "max_retries": 2, "backoff_seconds": 0.01} | overrides
    return OpenAICompatibleEndpoint(base_url, **options)


@pytest.fixture
async def embedder(server: FakeOpenAIServer) -> AsyncIterator[OpenAIEmbeddingProvider]:
    provider = OpenAIEmbeddingProvider(
        make_endpoint(server.base_url), model="test-embed", dimension=DIM, batch_size=64
    )
    yield provider
    await provider.aclose()


@pytest.fixture
async def chat(server: FakeOpenAIServer) -> AsyncIterator[OpenAIChatProvider]:
    provider = OpenAIChatProvider(make_endpoint(server.base_url), model="test-chat")
    yield provider
    await provider.aclose()


# --- embeddings: good answers ------------------------------------------------------------


async def test_embeddings_are_unit_float32_rows_in_input_order(
    embedder: OpenAIEmbeddingProvider,
) -> None:
    texts = ["我喜欢吃辣", "I like spicy food", "third"]
    vectors = await embedder.embed(texts)  # the server answers in reverse order
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, DIM)
    expected = np.stack([unit_vector(text, DIM) for text in texts])
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert (embedder.name, embedder.dimension) == ("test-embed", DIM)


async def test_embedding_request_carries_model_input_and_bearer_key(
    server: FakeOpenAIServer,
) -> None:
    endpoint = make_endpoint(server.base_url, api_key="sk-test-key")
    provider = OpenAIEmbeddingProvider(endpoint, model="m1", dimension=DIM, batch_size=64)
    await provider.embed(["a", "b"])
    await provider.aclose()
    (request,) = server.requests
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": "m1", "input": ["a", "b"]}
    assert request.headers["Authorization"] == "Bearer sk-test-key"


async def test_no_authorization_header_without_a_key(
    server: FakeOpenAIServer, embedder: OpenAIEmbeddingProvider
) -> None:
    await embedder.embed(["a"])
    assert "Authorization" not in server.requests[0].headers


async def test_many_inputs_are_sent_in_batches(server: FakeOpenAIServer) -> None:
    provider = OpenAIEmbeddingProvider(
        make_endpoint(server.base_url), model="m", dimension=DIM, batch_size=2
    )
    texts = [f"text {i}" for i in range(5)]
    vectors = await provider.embed(texts)
    await provider.aclose()
    assert [len(r.body["input"]) for r in server.requests] == [2, 2, 1]
    np.testing.assert_allclose(vectors[4], unit_vector("text 4", DIM), atol=1e-6)


async def test_empty_input_makes_no_request(
    server: FakeOpenAIServer, embedder: OpenAIEmbeddingProvider
) -> None:
    vectors = await embedder.embed([])
    assert vectors.shape == (0, DIM)
    assert server.requests == []


# --- embeddings: unusable answers --------------------------------------------------------


async def test_a_dimension_other_than_configured_is_refused(
    server: FakeOpenAIServer, embedder: OpenAIEmbeddingProvider
) -> None:
    server.dimension = DIM * 2
    with pytest.raises(ProviderError, match=r"configured dimension is 8.*tether reindex"):
        await embedder.embed(["a"])


async def test_malformed_json_is_refused_without_retry(
    server: FakeOpenAIServer, embedder: OpenAIEmbeddingProvider
) -> None:
    server.enqueue(Reply(body=b'{"data": [{"embedding": [0.1,'))
    with pytest.raises(ProviderError, match="unusable embeddings answer"):
        await embedder.embed(["a"])
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"object": "list"}, "unusable"),
        ({"data": "nope"}, "unusable"),
        ({"data": [{"embedding": ["x"] * DIM, "index": 0}]}, "unusable"),
        ({"data": [{"embedding": [1.0] * DIM, "index": 0}]}, "1 embeddings for 2 inputs"),
        (
            {"data": [{"embedding": [1.0] * DIM, "index": 0}] * 2},
            "indexes do not match",
        ),
        (
            {"data": [{"embedding": [0.0] * DIM, "index": 0}, {"embedding": [1.0] * DIM}]},
            "indexes do not match",
        ),
        (
            {"data": [{"embedding": [0.0] * DIM, "index": i} for i in range(2)]},
            "zero or non-finite",
        ),
    ],
)
async def test_answers_of_the_wrong_shape_are_refused(
    server: FakeOpenAIServer, embedder: OpenAIEmbeddingProvider, body: Any, reason: str
) -> None:
    server.enqueue(Reply(body=body))
    with pytest.raises(ProviderError, match=reason):
        await embedder.embed(["a", "b"])


async def test_answers_without_index_keep_their_list_order(
    server: FakeOpenAIServer, embedder: OpenAIEmbeddingProvider
) -> None:
    server.enqueue(Reply(body={"data": [{"embedding": [3.0] + [0.0] * (DIM - 1)}]}))
    (vector,) = await embedder.embed(["a"])
    assert vector[0] == pytest.approx(1.0)


# --- transport: timeouts, retries, rate limits (shared by both adapters) -----------------


async def test_a_slow_answer_times_out_and_is_not_retried(server: FakeOpenAIServer) -> None:
    provider = OpenAIEmbeddingProvider(
        make_endpoint(server.base_url, timeout_seconds=0.2), model="m", dimension=DIM, batch_size=8
    )
    server.enqueue(Reply(delay=3.0))
    started = time.perf_counter()
    with pytest.raises(ProviderError, match=r"no answer within 0\.2 s"):
        await provider.embed(["a"])
    await provider.aclose()
    assert time.perf_counter() - started < 1.0
    assert len(server.requests) == 1


async def test_server_errors_are_retried_until_success(
    server: FakeOpenAIServer, embedder: OpenAIEmbeddingProvider
) -> None:
    server.enqueue(Reply(status=500, body={"error": "boom"}), Reply(status=503, body=b""))
    vectors = await embedder.embed(["a"])
    np.testing.assert_allclose(vectors[0], unit_vector("a", DIM), atol=1e-6)
    assert len(server.requests) == 3


async def test_retries_are_bounded(
    server: FakeOpenAIServer, embedder: OpenAIEmbeddingProvider
) -> None:
    server.enqueue(*[Reply(status=502, body={"error": "down"})] * 4)
    with pytest.raises(ProviderError, match="HTTP 502"):
        await embedder.embed(["a"])
    assert len(server.requests) == 3  # max_retries=2


async def test_rate_limits_are_retried_after_the_delay_the_server_asks(
    server: FakeOpenAIServer, embedder: OpenAIEmbeddingProvider
) -> None:
    server.enqueue(Reply(status=429, body={"error": "slow down"}, headers={"Retry-After": "0.3"}))
    started = time.perf_counter()
    await embedder.embed(["a"])
    assert time.perf_counter() - started >= 0.3
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404, 422])
async def test_client_errors_are_not_retried(
    server: FakeOpenAIServer, embedder: OpenAIEmbeddingProvider, status: int
) -> None:
    server.enqueue(Reply(status=status, body={"error": "bad request"}))
    with pytest.raises(ProviderError, match=f"HTTP {status} \\(not retried\\)"):
        await embedder.embed(["a"])
    assert len(server.requests) == 1


async def test_a_refused_connection_is_retried_then_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    base = f"http://127.0.0.1:{unused_port()}/v1"
    provider = OpenAIEmbeddingProvider(make_endpoint(base), model="m", dimension=DIM, batch_size=8)
    with caplog.at_level(logging.INFO), pytest.raises(ProviderError, match="connection failed"):
        await provider.embed(["a"])
    await provider.aclose()
    # This endpoint's retries only: other providers of the process may be retrying too.
    retries = [r for r in caplog.records if "retry" in r.getMessage() and base in r.getMessage()]
    assert len(retries) == 2


async def test_credentials_in_the_url_stay_out_of_logs(caplog: pytest.LogCaptureFixture) -> None:
    endpoint = make_endpoint(f"http://user:hunter2@127.0.0.1:{unused_port()}/v1", max_retries=0)
    with caplog.at_level(logging.INFO), pytest.raises(ProviderError) as caught:
        await endpoint.post("embeddings", {"input": []})
    await endpoint.aclose()
    assert caplog.records
    assert all("hunter2" not in r.getMessage() for r in caplog.records)
    assert "hunter2" not in str(caught.value)


# --- chat --------------------------------------------------------------------------------


async def test_a_valid_answer_is_parsed_and_returned(
    server: FakeOpenAIServer, chat: OpenAIChatProvider
) -> None:
    server.chat_content = '{"facts": ["喜欢吃辣", "works at a bank"]}'
    answer = await chat.complete_json("Extract facts as JSON.", "我喜欢吃辣", FACTS_SCHEMA)
    assert answer == {"facts": ["喜欢吃辣", "works at a bank"]}
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "test-chat"
    assert request.body["temperature"] == 0
    assert request.body["response_format"] == {"type": "json_object"}
    system, user = request.body["messages"]
    assert (system["role"], user["role"]) == ("system", "user")
    assert system["content"].startswith("Extract facts as JSON.")
    assert '"maxItems":3' in system["content"]  # the schema travels with the prompt
    assert user["content"] == "我喜欢吃辣"


@pytest.mark.parametrize(
    "content",
    [
        '```json\n{"facts": ["a"]}\n```',
        '```\n{"facts": ["a"]}\n```',
        '  ```JSON\n{"facts": ["a"]}```  \n',
        '<think>The user likes "a".</think>\n{"facts": ["a"]}',
        '\n  {"facts": ["a"]}  \n',
    ],
)
async def test_fences_and_thinking_around_the_json_are_removed(
    server: FakeOpenAIServer, chat: OpenAIChatProvider, content: str
) -> None:
    server.chat_content = content
    assert await chat.complete_json("s", "u", FACTS_SCHEMA) == {"facts": ["a"]}


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("Sure! Here are the facts: a, b", "not valid JSON"),
        ('{"facts": ["a"', "not valid JSON"),
        ('```json\n{"facts": [a]}\n```', "not valid JSON"),
        ("   ", "empty"),
        ('{"facts": "a"}', r"schema at \$\.facts: expected array"),
        ('{"facts": ["a"], "note": "x"}', "unexpected property 'note'"),
        ('{"facts": ["a", "b", "c", "d"]}', "above maxItems 3"),
        ('{"facts": [1]}', r"\$\.facts\[0\]: expected string"),
        ("[]", "expected object"),
    ],
)
async def test_invalid_answers_are_provider_errors(
    server: FakeOpenAIServer, chat: OpenAIChatProvider, content: str, reason: str
) -> None:
    server.chat_content = content
    with pytest.raises(ProviderError, match=reason):
        await chat.complete_json("s", "u", FACTS_SCHEMA)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html>Bad gateway</html>", "unusable chat completion"),
        ({"choices": {}}, "unusable chat completion"),
        ({"choices": []}, "no choices"),
        ({"choices": [{"message": {"role": "assistant", "content": None}}]}, "empty"),
        (
            {"choices": [{"message": {"content": '{"facts": ['}, "finish_reason": "length"}]},
            "cut off",
        ),
    ],
)
async def test_unusable_completions_are_provider_errors(
    server: FakeOpenAIServer, chat: OpenAIChatProvider, body: Any, reason: str
) -> None:
    server.enqueue(Reply(body=body))
    with pytest.raises(ProviderError, match=reason):
        await chat.complete_json("s", "u", FACTS_SCHEMA)


async def test_chat_retries_server_errors_and_rate_limits(
    server: FakeOpenAIServer, chat: OpenAIChatProvider
) -> None:
    server.chat_content = '{"facts": []}'
    server.enqueue(Reply(status=503, body=b"busy"), Reply(status=429, body=b"{}"))
    assert await chat.complete_json("s", "u", FACTS_SCHEMA) == {"facts": []}
    assert len(server.requests) == 3


async def test_chat_gives_up_when_rate_limited_throughout(
    server: FakeOpenAIServer, chat: OpenAIChatProvider
) -> None:
    server.enqueue(*[Reply(status=429, body={"error": "quota"})] * 3)
    with pytest.raises(ProviderError, match="HTTP 429"):
        await chat.complete_json("s", "u", FACTS_SCHEMA)
    assert len(server.requests) == 3


async def test_a_slow_chat_answer_times_out(server: FakeOpenAIServer) -> None:
    provider = OpenAIChatProvider(make_endpoint(server.base_url, timeout_seconds=0.2), model="m")
    server.enqueue(Reply(delay=3.0))
    with pytest.raises(ProviderError, match="no answer within"):
        await provider.complete_json("s", "u", FACTS_SCHEMA)
    await provider.aclose()


async def test_failures_are_logged_without_prompt_or_answer(
    server: FakeOpenAIServer, chat: OpenAIChatProvider, caplog: pytest.LogCaptureFixture
) -> None:
    secret_prompt = "我的手机号是13812345678"
    server.chat_content = '{"facts": "answer-secret-42"}'
    with caplog.at_level(logging.DEBUG), pytest.raises(ProviderError) as caught:
        await chat.complete_json(secret_prompt, secret_prompt, FACTS_SCHEMA)
    server.enqueue(*[Reply(status=500, body={"echo": secret_prompt})] * 3)
    with caplog.at_level(logging.DEBUG), pytest.raises(ProviderError):
        await chat.complete_json(secret_prompt, secret_prompt, FACTS_SCHEMA)
    # The providers' own records: other loggers of the process (an earlier module's
    # access-log flusher, say) may warn meanwhile.
    ours = [r for r in caplog.records if r.name.startswith("tether.providers")]
    warnings = [r for r in ours if r.levelno >= logging.WARNING]
    assert len(warnings) == 2
    logged = "\n".join(r.getMessage() for r in caplog.records) + str(caught.value)
    assert "13812345678" not in logged
    assert "answer-secret-42" not in logged


async def test_an_unsupported_schema_fails_before_any_request(
    server: FakeOpenAIServer, chat: OpenAIChatProvider
) -> None:
    with pytest.raises(UnsupportedSchema, match="pattern"):
        await chat.complete_json("s", "u", {"type": "string", "pattern": "^a"})
    assert server.requests == []


# --- factory -----------------------------------------------------------------------------


async def test_factory_builds_working_openai_providers(server: FakeOpenAIServer) -> None:
    embed_cfg = EmbeddingConfig(kind="openai", base_url=server.base_url, model="e", dimension=DIM)
    embedder = create_embedding_provider(embed_cfg)
    assert (embedder.name, embedder.dimension) == ("e", DIM)
    assert (await embedder.embed(["x"])).shape == (1, DIM)
    await embedder.aclose()
    chat = create_chat_provider(ChatConfig(enabled=True, base_url=server.base_url, model="c"))
    assert chat is not None
    assert await chat.complete_json("s", "u", {"type": "object"}) == {"ok": True}
    await chat.aclose()


def test_factory_defaults_match_the_documentation() -> None:
    embed, llm = EmbeddingConfig(), ChatConfig()
    assert (embed.kind, embed.timeout_seconds, embed.max_retries, embed.batch_size) == (
        "offline",
        2.0,
        2,
        64,
    )
    assert (llm.enabled, llm.timeout_seconds, llm.max_retries) == (False, 20.0, 2)


def test_disabled_chat_gives_no_provider() -> None:
    assert create_chat_provider(ChatConfig(enabled=False, base_url="http://x", model="m")) is None


@pytest.mark.parametrize(
    ("config", "missing"),
    [
        (EmbeddingConfig(kind="openai", model="m", dimension=8), "BASE_URL"),
        (EmbeddingConfig(kind="openai", base_url="http://x", dimension=8), "MODEL"),
        (EmbeddingConfig(kind="openai", base_url="http://x", model="m"), "DIMENSION"),
    ],
)
def test_incomplete_embedding_config_is_refused(config: EmbeddingConfig, missing: str) -> None:
    with pytest.raises(ValueError, match=missing):
        create_embedding_provider(config)


def test_enabled_chat_without_endpoint_is_refused() -> None:
    with pytest.raises(ValueError, match="TETHER_LLM__BASE_URL"):
        create_chat_provider(ChatConfig(enabled=True, model="m"))
