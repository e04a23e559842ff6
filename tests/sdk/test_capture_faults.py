"""Faults seen from the client: the server killed mid-burst never blocks the chat, and
what the capture queue held is sent once it is back (or counted as dropped); retries
honour Retry-After and never write twice."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import pytest
from tether_client import RateLimited, ServiceUnavailable, Tether

from tests.sdk.http_doubles import Seen, forward, scripted_server
from tests.sdk.live import LiveServer

pytestmark = [pytest.mark.integration, pytest.mark.worker]

WHO = {"user": "u-burst", "persona": "luna", "creator": "studio-7"}
DEADLINE = 0.5


@pytest.fixture(scope="module")
def gateway_key(live: LiveServer, admin_key: str) -> str:
    with Tether(admin_key, base_url=live.url) as admin:
        return admin.api_keys.create(role="gateway", name="burst").token


def _stored_texts(client: Tether, rid: str, expected: int) -> list[str]:
    deadline = time.monotonic() + 30
    while True:
        texts = [t.text for t in client.turns.list(rid, limit=200)]
        if len(texts) >= expected or time.monotonic() > deadline:
            return texts
        time.sleep(0.2)


def test_a_killed_server_never_blocks_the_chat_and_the_queue_resends(
    live: LiveServer, gateway_key: str, celery_worker: subprocess.Popen[bytes]
) -> None:
    client = Tether(gateway_key, base_url=live.url)
    small = Tether(gateway_key, base_url=live.url, capture_queue_size=10)
    chat = client.gateway(deadline=DEADLINE)
    # The first message creates the relationship and warms the server: not what is
    # tested here, so it may take longer than the chat's deadline on a loaded machine.
    warm = client.gateway(deadline=30)
    first = warm.message(**WHO, text="你好，我是小明", session_id="s-1", system="You are Luna.")
    assert first.memory
    rid = first.relationship_id
    assert rid
    slowest, degraded = 0.0, 0
    for i in range(40):
        if i == 15:
            live.kill()
        started = time.monotonic()
        ctx = chat.message(**WHO, text=f"message {i}: 第{i}句话", session_id="s-1")
        chat.reply(ctx, f"reply {i}: 回答{i}", session_id="s-1")
        small.capture(rid, f"overflow {i}: 溢出{i}", session_id="s-2")
        slowest = max(slowest, time.monotonic() - started)
        degraded += not ctx.memory
        assert ctx.messages[-1] == {"role": "user", "content": f"message {i}: 第{i}句话"}
    assert slowest < DEADLINE + 0.2, f"a chat turn waited {slowest:.2f}s"
    assert degraded >= 25  # every message after the kill went on without memory
    assert client.capture_stats().pending > 0  # held while the server was down
    live.start()
    assert client.flush(timeout=30)
    assert small.flush(timeout=30)
    stats = client.capture_stats()
    assert (stats.queued, stats.sent, stats.dropped, stats.failed) == (81, 81, 0, 0), stats
    assert stats.retries > 0
    # The small queue held its newest 10 (and perhaps one batch in flight) of 25.
    overflow = small.capture_stats()
    assert overflow.queued == 40
    assert overflow.dropped >= 14, overflow
    assert (overflow.sent + overflow.dropped, overflow.failed) == (40, 0), overflow
    texts = _stored_texts(client, rid, 81 + overflow.sent)
    assert len(texts) == len(set(texts)) == 81 + overflow.sent  # each turn stored once
    client.close()
    small.close()


def test_closing_flushes_and_counts_what_could_not_be_sent(gateway_key: str) -> None:
    client = Tether(gateway_key, base_url="http://127.0.0.1:9")  # nothing listens there
    for i in range(5):
        client.capture(str(uuid.uuid4()), f"lost {i}", session_id="s")
    started = time.monotonic()
    client._capture._close_timeout = 1.0
    client.close()
    assert time.monotonic() - started < 6
    stats = client.capture_stats()
    assert (stats.queued, stats.sent, stats.dropped) == (5, 0, 5)


def _resolved(status: int) -> bytes:
    body = {
        k: str(uuid.uuid4())
        for k in (
            "relationship_id",
            "global_user_id",
            "user_facet_id",
            "creator_persona_id",
            "creator_id",
        )
    }
    return json.dumps(body | {"created": status == 201}).encode()


def test_retries_wait_for_retry_after_on_503_and_429() -> None:
    answers = iter(
        [
            (
                503,
                {"Retry-After": "0.3", "Content-Type": "application/problem+json"},
                b'{"code": "database_unavailable"}',
            ),
            (
                429,
                {"Retry-After": "0.3", "Content-Type": "application/problem+json"},
                b'{"code": "rate_limited"}',
            ),
            (201, {"Content-Type": "application/json"}, _resolved(201)),
        ]
    )
    with (
        scripted_server(lambda _: next(answers)) as (url, seen),
        Tether("tth_x", base_url=url, max_retries=2) as client,
    ):
        started = time.monotonic()
        client.relationships.resolve(
            user={"external_id": "u"}, persona={"external_id": "p", "creator_external_id": "c"}
        )
        assert time.monotonic() - started >= 0.6
    assert len(seen) == 3


def test_a_write_without_a_key_is_not_retried_on_503_and_errors_say_when_to_retry() -> None:
    problem = (
        503,
        {"Retry-After": "7", "Content-Type": "application/problem+json"},
        b'{"code": "database_unavailable", "status": 503}',
    )
    with (
        scripted_server(lambda _: problem) as (url, seen),
        Tether("tth_x", base_url=url) as client,
        pytest.raises(ServiceUnavailable) as unavailable,
    ):
        client.api_keys.create(role="gateway")
    assert len(seen) == 1  # creating a key twice is not harmless: not retried
    assert unavailable.value.retry_after == 7
    limited = (
        429,
        {"Retry-After": "60", "Content-Type": "application/problem+json"},
        b'{"code": "quota_exceeded"}',
    )
    with (
        scripted_server(lambda _: limited) as (url, seen),
        Tether("tth_x", base_url=url) as client,
        pytest.raises(RateLimited) as refused,
    ):
        client.health.get()
    assert len(seen) == 1  # a minute is longer than the SDK waits on its own
    assert (refused.value.code, refused.value.retry_after) == ("quota_exceeded", 60)


def test_a_lost_answer_is_retried_and_stored_once(
    live: LiveServer, gateway_key: str, celery_worker: subprocess.Popen[bytes]
) -> None:
    lost: list[str] = []

    def lose_first_turns_answer(request: Seen) -> tuple[int, dict[str, str], bytes] | None:
        answer = forward(live.url, request)
        if request.path.endswith("/turns") and request.method == "POST" and not lost:
            lost.append(request.path)
            return None  # stored upstream, but the client never hears it
        return answer

    with (
        scripted_server(lose_first_turns_answer) as (url, seen),
        Tether(gateway_key, base_url=url) as client,
    ):
        rid = client.relationships.resolve(
            user={"external_id": "u-lost"},
            persona={"external_id": "luna", "creator_external_id": "studio-7"},
        ).relationship_id
        result = client.turns.ingest(
            rid,
            turns=[
                {"session_id": "s", "role": "user", "text": "我下周去东京出差"},
                {"session_id": "s", "role": "assistant", "text": "Have a good trip to Tokyo!"},
            ],
        )
        assert [r.status for r in result.results] == ["duplicate", "duplicate"]
        keys = [
            json.loads(s.body)["turns"][0]["idempotency_key"]
            for s in seen
            if s.path.endswith("/turns")
        ]
        assert len(keys) == 2
        assert keys[0] == keys[1]  # the retry carried the same keys
        assert len(_stored_texts(client, rid, 2)) == 2
