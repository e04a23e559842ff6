"""Every setting Tether reads, from the environment (prefix ``TETHER_``) or ``.env``.

Parsed once at a process edge (CLI, worker, test fixture) and passed in; nothing else
reads the environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from tether.core import task_queues
from tether.core.provider_urls import allow_entry, url_problem
from tether.core.text import CONTENT_CHARS

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
# The login the service connects as: it owns nothing and is held to row-level security
# (migration 0017). The embedded runtime creates it; in production a DBA does.
APP_ROLE = "tether_app"


class ApiSettings(BaseModel):
    """HTTP limits and behaviour."""

    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    # A second port for /health, /ready and /metrics alone (`tether api` listens on it;
    # the API is then not served there, nor they on the public port). Unset: one port.
    ops_port: int | None = Field(default=None, ge=1, le=65535)


class DatabaseSettings(BaseModel):
    """Connection pool sizing for the async engine."""

    pool_size: int = Field(default=10, ge=1)
    max_overflow: int = Field(default=10, ge=0)
    # How long a request waits for a pooled connection, and for a new one to connect,
    # before it answers 503 database_unavailable (a chat message cannot wait long).
    pool_timeout_seconds: float = Field(default=5.0, gt=0)
    connect_timeout_seconds: float = Field(default=5.0, gt=0)
    # How long one statement may go unanswered before its connection is closed and the
    # request answers 503: bounds a network that drops packets silently (0: no limit).
    # Statements that touch many rows (erasure, a document's chunks) go in pages under it.
    statement_timeout_seconds: float = Field(default=30.0, ge=0)
    echo: bool = False
    # Where migrations connect: the tables' owner (``tether migrate``, the start-up
    # migration of ``tether serve``, the Helm migration Job). The service itself
    # connects with ``TETHER_DATABASE_URL``, as a login that owns nothing. Unset: the
    # migrations use ``TETHER_DATABASE_URL`` too (that login is then the owner, and
    # the service needs ``role``). Embedded: set by the runtime.
    owner_url: str | None = None
    # A role every connection switches to (SET ROLE) after connecting. Only for a
    # deployment whose service still logs in as the owner: the login could switch back,
    # so prefer a login of its own in TETHER_DATABASE_URL (docs/security.md).
    role: str | None = Field(default=None, pattern=r"^[a-z_][a-z0-9_]{0,62}$")


class WorkerSettings(BaseModel):
    """Celery worker behaviour."""

    concurrency: int = Field(default=2, ge=1)
    heartbeat_seconds: float = Field(default=5.0, gt=0)
    # A task unacknowledged this long (its worker died) is delivered again.
    visibility_timeout_seconds: int = Field(default=300, ge=1)
    # How often a worker looks for such abandoned tasks.
    restore_interval_seconds: int = Field(default=10, ge=1)
    # A task that found Postgres unavailable is retried, waiting twice as long each
    # time (with jitter) up to this; below the visibility timeout, or a waiting retry
    # would be delivered a second time.
    outage_retry_max_seconds: int = Field(default=60, ge=1)
    # Then it fails as before (about four hours of outage at the default wait): a
    # statement that times out every time is not an outage but a bug, and must not
    # keep a document "indexing" for ever.
    outage_retry_attempts: int = Field(default=500, ge=0)
    # The broker queues this worker takes tasks from, comma-separated (task_queues.py):
    # all of them by default; a worker for one kind of work names only its queue.
    queues: Annotated[tuple[str, ...], NoDecode] = task_queues.ALL

    @model_validator(mode="after")
    def _retries_wait_less_than_the_visibility_timeout(self) -> WorkerSettings:
        if self.outage_retry_max_seconds * 2 > self.visibility_timeout_seconds:
            raise ValueError(
                "outage_retry_max_seconds must be at most half of visibility_timeout_seconds"
            )
        return self

    @field_validator("queues", mode="before")
    @classmethod
    def _queue_names(cls, value: object) -> object:
        if isinstance(value, str):
            value = tuple(name.strip() for name in value.split(",") if name.strip())
        if isinstance(value, (tuple, list)):
            if not value:
                raise ValueError("name at least one queue")
            if unknown := sorted(set(value) - set(task_queues.ALL)):
                raise ValueError(f"unknown queues {unknown}; known: {', '.join(task_queues.ALL)}")
        return value


class IdentitySettings(BaseModel):
    """Identity plane limits and cache behaviour."""

    cache_ttl_seconds: int = Field(default=7 * 24 * 3600, ge=60)
    # Relationship cards (owner, operator, privacy mode) cached for the write/read paths;
    # changes invalidate them at once, the TTL only bounds memory.
    card_ttl_seconds: int = Field(default=3600, ge=10)
    # Tenant settings (privacy patterns) are re-read this often per process.
    tenant_settings_ttl_seconds: float = Field(default=30.0, ge=0)
    # The ownership lifecycle's sweep (silent creators' relationships to the pool).
    ownership_sweep_seconds: float = Field(default=900.0, gt=0)


class AccessSettings(BaseModel):
    """Authorisation: how fresh each process keeps the tenants' own policy rules."""

    # A tenant's rules are re-read from Postgres at most this often per process, which
    # bounds how long another replica decides with the old rules after a change (the
    # replica that made the change applies it at once).
    policy_cache_seconds: float = Field(default=10.0, ge=0)
    # Each user's consented scopes are cached in Redis for the context builder. Consent
    # changes replace the entry at once; the TTL only bounds a failure between a change's
    # commit and its cache write (see tether/profiles/consent_cache.py).
    consent_cache_seconds: int = Field(default=300, ge=1)
    # An authenticated key is trusted this long per process: a key revoked or expired
    # elsewhere stops working here within it (at once in the process that revoked it).
    key_cache_seconds: float = Field(default=5.0, ge=0, le=60)
    # A token that is signed correctly but unknown (or revoked) is answered 401 from
    # memory this long, without asking Postgres again.
    unknown_key_cache_seconds: float = Field(default=60.0, ge=0, le=3600)
    # A key's last use is written at most this often per process (batched, off the
    # request path).
    last_used_resolution_seconds: float = Field(default=60.0, ge=1, le=3600)
    # How long a rotated key keeps working when the rotation does not say.
    rotation_overlap_seconds: int = Field(default=3600, ge=0, le=30 * 24 * 3600)
    # Tokens issued before signed tokens (decision 0035) are looked up in Postgres while
    # any exist; false refuses them without looking.
    legacy_tokens: bool = True


class LimitsSettings(BaseModel):
    """Abuse limits (docs/limits-and-keys.md): each tenant's allowance unless the
    operator gave it another (``tether tenant limits``); a tenant's admin may set lower
    values. 0 means no limit."""

    key_requests_per_second: int = Field(default=1000, ge=0)
    tenant_requests_per_second: int = Field(default=2000, ge=0)
    # Requests a key or tenant may send at once, as seconds of its rate (at least 1):
    # beyond that its requests are spread out at its rate, never let through in bursts.
    burst_seconds: float = Field(default=0.1, gt=0, le=60)
    turns_per_day: int = Field(default=5_000_000, ge=0)
    memories: int = Field(default=10_000_000, ge=0)
    knowledge_bytes: int = Field(default=10 * 1024**3, ge=0)
    # Stored memories and knowledge bytes are counted in Postgres at most this often per
    # tenant; in between, Redis counts what the API adds (deletions show at the recount).
    usage_recount_seconds: int = Field(default=60, ge=1, le=3600)
    # Failed authentications one client address may make per minute before its failing
    # requests are answered 429 (requests with a valid key are still served).
    failed_auth_per_minute: int = Field(default=30, ge=1)


class IngestSettings(BaseModel):
    """Turn ingestion limits, dedup windows and working memory."""

    max_batch: int = Field(default=100, ge=1, le=1000)
    max_text_chars: int = Field(default=8000, ge=1, le=CONTENT_CHARS)
    max_session_id_chars: int = Field(default=128, ge=1, le=128)
    dedup_window_seconds: int = Field(default=300, ge=1)
    idempotency_ttl_seconds: int = Field(default=24 * 3600, ge=60)
    # How far in the future a turn's ``at`` may be (client clocks drift).
    max_clock_skew_seconds: int = Field(default=300, ge=0)
    working_memory_turns: int = Field(default=50, ge=1)
    working_memory_ttl_seconds: int = Field(default=24 * 3600, ge=60)
    session_idle_minutes: float = Field(default=30.0, gt=0)
    sweep_interval_seconds: float = Field(default=60.0, gt=0)
    # Turns still missing from Postgres this long after acceptance are stored from
    # working memory (a lost task); also how often that sweep runs.
    reconcile_after_seconds: float = Field(default=30.0, gt=0)
    # How long the session-end task waits for queued turns to become durable.
    end_wait_seconds: float = Field(default=60.0, ge=0)


# pgvector's halfvec stores at most 16,000 dimensions (an HNSW index, 4,000): a model
# beyond it could never be stored in the untyped column (decision 0078).
MAX_EMBEDDING_DIMENSION = 16_000


class EmbeddingSettings(BaseModel):
    """Which embedding provider turns text into vectors (see docs/providers.md)."""

    kind: Literal["offline", "openai"] = "offline"
    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    dimension: int | None = Field(default=None, ge=1, le=MAX_EMBEDDING_DIMENSION)
    timeout_seconds: float = Field(default=2.0, gt=0)
    max_retries: int = Field(default=2, ge=0)
    batch_size: int = Field(default=64, ge=1)
    # A query embedding slower than this is abandoned: recall goes lexical-only.
    query_timeout_ms: int = Field(default=300, ge=1)


class LlmSettings(BaseModel):
    """The optional chat model that refines extraction (one call per session)."""

    enabled: bool = False
    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    timeout_seconds: float = Field(default=20.0, gt=0)
    max_retries: int = Field(default=2, ge=0)


class _NamedProvider(BaseModel):
    """What every deployment-named provider has: where it is, its key (kept here, never
    in a tenant's settings) and how long to wait for it."""

    base_url: str
    model: str
    api_key: SecretStr | None = None
    timeout_seconds: float = Field(default=20.0, gt=0)
    max_retries: int = Field(default=2, ge=0)

    @field_validator("base_url")
    @classmethod
    def _valid_url(cls, value: str) -> str:
        problem = url_problem(value)
        if problem is not None:
            raise ValueError(f"base_url {problem}")
        return value


class NamedLlmProvider(_NamedProvider):
    """A chat model the deployment names, for tenants to choose by that name (decision
    0075)."""


class NamedEmbeddingProvider(_NamedProvider):
    """An embedding model the deployment names, for tenants to choose by that name
    (decision 0077). Its dimension is the operator's to state: a tenant never sends one."""

    model: str = Field(max_length=64)  # stored with every vector it makes (64 characters)
    # Above MAX_EMBEDDING_DIMENSION the process still starts, but no tenant may choose it
    # (422): the vectors could not be stored.
    dimension: int = Field(ge=1)
    timeout_seconds: float = Field(default=2.0, gt=0)
    batch_size: int = Field(default=64, ge=1)


class ProvidersSettings(BaseModel):
    """What tenants may choose in their settings' ``extraction`` section (decision 0075):
    ``TETHER_PROVIDERS__LLM`` is a JSON object of named chat providers, and
    ``TETHER_PROVIDERS__ALLOWED_HOSTS`` a JSON list of hosts (``host`` or ``host:port``) a
    tenant's own ``llm_base_url`` may point at. Empty: tenants choose nothing."""

    llm: dict[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")], NamedLlmProvider] = (
        Field(default_factory=dict)
    )
    allowed_hosts: list[str] = Field(default_factory=list)
    # ``TETHER_PROVIDERS__EMBEDDING``: named embedding models a tenant's settings'
    # ``embedding.provider`` may choose (decision 0077).
    embedding: dict[
        Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")], NamedEmbeddingProvider
    ] = Field(default_factory=dict)

    @field_validator("allowed_hosts")
    @classmethod
    def _valid_hosts(cls, value: list[str]) -> list[str]:
        for entry in value:
            allow_entry(entry)  # ValueError names the entry
        return value


class MemorySettings(BaseModel):
    """Limits and lifecycle of memories."""

    max_content_chars: int = Field(default=2000, ge=1, le=CONTENT_CHARS)
    # The request schema refuses batches over 1000 before this is read.
    max_batch_create: int = Field(default=500, ge=1, le=1000)
    # Confirmations that promote working → episodic → semantic.
    promote_episodic_at: int = Field(default=2, ge=1)
    promote_semantic_at: int = Field(default=3, ge=1)
    # Each recall adds this to a memory's strength (which stretches its forgetting curve).
    reinforce_step: float = Field(default=0.5, ge=0)
    max_strength: float = Field(default=10.0, ge=1)
    expiry_sweep_seconds: float = Field(default=300.0, gt=0)
    # The retention sweep (tenant settings' ``retention``): daily by default.
    retention_sweep_seconds: float = Field(default=86_400.0, gt=0)
    summary_max_chars: int = Field(default=280, ge=40)


class RecallSettings(BaseModel):
    """Ranking weights (documented in docs/decisions/0007) and the hot tier."""

    fusion: Literal["score", "rrf"] = "score"
    rrf_k: int = Field(default=60, ge=1)
    # Without a lexical match, a memory needs this raw cosine to be recalled at all.
    min_similarity: float = Field(default=0.3, ge=-1, le=1)
    bm25_k1: float = Field(default=0.9, gt=0)
    bm25_b: float = Field(default=0.4, ge=0, le=1)
    lexical_weight: float = Field(default=1.0, ge=0)
    vector_weight: float = Field(default=0.5, ge=0)
    neighbour_weight: float = Field(default=0.6, ge=0, le=1)
    neighbour_window: int = Field(default=2, ge=0)
    # A memory within the period a query names ranks 1 + this times higher (0091).
    period_boost: float = Field(default=1.0, ge=0)
    decay_half_life_days: float = Field(default=90.0, gt=0)
    decay_floor: float = Field(default=0.7, ge=0, le=1)
    importance_floor: float = Field(default=0.6, ge=0, le=1)
    confidence_floor: float = Field(default=0.7, ge=0, le=1)
    # Hot partitions live in Redis this long after their last use.
    hot_ttl_seconds: int = Field(default=1800, ge=10)
    # Decoded partitions each API process keeps in memory (checked against Redis), and
    # their estimated size at most (0: no bound), whichever bound is reached first.
    local_partitions: int = Field(default=512, ge=0)
    local_megabytes: int = Field(default=384, ge=0)
    # Recalled memories are reinforced in one task per process this often.
    reinforce_flush_seconds: float = Field(default=1.0, gt=0, le=60)
    # Invalidations that failed (the hot Redis away) are retried this often (beat).
    invalidation_retry_seconds: float = Field(default=30.0, ge=1, le=3600)


class ContextSettings(BaseModel):
    """Token budgets of the context sections."""

    default_max_tokens: int = Field(default=2000, ge=100)
    rules_tokens: int = Field(default=300, ge=50)
    profile_tokens: int = Field(default=400, ge=0)
    memory_tokens: int = Field(default=800, ge=0)
    knowledge_tokens: int = Field(default=1600, ge=0)
    recent_turns_tokens: int = Field(default=600, ge=0)
    # The "last time" recap section, only when a request asks for it (last_time: true).
    last_time_tokens: int = Field(default=300, ge=0)
    memory_candidates: int = Field(default=20, ge=1, le=50)


class KnowledgeSettings(BaseModel):
    """Knowledge-base uploads, chunking and retrieval."""

    max_upload_bytes: int = Field(default=20 * 1024 * 1024, ge=1024)
    max_pdf_pages: int = Field(default=100, ge=1)
    chunk_chars: int = Field(default=700, ge=100)
    chunk_overlap_chars: int = Field(default=100, ge=0)
    top_k: int = Field(default=3, ge=1, le=50)
    # Past this, /v1/context is built without knowledge (degraded: knowledge_timeout).
    query_timeout_ms: int = Field(default=700, ge=1)
    # A document "uploaded" or "indexing" without any change for this long has stalled
    # (its task was never queued or was lost): the sweep, every ``stalled_sweep_seconds``,
    # queues it again up to ``stalled_requeues`` times, then marks it failed. Longer than
    # an indexing run's time limit (15 min), which reports progress every second anyway.
    stalled_after_seconds: int = Field(default=1800, ge=960)
    stalled_sweep_seconds: int = Field(default=300, ge=10)
    stalled_requeues: int = Field(default=3, ge=0)


class FilesSettings(BaseModel):
    """Where uploaded files' bytes live (decisions 0060, 0083): Postgres by default, or
    an S3-compatible object store that every API and worker pod reaches."""

    backend: Literal["postgres", "s3"] = "postgres"
    # The store's URL (unset: AWS's endpoint for ``region``); its region in the chart is
    # pinned to the release's region by values.schema.json.
    endpoint_url: str | None = None
    region: str | None = None
    bucket: str | None = None
    # Keys are ``<key_prefix><tenant>/<base>/<document>``: one tenant, one prefix.
    key_prefix: str = Field(default="", max_length=100)
    # Unset: the default credential chain (an instance role, a web identity token).
    access_key_id: SecretStr | None = None
    secret_access_key: SecretStr | None = None
    # Uploads go in parts of this size (S3's minimum part is 5 MiB).
    part_bytes: int = Field(default=8 * 1024 * 1024, ge=5 * 1024 * 1024)
    # A worker that cannot reach the store fails the document instead of waiting.
    connect_timeout_seconds: float = Field(default=5.0, gt=0, le=120)
    read_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    max_attempts: int = Field(default=3, ge=1, le=10)
    # The beat retries object deletions that did not happen right after their commit.
    deletion_sweep_seconds: int = Field(default=300, ge=10)

    @model_validator(mode="after")
    def _bucket_for_s3(self) -> FilesSettings:
        if self.backend == "s3" and not self.bucket:
            raise ValueError("files.bucket is required when files.backend is s3")
        return self


class ConsoleSettings(BaseModel):
    """The web console under /console: its sign-in sessions and cookies."""

    enabled: bool = True
    # A session ends after this long without a request, and at the latest after
    # ``session_max_hours`` (sign in again); revoking the key ends it at once.
    session_idle_minutes: float = Field(default=30.0, gt=0, le=24 * 60)
    session_max_hours: float = Field(default=12.0, gt=0, le=24 * 30)
    # "auto": Secure cookies when the request came over TLS; "always" / "never" force it.
    secure_cookies: Literal["auto", "always", "never"] = "auto"
    # Believe X-Forwarded-Proto (set it only behind a proxy that overwrites the header).
    trust_forwarded_proto: bool = False


class AuditSettings(BaseModel):
    """The audit log's keys, the access log's batching and the sealing and checkpoint
    schedules (decisions 0042-0044)."""

    # The server secret the per-tenant chain MAC keys and Ed25519 signing keys are
    # derived from (HMAC-SHA256 of purpose and tenant id; decisions 0043, 0073). Unset: a
    # random one made once in ``data_dir/audit.key`` (embedded runs; every API and worker
    # process must see the same secret). Changing it changes every public key.
    secret: SecretStr | None = None
    # A process writes the access events it collected every this many seconds.
    access_flush_seconds: float = Field(default=0.25, gt=0, le=60)
    # The beat seals unsealed access events into the chain this often, in batches.
    seal_interval_seconds: float = Field(default=30.0, ge=1)
    seal_batch: int = Field(default=5000, ge=1, le=100_000)
    # The beat writes a signed checkpoint of each tenant's chain head this often.
    checkpoint_interval_seconds: float = Field(default=3600.0, ge=1)


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
    # After a Redis timeout or refused connection, cache reads fail at once for this long
    # (per client and process) instead of each waiting for its timeout; 0 turns it off.
    redis_stall_seconds: float = Field(default=2.0, ge=0)
    data_dir: Path = Path(".tether")
    # The embedded Postgres's buffer pool; unset: a sixteenth of the memory, 128 MB to 1 GB
    # (tether.runtime.embedded_postgres.default_shared_buffers_mb). An external
    # Postgres is sized by its operator (docs/scaling.md).
    embedded_shared_buffers_mb: int | None = Field(default=None, ge=16, le=262_144)
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    log_level: LogLevel = "INFO"
    region: str = "local"
    # The Celery broker; unset means the same Redis as ``redis_url``.
    broker_url: str | None = None
    # The hot tier's Redis (partition copies and their version tokens: a cache, rebuilt
    # from Postgres when lost, so it needs no persistence). Unset: the embedded runtime
    # starts one of its own; with an external ``redis_url``, the same Redis.
    hot_redis_url: str | None = None

    api: ApiSettings = ApiSettings()
    db: DatabaseSettings = DatabaseSettings()
    worker: WorkerSettings = WorkerSettings()
    identity: IdentitySettings = IdentitySettings()
    access: AccessSettings = AccessSettings()
    limits: LimitsSettings = LimitsSettings()
    ingest: IngestSettings = IngestSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    llm: LlmSettings = LlmSettings()
    providers: ProvidersSettings = ProvidersSettings()
    memory: MemorySettings = MemorySettings()
    recall: RecallSettings = RecallSettings()
    context: ContextSettings = ContextSettings()
    knowledge: KnowledgeSettings = KnowledgeSettings()
    files: FilesSettings = FilesSettings()
    console: ConsoleSettings = ConsoleSettings()
    audit: AuditSettings = AuditSettings()

    @property
    def is_embedded(self) -> bool:
        """Whether this process must start its own Postgres and Redis."""
        return self.database_url is None or self.redis_url is None

    def with_endpoints(
        self,
        database_url: str,
        redis_url: str,
        hot_redis_url: str | None = None,
        owner_url: str | None = None,
    ) -> Settings:
        """A copy that points at concrete services (used once the embedded ones run):
        ``database_url`` the service's login, ``owner_url`` (if given) the owner's."""
        db = self.db if owner_url is None else self.db.model_copy(update={"owner_url": owner_url})
        update: dict[str, object] = {"database_url": database_url, "redis_url": redis_url, "db": db}
        if hot_redis_url is not None:
            update["hot_redis_url"] = hot_redis_url
        return self.model_copy(update=update)

    def require_database_url(self) -> str:
        """The database URL, or a clear error when the embedded runtime was not started."""
        if self.database_url is None:
            raise RuntimeError("TETHER_DATABASE_URL is not set and no embedded Postgres runs")
        return self.database_url

    def require_owner_url(self) -> str:
        """Where migrations connect: the owner's URL, else the service's."""
        return self.db.owner_url or self.require_database_url()

    def require_broker_url(self) -> str:
        """Where tasks go: the dedicated broker if set, else the Redis of ``redis_url``."""
        return self.broker_url or self.require_redis_url()

    def require_redis_url(self) -> str:
        """The Redis URL, or a clear error when the embedded runtime was not started."""
        if self.redis_url is None:
            raise RuntimeError("TETHER_REDIS_URL is not set and no embedded Redis runs")
        return self.redis_url

    def require_hot_redis_url(self) -> str:
        """The hot tier's Redis: its own if set, else the Redis of ``redis_url``."""
        return self.hot_redis_url or self.require_redis_url()
