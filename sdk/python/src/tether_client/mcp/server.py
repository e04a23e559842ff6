"""The MCP server's tools. The server is bound to ONE relationship when it starts: no
tool takes a relationship id, so an agent cannot name another one, and every call goes
through the API with a gateway key, whose answers are scoped to what that key reaches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from tether_client import AsyncTether, TetherError, models

INSTRUCTIONS = (
    "Long-term memory of this conversation's relationship (one user with one persona). "
    "Call get_context before answering, recall to look something up, remember to keep a "
    "fact, forget to remove memories (it previews first; confirm with the token)."
)


@dataclass(frozen=True)
class Binding:
    """What the server serves: a relationship id, or the user/persona that resolve to it."""

    relationship_id: str | None = None
    user: str | None = None
    persona: str | None = None
    creator: str | None = None
    facet: str = "default"

    async def resolve(self, client: AsyncTether) -> str:
        if self.relationship_id:
            found = await client.relationships.get(self.relationship_id)
            return found.id
        if not (self.user and self.persona and self.creator):
            raise ValueError("bind a relationship id, or a user, persona and creator")
        resolved = await client.relationships.resolve(
            user={"external_id": self.user},
            persona={"external_id": self.persona, "creator_external_id": self.creator},
            facet=self.facet,
        )
        return resolved.relationship_id


def _memory(m: models.MemoryRead) -> dict[str, Any]:
    return {
        "id": m.id,
        "content": m.content,
        "type": m.memory_type,
        "occurred_at": m.occurred_at.isoformat(),
        "active": m.is_active,
    }


def _hit(hit: models.SearchHit) -> dict[str, Any]:
    e = hit.explanation
    return {
        "id": hit.id,
        "content": hit.content,
        "type": hit.memory_type,
        "score": round(hit.score, 4),
        "why": {
            "lexical_rank": e.lexical_rank,
            "vector_rank": e.vector_rank,
            "decay": e.decay,
            "importance": e.importance,
        },
    }


def build_server(client: AsyncTether, relationship_id: str, name: str = "tether") -> MCPServer[Any]:
    """An MCP server whose every tool acts on ``relationship_id`` only."""
    server: MCPServer[Any] = MCPServer(name=name, instructions=INSTRUCTIONS)
    rid = relationship_id

    @server.tool()
    async def remember(content: str, memory_type: str = "fact") -> dict[str, Any]:
        """Keep a memory about the user (a fact, preference, event, commitment…)."""
        try:
            kind: Any = memory_type
            return _memory(await client.memories.create(rid, content=content, memory_type=kind))
        except (TetherError, ValueError, TypeError) as exc:
            raise ToolError(f"not remembered: {exc}") from exc

    @server.tool()
    async def recall(query: str, k: int = 5) -> list[dict[str, Any]]:
        """Search the memories, best first, each with why it ranked (lexical and vector
        rank, time decay, importance)."""
        try:
            found = await client.memories.search(rid, query=query, k=k)
        except (TetherError, ValueError, TypeError) as exc:
            raise ToolError(f"recall failed: {exc}") from exc
        return [_hit(h) for h in found.items]

    @server.tool()
    async def get_context(query: str, max_tokens: int | None = None) -> str:
        """What to know before answering ``query``: persona rules, memories, recent turns
        (as text marked as data, not instructions)."""
        try:
            built = await client.context.build(
                relationship_id=rid, query=query, max_tokens=max_tokens
            )
        except (TetherError, ValueError, TypeError) as exc:
            raise ToolError(f"no context: {exc}") from exc
        return built.context

    @server.tool()
    async def list_memories(
        limit: int = 20, memory_type: str | None = None
    ) -> list[dict[str, Any]]:
        """The relationship's memories in creation order (at most ``limit``)."""
        try:
            kind: Any = memory_type
            page = await client.memories.list(rid, limit=limit, memory_type=kind).first_page()
        except (TetherError, ValueError, TypeError) as exc:
            raise ToolError(f"cannot list: {exc}") from exc
        return [_memory(m) for m in page.items]

    @server.tool()
    async def forget(
        query: str | None = None,
        memory_ids: list[str] | None = None,
        confirm_token: str | None = None,
    ) -> dict[str, Any]:
        """Forget memories in two steps: call with ``query`` or ``memory_ids`` to preview
        what would be forgotten (nothing changes), then call again with the returned
        ``confirm_token`` to forget exactly those."""
        try:
            if confirm_token:
                done = await client.memories.forget_confirm(rid, token=confirm_token)
                return {"forgotten": done.forgotten}
            if not query and not memory_ids:
                raise ToolError("give a query or memory_ids to preview")
            preview = await client.memories.forget_preview(rid, query=query, memory_ids=memory_ids)
        except (TetherError, ValueError, TypeError) as exc:
            raise ToolError(f"forget failed: {exc}") from exc
        return {
            "confirm_token": preview.token,
            "expires_at": preview.expires_at.isoformat(),
            "would_forget": [{"id": m.id, "content": m.content} for m in preview.memories],
        }

    @server.tool()
    async def knowledge_search(query: str, max_tokens: int = 1500) -> list[dict[str, Any]]:
        """Passages of the persona's knowledge base (manuals, FAQs) relevant to ``query``."""
        try:
            built = await client.context.build(
                relationship_id=rid,
                query=query,
                memory_enabled=False,
                knowledge_enabled=True,
                recent_turns=0,
                max_tokens=max_tokens,
            )
        except (TetherError, ValueError, TypeError) as exc:
            raise ToolError(f"knowledge search failed: {exc}") from exc
        return [
            {"text": i.text, "score": i.score, "source": i.reason}
            for i in built.items
            if i.section == "knowledge"
        ]

    return server
