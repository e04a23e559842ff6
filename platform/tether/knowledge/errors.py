"""Errors of the knowledge-base API."""

from __future__ import annotations

from tether.core.errors import Conflict, InvalidInput, NotFound, TetherError


class KnowledgeBaseNotFound(NotFound):
    code = "knowledge_base_not_found"
    title = "Knowledge base not found"


class DocumentNotFound(NotFound):
    code = "document_not_found"
    title = "Document not found"


class KnowledgeBaseConflict(Conflict):
    """A persona already has a base, or two requests raced for the default."""

    code = "knowledge_base_conflict"
    title = "That would give a persona or the tenant two knowledge bases"


class InvalidKnowledgeBase(InvalidInput):
    code = "invalid_knowledge_base"
    title = "The knowledge base settings are invalid"


class DocumentTooLarge(TetherError):
    status_code = 413
    code = "document_too_large"
    title = "The document is larger than this deployment accepts"


class TooManyPages(InvalidInput):
    code = "document_too_many_pages"
    title = "The PDF has more pages than this deployment accepts"


class UnsupportedDocument(TetherError):
    status_code = 415
    code = "unsupported_document"
    title = "Only PDF, plain text and Markdown documents are accepted"


class EmptyDocument(InvalidInput):
    code = "document_empty"
    title = "The document has no text"


class DocumentUnreadable(Exception):
    """Indexing cannot read the document (corrupt, encrypted, no text). Its message is
    shown to the uploader as the document's ``error``, so it must be plain language."""


class FileStoreUnavailable(TetherError):
    """The object store holding uploaded files did not answer (decision 0083)."""

    status_code = 503
    code = "file_store_unavailable"
    title = "The file store is unavailable; try again"


class StoredFileMissing(Exception):
    """The object store has no object under the document's key."""
