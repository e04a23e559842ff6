"""What the API document says that the routes themselves cannot: descriptions of the
operations whose handlers have no docstring, and the error statuses an operation can
answer beyond those its declaration implies (see ``tether.api.openapi``)."""

from __future__ import annotations

DESCRIPTIONS: dict[str, str] = {
    "DeactivateMemory": "Mark a memory inactive with a reason: it stops being recalled but "
    "stays listed (with `active=false`) and keeps its history.",
    "GetDocument": "A document of the knowledge base: its indexing status, progress, chunk "
    "count and, when indexing failed, a readable error.",
    "GetKnowledgeBase": "One knowledge base with its binding and retrieval settings.",
    "GetMemory": "One memory of the relationship, in its current version.",
    "GetPrivacyPatterns": "The tenant's own privacy-filter patterns, applied to turns after "
    "the built-in ones (phones, payment cards, national ids, e-mails).",
    "ListMemoryHistory": "Every version of a memory, newest first: what it said and why it "
    "changed.",
    # Handlers whose one-line docstring is too terse for a reader of the document.
    "ListApiKeys": "The tenant's API keys with role, subject and state, oldest first, a page "
    "at a time; never their secrets.",
    "ListFacets": "The user's facets (`default`, `work`, …), each the user side of its "
    "relationships.",
    "GetUser": "One global user of the tenant, by id.",
    "ListCreators": "The tenant's creators, in creation order (a creator key sees only itself).",
    "CreateCreator": "Register a creator by its external id (409 when the id is taken).",
    "GetCreator": "One creator of the tenant, by id.",
    "UpdateCreator": "Rename a creator (its external id stays).",
    "GetPersona": "One creator persona, by id, with its privacy mode.",
    "ListPersonas": "Personas of the tenant, optionally of one creator (a creator key sees its "
    "own).",
    "GetRelationship": "One relationship (user facet × persona) with its current operator.",
    "ListPersonaProfileHistory": "Every version of the persona's profile, oldest first, each "
    "with its ETag.",
}

# Errors raised by a service that the route's declaration does not show.
EXTRA_ERRORS: dict[str, tuple[int, ...]] = {
    "PutPersonaProfile": (412, 428),
    "CreateUser": (409,),
    "CreateFacet": (409,),
    "CreateCreator": (409,),
    "CreatePersona": (409,),
    "CreateMemory": (409,),
    "CreateMemories": (409,),
    "CreateKnowledgeBase": (409,),
    "UpdateKnowledgeBase": (409,),
    "BindKnowledgeBase": (409,),
    "UploadDocument": (415,),
}

# Error answers that are not problems: readiness answers its report with 503.
REPORTED_ERRORS: dict[str, tuple[int, str]] = {
    "GetReadiness": (503, "Not ready: the same report, naming the component that is not ok."),
}

# Operations that stream JSON lines (one object per line) rather than one JSON document.
STREAMED: frozenset[str] = frozenset({"ExportAuditEvents", "ExportRelationship", "ExportUser"})
NDJSON = "application/x-ndjson"
