"""The controlled vocabularies of a memory record. Its kind and layer are recall's (the
store filters and encodes them); polarity and outcomes belong to consolidation."""

from __future__ import annotations

from enum import StrEnum

from tether.recall.enums import MemoryLayer, MemoryType

__all__ = ["MemoryLayer", "MemoryType", "Outcome", "Polarity", "Provenance"]


class Polarity(StrEnum):
    AFFIRMED = "affirmed"
    NEGATED = "negated"


class Outcome(StrEnum):
    """What consolidation decided for one extracted candidate."""

    DUPLICATE = "duplicate"
    COMPATIBLE = "compatible"
    UPDATE = "update"
    CONTRADICTION = "contradiction"
    UNRELATED = "unrelated"
    CONFLICT = "conflict"  # would replace a memory of stronger evidence: held, not applied


class Provenance(StrEnum):
    """How a memory was learned: the strength of its evidence (decision 0053)."""

    USER_STATED = "user_stated"  # the user said it in their own words
    RULE_INFERRED = "rule_inferred"  # the rules read it into what the user said (a "yes")
    LLM_INFERRED = "llm_inferred"  # the optional LLM step found it
    STAFF_ENTERED = "staff_entered"  # written or edited through the API by staff
    USER_ENTERED = "user_entered"  # written or edited by the user themself (via the gateway)

    @property
    def manual(self) -> bool:
        return self in (Provenance.STAFF_ENTERED, Provenance.USER_ENTERED)

    @property
    def evidence(self) -> int:
        """Inferred 1 < stated 2 < manual 3."""
        if self.manual:
            return 3
        return 2 if self is Provenance.USER_STATED else 1


def admits(newer: Provenance, older: Provenance) -> bool:
    """May the pipeline's newer memory replace the older one? Only on evidence at least
    as strong, and never a manual one."""
    return not older.manual and newer.evidence >= older.evidence
