"""Every setting Tether reads, from the environment (prefix ``TETHER_``) or ``.env``.

Parsed once at a process edge (CLI, worker, test fixture) and passed in; nothing else
reads the environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


class ApiSettings(BaseModel):
    """HTTP limits and behaviour."""

    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)


class DatabaseSettings(BaseModel):
    """Connection pool sizing for the async engine."""

    pool_size: int = Field(default=10, ge=1)
    max_overflow: int = Field(default=10, ge=0)
    echo: bool = False


class WorkerSettings(BaseModel):
    """Celery worker behaviour."""

    concurrency: int = Field(default=2, ge=1)
    heartbeat_seconds: float = Field(default=5.0, gt=0)


class IdentitySettings(BaseModel):
    """Identity plane limits and cache behaviour."""

    cache_ttl_seconds: int = Field(default=7 * 24 * 3600, ge=60)


class Settings(BaseSettings):
    """The root of the settings tree.

    ``database_url`` and ``redis_url`` unset means the embedded default: ``tether serve``
    starts PostgreSQL and Redis under ``data_dir``.
    """

    model_config = SettingsConfigDict(
        env_prefix="TETHER_",
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
        frozen=True,
    )

    database_url: str | None = None
    redis_url: str | None = None
    data_dir: Path = Path(".tether")
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    log_level: LogLevel = "INFO"
    region: str = "local"

    api: ApiSettings = ApiSettings()
    db: DatabaseSettings = DatabaseSettings()
    worker: WorkerSettings = WorkerSettings()
    identity: IdentitySettings = IdentitySettings()

    @property
    def is_embedded(self) -> bool:
        """Whether this process must start its own Postgres and Redis."""
        return self.database_url is None or self.redis_url is None

    def with_endpoints(self, database_url: str, redis_url: str) -> Settings:
        """A copy that points at concrete services (used once the embedded ones run)."""
        return self.model_copy(update={"database_url": database_url, "redis_url": redis_url})

    def require_database_url(self) -> str:
        """The database URL, or a clear error when the embedded runtime was not started."""
        if self.database_url is None:
            raise RuntimeError("TETHER_DATABASE_URL is not set and no embedded Postgres runs")
        return self.database_url

    def require_redis_url(self) -> str:
        """The Redis URL, or a clear error when the embedded runtime was not started."""
        if self.redis_url is None:
            raise RuntimeError("TETHER_REDIS_URL is not set and no embedded Redis runs")
        return self.redis_url
