"""The tenant settings document: one section per concern, each a msgspec Struct that
validates itself. A new section is a new field with a default (decision 0045): stored
documents without it read as the default, so no migration is needed."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from tenancy.limits.schemas import TenantLimitsRead
from tether.core.provider_urls import MAX_URL_CHARS
from tether.core.text import Identifier, ShortText, printable

# The content plane's vocabularies (tether.recall.enums), which the identity plane may
# not import: a unit test keeps them equal.
MemoryTypeName = Literal[
    "profile", "preference", "fact", "event", "commitment", "emotion", "instruction", "summary"
]
LayerName = Literal["working", "episodic", "semantic"]
ALL_LAYERS: tuple[LayerName, ...] = ("working", "episodic", "semantic")
Days = Annotated[int, msgspec.Meta(ge=1, le=36_500)]
ProviderName = Annotated[
    str, msgspec.Meta(max_length=64, pattern="^[a-z0-9][a-z0-9._-]{0,63}$(?!\\n)")
]
ModelName = Annotated[
    str, msgspec.Meta(max_length=128, pattern="^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$(?!\\n)")
]
# Checked for form and against the deployment's allow-list by the service (422).
ProviderUrl = Annotated[str, printable(MAX_URL_CHARS)]


class MemoryTypeDays(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Days after which memories of each type expire (a type left out: never)."""

    profile: Days | None = None
    preference: Days | None = None
    fact: Days | None = None
    event: Days | None = None
    commitment: Days | None = None
    emotion: Days | None = None
    instruction: Days | None = None
    summary: Days | None = None

    def items(self) -> list[tuple[str, int]]:
        pairs = msgspec.structs.asdict(self).items()
        return [(name, days) for name, days in pairs if days is not None]


class RetentionSettings(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=False):
    """How long things are kept (null: for ever)."""

    # Raw turns older than this are purged; the memories extracted from them stay.
    raw_turns_days: Days | None = None
    # Memories of these types expire (stop being recalled) this many days after they
    # were stored.
    memory_type_days: MemoryTypeDays = msgspec.field(default_factory=MemoryTypeDays)
    # How long audit events are kept: older ones are removed behind a signed anchor
    # by the retention sweep (decision 0072).
    audit_years: Annotated[int, msgspec.Meta(ge=1, le=100)] | None = None


class OwnershipSettings(msgspec.Struct, forbid_unknown_fields=True):
    """The ownership lifecycle (the 72-hour rule, decision 0047)."""

    # A user turn the creator has not answered for this long moves the relationship
    # to the proxy-chat pool.
    creator_silence_hours: Annotated[int, msgspec.Meta(ge=1, le=8_760)] = 72
    auto_pool: bool = True
    # The pool's operator id: operator keys with this subject operate pooled relationships.
    pool_operator_id: Identifier = "proxy-pool"
    # The memory layers a pool operator inherits where the creator chose none.
    pool_inherits_layers: Annotated[list[LayerName], msgspec.Meta(max_length=3)] = msgspec.field(
        default_factory=lambda: list(ALL_LAYERS)
    )


SectionTokens = Annotated[int, msgspec.Meta(ge=0, le=32_000)]


class ContextSectionTokens(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Per-section token caps of POST /v1/context (a section left out: the deployment's
    ``TETHER_CONTEXT__<SECTION>_TOKENS``)."""

    rules: Annotated[int, msgspec.Meta(ge=50, le=32_000)] | None = None
    profile: SectionTokens | None = None
    last_time: SectionTokens | None = None
    memory: SectionTokens | None = None
    knowledge: SectionTokens | None = None
    recent: SectionTokens | None = None


class ContextTenantSettings(msgspec.Struct, forbid_unknown_fields=True):
    """How POST /v1/context spends tokens (null: the deployment's setting)."""

    # Used when a request sends no max_tokens (the same range a request may send).
    default_max_tokens: Annotated[int, msgspec.Meta(ge=200, le=32_000)] | None = None
    section_tokens: ContextSectionTokens = msgspec.field(default_factory=ContextSectionTokens)


class KnowledgeTenantSettings(msgspec.Struct, forbid_unknown_fields=True):
    """The knowledge section of the context (null: the deployment's setting)."""

    # Past this the context is built without knowledge (degraded: knowledge_timeout).
    query_timeout_ms: Annotated[int, msgspec.Meta(ge=50, le=10_000)] | None = None


class ExtractionTenantSettings(msgspec.Struct, forbid_unknown_fields=True):
    """The optional LLM step of memory extraction, where the deployment configured one."""

    # false: this tenant's sessions are extracted by the rules only (no LLM call).
    llm_enabled: bool = True
    # LLM calls per UTC day for this tenant (null: no limit); past it, rules only.
    llm_daily_calls: Annotated[int, msgspec.Meta(ge=0, le=10_000_000)] | None = None
    # A chat provider the deployment named (TETHER_PROVIDERS__LLM); null: the
    # deployment's own (TETHER_LLM__*). Tenants name a provider, never paste a key.
    llm_provider: ProviderName | None = None
    # The model sent to that provider (null: the provider's configured model).
    llm_model: ModelName | None = None
    # Another base URL for that provider, on a host the deployment allows
    # (TETHER_PROVIDERS__ALLOWED_HOSTS); the provider's key goes only to its own origin.
    llm_base_url: ProviderUrl | None = None


class EmbeddingTenantSettings(msgspec.Struct, forbid_unknown_fields=True):
    """Which embedding model makes and compares this tenant's vectors (decision 0077)."""

    # An embedding provider the deployment named (TETHER_PROVIDERS__EMBEDDING); null:
    # the deployment's own (TETHER_EMBEDDING__*). A change starts a re-embed of the
    # tenant's memories and knowledge chunks; until it ends, what it has not reached
    # ranks lexically.
    provider: ProviderName | None = None


PrivacyModeName = Literal["normal", "raw_only", "off"]


class PrivacyTenantSettings(msgspec.Struct, forbid_unknown_fields=True):
    """Privacy defaults of the tenant's new relationships."""

    # The privacy mode a relationship starts with when the resolver creates it
    # (normal: turns stored and memories extracted; raw_only: turns stored, no
    # memories; off: turns accepted and dropped). Existing relationships keep theirs.
    default_mode: PrivacyModeName = "normal"


class SessionsTenantSettings(msgspec.Struct, forbid_unknown_fields=True):
    """The session agent flags' tenant level (decision 0051): what a session gets when
    neither it nor its persona decides. Also read and written at
    /v1/tenant/session-defaults (decision 0086)."""

    memory_enabled: bool = True
    knowledge_enabled: bool = False
    # false: turns captured with memory off are not stored at all.
    keep_turns_without_memory: bool = True


class TenantSettingsDocument(msgspec.Struct, forbid_unknown_fields=True):
    retention: RetentionSettings = msgspec.field(default_factory=RetentionSettings)
    ownership: OwnershipSettings = msgspec.field(default_factory=OwnershipSettings)
    context: ContextTenantSettings = msgspec.field(default_factory=ContextTenantSettings)
    knowledge: KnowledgeTenantSettings = msgspec.field(default_factory=KnowledgeTenantSettings)
    extraction: ExtractionTenantSettings = msgspec.field(default_factory=ExtractionTenantSettings)
    privacy: PrivacyTenantSettings = msgspec.field(default_factory=PrivacyTenantSettings)
    embedding: EmbeddingTenantSettings = msgspec.field(default_factory=EmbeddingTenantSettings)
    sessions: SessionsTenantSettings = msgspec.field(default_factory=SessionsTenantSettings)


class TenantSettingsWrite(msgspec.Struct, forbid_unknown_fields=True):
    """The whole document (sections left out take their defaults), and why."""

    retention: RetentionSettings = msgspec.field(default_factory=RetentionSettings)
    ownership: OwnershipSettings = msgspec.field(default_factory=OwnershipSettings)
    context: ContextTenantSettings = msgspec.field(default_factory=ContextTenantSettings)
    knowledge: KnowledgeTenantSettings = msgspec.field(default_factory=KnowledgeTenantSettings)
    extraction: ExtractionTenantSettings = msgspec.field(default_factory=ExtractionTenantSettings)
    privacy: PrivacyTenantSettings = msgspec.field(default_factory=PrivacyTenantSettings)
    embedding: EmbeddingTenantSettings = msgspec.field(default_factory=EmbeddingTenantSettings)
    sessions: SessionsTenantSettings = msgspec.field(default_factory=SessionsTenantSettings)
    reason: ShortText = ""

    def document(self) -> TenantSettingsDocument:
        return TenantSettingsDocument(
            self.retention,
            self.ownership,
            self.context,
            self.knowledge,
            self.extraction,
            self.privacy,
            self.embedding,
            self.sessions,
        )


class TenantSettingsRead(msgspec.Struct):
    version: int
    retention: RetentionSettings
    ownership: OwnershipSettings
    context: ContextTenantSettings
    knowledge: KnowledgeTenantSettings
    extraction: ExtractionTenantSettings
    privacy: PrivacyTenantSettings
    embedding: EmbeddingTenantSettings
    sessions: SessionsTenantSettings
    updated_at: datetime | None
    updated_by_key_id: str | None
    # Read only, from GET /v1/tenant/limits (stored and changed there, not here).
    limits: TenantLimitsRead

    @classmethod
    def of(
        cls,
        version: int,
        document: TenantSettingsDocument,
        updated_at: datetime | None,
        updated_by_key_id: str | None,
        limits: TenantLimitsRead,
    ) -> TenantSettingsRead:
        return cls(
            version,
            document.retention,
            document.ownership,
            document.context,
            document.knowledge,
            document.extraction,
            document.privacy,
            document.embedding,
            document.sessions,
            updated_at,
            updated_by_key_id,
            limits,
        )


_decoder = msgspec.json.Decoder(TenantSettingsDocument)


_SECTIONS = frozenset(TenantSettingsDocument.__struct_fields__)


def parse_document(raw: object) -> TenantSettingsDocument:
    """A stored document (JSONB, already decoded) as the sections this release knows.
    A section a newer release wrote is skipped here, not refused: during a rolling
    upgrade the older pods still read the tenant's settings (decision 0062); a write
    keeps it (``newer_sections``)."""
    if isinstance(raw, dict):
        raw = {name: value for name, value in raw.items() if name in _SECTIONS}
    return _decoder.decode(msgspec.json.encode(raw))


def newer_sections(raw: object) -> dict[str, object]:
    """The sections of a stored document this release does not know, carried over as
    they are into the next version it writes."""
    if not isinstance(raw, dict):
        return {}
    return {name: value for name, value in raw.items() if name not in _SECTIONS}


def dump_document(document: TenantSettingsDocument) -> dict[str, object]:
    dumped: dict[str, object] = msgspec.to_builtins(document)
    return dumped


ReembedStatus = Literal["pending", "running", "done", "failed", "superseded"]


class ReembedRunRead(msgspec.Struct):
    """A re-embed of the tenant's memories and knowledge chunks after a change of its
    embedding model (decision 0079). Until it is done, recall compares the query only
    with vectors of the new model and ranks the rest lexically."""

    id: str
    status: ReembedStatus
    settings_version: int
    # The provider chosen (null: the deployment's model), the model that re-embeds and
    # its dimension (null until the run starts).
    provider: str | None
    model: str | None
    dimension: int | None
    memories_done: int
    memories_total: int
    chunks_done: int
    chunks_total: int
    error: str | None
    created_at: datetime
    updated_at: datetime | None
    finished_at: datetime | None


class ReembedRunList(msgspec.Struct):
    items: list[ReembedRunRead]
