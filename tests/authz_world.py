"""A tenant world for authorization tests: two creators, a persona each, relationships
operated by a creator and by two pool operators, memories (one a private note), knowledge
bases with documents, and a second tenant with the same shape. Every object is made
through the public API, as a customer would."""

from __future__ import annotations

import dataclasses
import itertools
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

ROLES = ("admin", "gateway", "creator", "operator", "compliance")
# Subjects of the creator and operator keys every tenant hands out.
ALICE, BOB, OP1, OP2 = "alice", "bob", "op-1", "op-2"
_fresh = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_fresh)}-{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class Side:
    """Objects along one owner chain: creator → persona → relationship → memory, the
    relationship's user and facet, the persona's knowledge base and a document in it."""

    tenant: Tenant
    creator_external_id: str
    operator: str | None  # the pool operator of the relationship, if any
    creator_id: str
    persona_id: str
    persona_external_id: str
    user_id: str
    user_external_id: str
    facet_id: str
    relationship_id: str
    memory_id: str
    private_memory_id: str
    knowledge_base_id: str
    document_id: str

    @property
    def ids(self) -> set[str]:
        return {
            self.creator_id,
            self.persona_id,
            self.user_id,
            self.facet_id,
            self.relationship_id,
            self.memory_id,
            self.knowledge_base_id,
            self.document_id,
        }


@dataclass
class Tenant:
    client: httpx.AsyncClient
    id: str
    keys: dict[str, dict[str, str]]  # role -> Authorization header
    shared_base_id: str = ""
    sides: dict[str, Side] = dataclasses.field(default_factory=dict)

    @property
    def admin(self) -> dict[str, str]:
        return self.keys["admin"]

    @property
    def gateway(self) -> dict[str, str]:
        return self.keys["gateway"]

    async def call(self, method: str, path: str, role: str = "admin", **kw: Any) -> Any:
        response = await self.client.request(method, path, headers=self.keys[role], **kw)
        assert response.status_code < 300, f"{method} {path}: {response.text}"
        return response.json() if response.content else None

    async def side(
        self, creator: str, persona: str, operator: str | None, knowledge_base_id: str | None
    ) -> Side:
        """A new relationship of a new user with ``persona`` of ``creator`` (operated by the
        pool ``operator`` if given), with a memory and a private note in it."""
        user = unique("user")
        resolved = await self.call(
            "POST",
            "/v1/resolve",
            "gateway",
            json={
                "user": {"external_id": user},
                "persona": {"external_id": persona, "creator_external_id": creator},
            },
        )
        rid = resolved["relationship_id"]
        if operator is not None:
            transfer = {"to": {"kind": "pool", "id": operator}, "reason": "proxy chat"}
            await self.call("POST", f"/v1/relationships/{rid}/transfer", "gateway", json=transfer)
        memories = f"/v1/relationships/{rid}/memories"
        memory = await self.call(
            "POST", memories, "gateway", json={"content": "The user keeps bees 养蜂"}
        )
        private = await self.call(
            "POST",
            memories,
            "creator_" + creator,
            json={"content": "VIP: handle gently 贵宾", "private_to_creator": True},
        )
        if knowledge_base_id is None:
            base = await self.call(
                "POST",
                "/v1/knowledge-bases",
                json={"name": unique("kb"), "creator_persona_id": resolved["creator_persona_id"]},
            )
            knowledge_base_id = base["id"]
        document = await self.call(
            "POST",
            f"/v1/knowledge-bases/{knowledge_base_id}/documents",
            files={
                "file": (unique("doc") + ".txt", "Warranty lasts two years. 保修两年。".encode())
            },
        )
        return Side(
            tenant=self,
            creator_external_id=creator,
            operator=operator,
            creator_id=resolved["creator_id"],
            persona_id=resolved["creator_persona_id"],
            persona_external_id=persona,
            user_id=resolved["global_user_id"],
            user_external_id=user,
            facet_id=resolved["user_facet_id"],
            relationship_id=rid,
            memory_id=memory["id"],
            private_memory_id=private["id"],
            knowledge_base_id=knowledge_base_id,
            document_id=document["id"],
        )

    async def fresh(self, side: Side) -> Side:
        """Another relationship along ``side``'s chain (same creator, persona, operator
        and base), for calls that destroy or change what they touch."""
        return await self.side(
            side.creator_external_id,
            side.persona_external_id,
            side.operator,
            side.knowledge_base_id,
        )

    async def fresh_persona(self, side: Side) -> str:
        """A new persona of ``side``'s creator, with no knowledge base."""
        persona = await self.call(
            "POST",
            f"/v1/creators/{side.creator_id}/personas",
            json={"external_id": unique("persona")},
        )
        return str(persona["id"])

    async def fresh_base(self, side: Side) -> Side:
        """``side`` with a knowledge base of its own, bound to a new persona of its
        creator (a persona holds one bound base), and a document in it."""
        persona_id = await self.fresh_persona(side)
        base = await self.call(
            "POST",
            "/v1/knowledge-bases",
            json={"name": unique("kb"), "creator_persona_id": persona_id},
        )
        return await self.fresh_document(dataclasses.replace(side, knowledge_base_id=base["id"]))

    async def fresh_document(self, side: Side) -> Side:
        document = await self.call(
            "POST",
            f"/v1/knowledge-bases/{side.knowledge_base_id}/documents",
            files={"file": (unique("doc") + ".txt", "Descale monthly. 每月除垢。".encode())},
        )
        return dataclasses.replace(side, document_id=document["id"])

    async def fresh_key(self) -> str:
        created = await self.call(
            "POST", "/v1/api-keys", json={"role": "gateway", "name": unique("key")}
        )
        return str(created["key"]["id"])


async def build_tenant(client: httpx.AsyncClient, make_tenant: Any) -> Tenant:
    """A tenant with keys for every role and four sides: ``alice`` (Alice's persona,
    operated by Alice), ``op1`` (Alice's persona, operated by pool operator op-1),
    ``bob`` (Bob's persona, operated by Bob) and ``op2`` (Bob's persona, op-2)."""
    handle = await make_tenant()
    keys = {"admin": handle.admin}
    keys["gateway"] = await handle.key("gateway")
    keys["creator"] = keys["creator_" + ALICE] = await handle.key("creator", subject=ALICE)
    keys["creator_" + BOB] = await handle.key("creator", subject=BOB)
    keys["operator"] = await handle.key("operator", subject=OP1)
    keys["compliance"] = await handle.key("compliance")
    tenant = Tenant(client, handle.id, keys)
    alice = await tenant.side(ALICE, "luna", None, None)
    bob = await tenant.side(BOB, "sol", None, None)
    tenant.sides = {
        "alice": alice,
        "op1": await tenant.side(ALICE, "luna", OP1, alice.knowledge_base_id),
        "bob": bob,
        "op2": await tenant.side(BOB, "sol", OP2, bob.knowledge_base_id),
    }
    shared = await tenant.call("POST", "/v1/knowledge-bases", json={"name": unique("shared")})
    tenant.shared_base_id = shared["id"]
    return tenant
