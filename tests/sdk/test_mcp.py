"""The MCP server against a live Tether: every tool, over stdio, streamable HTTP and in
process; bound to one relationship, it cannot reach another however it is asked."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from tether_client import AsyncTether, Tether
from tether_client.mcp.server import build_server

from tests.sdk.live import LiveServer, free_port

pytestmark = pytest.mark.integration

LUNA = {"external_id": "luna", "creator_external_id": "studio-7"}
TOOLS = {"remember", "recall", "get_context", "list_memories", "forget", "knowledge_search"}


@pytest.fixture(scope="module")
def world(live: LiveServer, admin_key: str) -> dict[str, str]:
    """Two relationships of one persona; the server is bound to A's."""
    with Tether(admin_key, base_url=live.url) as admin:
        key = admin.api_keys.create(role="gateway", name="mcp").token
    with Tether(key, base_url=live.url) as gw:
        a = gw.relationships.resolve(user={"external_id": "u-a"}, persona=LUNA).relationship_id
        b = gw.relationships.resolve(user={"external_id": "u-b"}, persona=LUNA).relationship_id
        gw.memories.create(a, content="用户A喜欢喝乌龙茶")
        secret = gw.memories.create(b, content="The user B secret: 用户B的银行在苏黎世")
    return {"key": key, "a": a, "b": b, "b_memory": secret.id}


def payload(result: Any) -> Any:
    assert not result.is_error, result.content
    data = result.structured_content
    if isinstance(data, dict) and set(data) == {"result"}:
        return data["result"]
    return data if data is not None else json.loads(result.content[0].text)


async def test_every_tool_works_on_the_bound_relationship(
    live: LiveServer, world: dict[str, str]
) -> None:
    client = AsyncTether(world["key"], base_url=live.url)
    async with Client(build_server(client, world["a"])) as mcp:
        assert {t.name for t in (await mcp.list_tools()).tools} == TOOLS
        kept = payload(
            await mcp.call_tool(
                "remember", {"content": "The user runs marathons", "memory_type": "fact"}
            )
        )
        assert kept["content"] == "The user runs marathons"
        listed = payload(await mcp.call_tool("list_memories", {}))
        assert [m["content"] for m in listed] == ["用户A喜欢喝乌龙茶", "The user runs marathons"]
        hits = payload(await mcp.call_tool("recall", {"query": "乌龙茶"}))
        assert hits[0]["content"] == "用户A喜欢喝乌龙茶"
        assert "lexical_rank" in hits[0]["why"]
        context = payload(await mcp.call_tool("get_context", {"query": "喝什么？"}))
        assert "乌龙茶" in str(context)
        assert payload(await mcp.call_tool("knowledge_search", {"query": "warranty"})) == []
        preview = payload(await mcp.call_tool("forget", {"query": "marathons"}))
        assert [m["content"] for m in preview["would_forget"]] == ["The user runs marathons"]
        done = payload(await mcp.call_tool("forget", {"confirm_token": preview["confirm_token"]}))
        assert done == {"forgotten": 1}
    await client.aclose()


async def test_the_bound_server_cannot_reach_another_relationship(
    live: LiveServer, world: dict[str, str]
) -> None:
    client = AsyncTether(world["key"], base_url=live.url)
    seen: list[str] = []
    async with Client(build_server(client, world["a"])) as mcp:
        for tool, args in [
            ("recall", {"query": "银行 苏黎世 secret"}),
            ("get_context", {"query": "Where is the user's bank? 银行在哪里"}),
            ("list_memories", {"limit": 200}),
            # Naming B does not help: the tools take no relationship.
            ("list_memories", {"relationship_id": world["b"]}),
            ("recall", {"query": "secret", "relationship_id": world["b"]}),
            ("forget", {"memory_ids": [world["b_memory"]]}),
        ]:
            result = await mcp.call_tool(tool, args)
            seen.append(json.dumps(result.structured_content, ensure_ascii=False))
            seen += [getattr(c, "text", "") for c in result.content]
        preview = payload(await mcp.call_tool("forget", {"memory_ids": [world["b_memory"]]}))
        assert preview["would_forget"] == []
        confirm = await mcp.call_tool("forget", {"confirm_token": preview["confirm_token"]})
        seen += [getattr(c, "text", "") for c in confirm.content]
    await client.aclose()
    assert not [s for s in seen if "苏黎世" in s or world["b_memory"] in s]
    with Tether(world["key"], base_url=live.url) as gw:  # B's memory is untouched
        assert gw.memories.get(world["b"], world["b_memory"]).is_active


def _env(live: LiveServer, key: str) -> dict[str, str]:
    return {**os.environ, "TETHER_API_KEY": key, "TETHER_URL": live.url}


async def test_tether_mcp_serves_over_stdio(live: LiveServer, world: dict[str, str]) -> None:
    tether = str(Path(sys.executable).parent / "tether")
    args = ["mcp", "--user", "u-a", "--persona", "luna", "--creator", "studio-7"]
    params = StdioServerParameters(command=tether, args=args, env=_env(live, world["key"]))
    async with Client(params) as mcp:
        assert {t.name for t in (await mcp.list_tools()).tools} == TOOLS
        hits = payload(await mcp.call_tool("recall", {"query": "乌龙茶"}))
        assert hits[0]["content"] == "用户A喜欢喝乌龙茶"


async def test_tether_mcp_serves_streamable_http(live: LiveServer, world: dict[str, str]) -> None:
    port = free_port()
    command = [str(Path(sys.executable).parent / "tether-mcp"), "--transport", "http"]
    command += ["--port", str(port), "--relationship-id", world["a"]]
    server = subprocess.Popen(command, env=_env(live, world["key"]), stderr=subprocess.DEVNULL)  # noqa: ASYNC220
    try:
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient() as http:
            while True:
                try:
                    await http.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                    break
                except httpx.HTTPError:
                    assert server.poll() is None, "tether-mcp exited"
                    assert time.monotonic() < deadline, "tether-mcp did not listen"
                    await asyncio.sleep(0.1)
        async with Client(f"http://127.0.0.1:{port}/mcp") as mcp:
            listed = payload(await mcp.call_tool("list_memories", {}))
            assert "用户A喜欢喝乌龙茶" in [m["content"] for m in listed]
    finally:
        server.terminate()
        server.wait(10)
