"""Rule-based memory extraction from a session's turns (Chinese and English)."""

from tether.memories.extraction.extractor import extract
from tether.memories.extraction.summary import summarize_session
from tether.memories.extraction.types import Candidate, Extraction, ForgetRequest, TurnText

__all__ = [
    "Candidate",
    "Extraction",
    "ForgetRequest",
    "TurnText",
    "extract",
    "summarize_session",
]
