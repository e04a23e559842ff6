"""POST /v1/memories/extract: the extraction preview (a dry run; writes nothing)."""

from __future__ import annotations

from litestar import Controller, post
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.relationships.directory import RelationshipDirectory
from tether.core.settings import Settings
from tether.memories.preview import ExtractionPreview
from tether.memories.preview_schemas import ExtractPreview, ExtractPreviewRequest


def provide_extraction_preview(
    state: State,
    db_session: NamedDependency[AsyncSession],
    relationship_directory: NamedDependency[RelationshipDirectory],
    settings: NamedDependency[Settings],
) -> ExtractionPreview:
    return ExtractionPreview(db_session, relationship_directory, settings, state.privacy_filters)


class ExtractionPreviewController(Controller):
    path = "/v1/memories/extract"
    tags = ["memories"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "extraction_preview": Provide(provide_extraction_preview, sync_to_thread=False)
    }

    @post(
        operation_id="PreviewExtraction",
        status_code=HTTP_200_OK,
        opt=policy("relationship_memory", "read"),
    )
    async def extract(
        self,
        data: JSONBody[ExtractPreviewRequest],
        extraction_preview: NamedDependency[ExtractionPreview],
    ) -> ExtractPreview:
        """What the pipeline would extract from these turns and what consolidation would
        decide against the relationship's active memories. A dry run: nothing is stored."""
        return await extraction_preview.preview(data)
