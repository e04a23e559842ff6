"""The hot tier in a Redis of its own (decision 0021): a cache without persistence,
apart from the Redis that holds accepted turns and queued tasks."""

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from redis import Redis as SyncRedis

from tests.support import (
    CHESS,
    GO,
    app_client,
    delete_go_cut_off,
    hot_chess_and_go,
    resolved_relationship,
    wait_for_hot_copy,
)
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.health.schemas import ComponentHealth, HealthRead
from tether.health.services import is_ready
from tether.recall import versions
from tether.runtime.embedded_redis import EmbeddedRedis
from tether.runtime.services import backing_services

pytestmark = pytest.mark.integration


def _config(url: str, name: str) -> str:
    value: dict[str, str] = SyncRedis.from_url(url, decode_responses=True).config_get(name)
    return value[name]


def test_the_embedded_runtime_keeps_the_hot_tier_in_a_cache_without_persistence(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    tmp_path = tmp_path_factory.mktemp("hr", numbered=True)  # short: a unix socket path
    settings = Settings(_env_file=None, database_url="postgresql://unused/x", data_dir=tmp_path)  # type: ignore[call-arg]
    with backing_services(settings) as live:
        durable, hot = live.require_redis_url(), live.require_hot_redis_url()
        assert durable != hot
        assert _config(durable, "appendonly") == "yes"
        assert _config(durable, "maxmemory-policy") == "noeviction"  # never drops a turn
        assert _config(hot, "appendonly") == "no"
        assert _config(hot, "save") == ""
        assert _config(hot, "maxmemory-policy") == "allkeys-lru"
        assert int(_config(hot, "maxmemory")) == 1024**3
    # Both stopped with the block.
    for directory in ("redis", "redis-cache"):
        assert not (tmp_path / directory / "redis.sock").exists()


def test_a_hot_redis_url_given_is_used_and_no_cache_is_started(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    tmp_path = tmp_path_factory.mktemp("hg", numbered=True)
    own = EmbeddedRedis(tmp_path / "own", cache=True)
    url = own.start()
    try:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, database_url="postgresql://unused/x", data_dir=tmp_path
        ).model_copy(update={"hot_redis_url": url})
        with backing_services(settings) as live:
            assert live.require_hot_redis_url() == url
            assert not (tmp_path / "redis-cache").exists()
    finally:
        own.stop()


def test_an_external_redis_alone_also_holds_the_hot_tier() -> None:
    settings = Settings(_env_file=None, redis_url="redis://r:6379/0")  # type: ignore[call-arg]
    assert settings.require_hot_redis_url() == "redis://r:6379/0"


async def test_partition_copies_live_in_the_hot_redis_and_turns_in_the_other(
    client: Any, make_tenant: Any, resources: Resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid = await resolved_relationship(client, headers, "split")
    written = await client.post(
        f"/v1/relationships/{rid}/memories", json={"content": "用户喜欢川菜"}, headers=headers
    )
    assert written.status_code == 201, written.text
    turn = {"turns": [{"session_id": "s-1", "role": "user", "text": "I moved to Lyon"}]}
    accepted = await client.post(f"/v1/relationships/{rid}/turns", json=turn, headers=headers)
    assert accepted.status_code == 202, accepted.text
    searched = await client.post(
        f"/v1/relationships/{rid}/search", json={"query": "川菜"}, headers=headers
    )
    assert searched.json()["tier"] == "cold"
    await wait_for_hot_copy(resources.hot_redis, rid)

    hot_keys = {k.decode() for k in await resources.hot_redis.keys(f"*{rid}*")}
    main_keys = {k.decode() for k in await resources.redis.keys(f"*{rid}*")}
    assert {k.split(":")[1] for k in hot_keys} == {"pv", f"hot{versions.BLOB_FORMAT}"}
    assert not {k for k in main_keys if k.split(":")[1] in {"pv", "hot5"}}
    assert any(k.startswith("tether:wm:") for k in main_keys)  # the working memory

    # A write replaces the version token in the hot Redis: the next read is not served
    # from the copy of before.
    (version_key,) = [k for k in hot_keys if k.startswith("tether:pv:")]
    before = await resources.hot_redis.get(version_key)
    await client.post(
        f"/v1/relationships/{rid}/memories", json={"content": "用户住在成都"}, headers=headers
    )
    assert await resources.hot_redis.get(version_key) != before
    found = await client.post(
        f"/v1/relationships/{rid}/search", json={"query": "成都"}, headers=headers
    )
    assert "用户住在成都" in [r["content"] for r in found.json()["items"]]


async def test_with_the_hot_redis_down_recall_reads_postgres_and_turns_are_accepted(
    settings: Settings, client: Any, make_tenant: Any, tmp_path: Path
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid = await resolved_relationship(client, headers, "hot-down")
    await client.post(
        f"/v1/relationships/{rid}/memories",
        json={"content": "The user's sister lives in Lyon"},
        headers=headers,
    )
    down = settings.model_copy(update={"hot_redis_url": f"unix://{tmp_path}/absent.sock"})
    async with app_client(down) as api:
        search = f"/v1/relationships/{rid}/search"
        answer = (await api.post(search, json={"query": "sister"}, headers=headers)).json()
        assert answer["tier"] == "cold"
        assert "redis" in answer["degraded"]
        assert [r["content"] for r in answer["items"]] == ["The user's sister lives in Lyon"]
        turn = {"turns": [{"session_id": "s-1", "role": "user", "text": "hello"}]}
        accepted = await api.post(f"/v1/relationships/{rid}/turns", json=turn, headers=headers)
        assert accepted.status_code == 202, accepted.text
        health = (await api.get("/health")).json()
    components = health["components"]
    assert components["hot_redis"]["status"] == "down"
    assert components["redis"]["status"] == "ok"
    assert health["status"] == "degraded"


def _report(**statuses: str) -> HealthRead:
    components = {name: ComponentHealth(status, 1.0) for name, status in statuses.items()}  # type: ignore[arg-type]
    return HealthRead("ok", "t", components)


def test_readiness_does_not_depend_on_the_hot_redis() -> None:
    assert is_ready(_report(postgres="ok", redis="ok", hot_redis="down", worker="ok"))
    assert not is_ready(_report(postgres="ok", redis="down", hot_redis="ok", worker="ok"))
    # Nor on the workers: they are reported in /health and alerted on (decision 0063).
    assert is_ready(_report(postgres="ok", redis="ok", hot_redis="ok", worker="down"))


async def test_a_write_whose_invalidation_failed_stops_showing_within_the_version_ttl(
    settings: Settings,
    client: Any,
    make_tenant: Any,
    resources: Resources,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A writer that cannot reach the hot Redis leaves the old token and copy in place;
    the token's lifetime, never extended by reads, bounds how long they are served."""
    # Long enough for the cut-off writer's app to start on a loaded machine (it took
    # over 3 s with two test workers on two cores), short enough to wait out.
    monkeypatch.setattr(versions, "VERSION_TTL_SECONDS", 10)
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    pair = await hot_chess_and_go(client, headers, resources.hot_redis, "lost-invalidation")
    await delete_go_cut_off(settings, pair, headers, tmp_path)
    assert await pair.contents() == [CHESS, GO]  # the copy of before the delete
    deadline = time.monotonic() + 20
    while await pair.contents() != [CHESS]:
        assert time.monotonic() < deadline, "the deleted memory is still recalled"
        await asyncio.sleep(0.2)


async def _relay(path: Path, target: Path) -> asyncio.AbstractServer:
    """A unix socket at ``path`` that forwards to the Redis at ``target``: the hot Redis
    "comes back" for a process that could not reach it."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(str(target))
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    return await asyncio.start_unix_server(handle, path=str(path))


async def test_a_failed_invalidation_is_retried_when_the_hot_redis_answers_again(
    settings: Settings,
    client: Any,
    make_tenant: Any,
    resources: Resources,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    pair = await hot_chess_and_go(client, headers, resources.hot_redis, "retried-invalidation")
    socket = tmp_path_factory.mktemp("rl", numbered=True) / "hot.sock"
    hot_url = settings.require_hot_redis_url()
    target = Path(hot_url.removeprefix("unix://").partition("?")[0])
    database = hot_url.partition("?")[2]
    cut_off = settings.model_copy(update={"hot_redis_url": f"unix://{socket}?{database}"})
    async with app_client(cut_off) as writer:
        deleted = await writer.delete(f"{pair.memories}/{pair.go_id}", headers=headers)
        assert deleted.status_code == 204, deleted.text
        assert GO in await pair.contents()  # not invalidated yet
        relay = await _relay(socket, target)  # the writer's hot Redis is back
        try:
            deadline = time.monotonic() + 10
            while await pair.contents() != [CHESS]:
                assert time.monotonic() < deadline, "the failed invalidation was not retried"
                await asyncio.sleep(0.2)
        finally:
            relay.close()
