"""Chain verifications in progress: each step checks the next batch of events, so the
page can show progress over a long chain; where it stands is kept in Redis, for the key
that started it only."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import msgspec
from redis.asyncio import Redis

from tenancy.audit.services import VerifyStep

TTL_SECONDS = 3600


def _key(job_id: str) -> str:
    return f"tether:console:verify:{job_id}"


class VerifyJob(msgspec.Struct):
    tenant_id: str
    key_id: str
    total: int
    step: VerifyStep


@dataclass(frozen=True, slots=True)
class VerifyJobs:
    redis: Redis

    async def start(
        self, tenant_id: str, key_id: str, total: int, first: VerifyStep
    ) -> tuple[str, VerifyJob]:
        """A new job at ``first`` (the genesis, or the chain's retention anchor)."""
        job_id = secrets.token_urlsafe(16)
        job = VerifyJob(tenant_id, key_id, total, first)
        await self.save(job_id, job)
        return job_id, job

    async def save(self, job_id: str, job: VerifyJob) -> None:
        await self.redis.set(_key(job_id), msgspec.json.encode(job), ex=TTL_SECONDS)

    async def load(self, job_id: str, tenant_id: str, key_id: str) -> VerifyJob | None:
        raw = await self.redis.get(_key(job_id))
        if raw is None:
            return None
        job = msgspec.json.decode(raw, type=VerifyJob)
        return job if (job.tenant_id, job.key_id) == (tenant_id, key_id) else None
