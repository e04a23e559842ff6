"""``tether migrate --check``: which migrations an upgrade would apply, and which of them
would break the release still running during a rolling upgrade (decision 0062).

Every migration after ``POLICY_SINCE`` declares ``phase = "expand"`` or
``phase = "contract"``. An expand migration only adds (tables, nullable columns,
indexes, functions), so the previous release keeps working on the new schema. A contract
migration removes or tightens what an older release used, and names with
``after = "<revision>"`` the revision from which on no release uses it: it is safe only
when the database was already at ``after`` before this upgrade, i.e. a release that no
longer needs the thing is the one running now.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from types import ModuleType

from alembic.script import Script, ScriptDirectory

# The last revision written before the policy: older ones declare no phase.
POLICY_SINCE = "0019"
PHASES = ("expand", "contract")
# What an expand migration must not do: each breaks code that still reads or writes the
# old shape (drops, renames, NOT NULL on an existing column, a changed type).
_DESTRUCTIVE = re.compile(
    r"op\.(drop_column|drop_table|rename_table|drop_constraint)\b"
    r"|new_column_name\s*="
    r"|op\.alter_column\([^)]*(nullable\s*=\s*False|type_\s*=)"
    r"|\b(DROP\s+(COLUMN|TABLE)|RENAME\s+(COLUMN|TO)|SET\s+NOT\s+NULL|ALTER\s+COLUMN\s+\w+\s+TYPE)\b",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Pending:
    revision: str
    phase: str
    summary: str


@dataclass(slots=True)
class CheckReport:
    current: str | None
    head: str | None
    pending: list[Pending] = field(default_factory=list)
    unsafe: dict[str, str] = field(default_factory=dict)  # revision -> why
    warnings: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.unsafe


def _summary(script: Script) -> str:
    doc = (script.module.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def _upgrade_source(module: ModuleType) -> str:
    upgrade = getattr(module, "upgrade", None)
    return "" if upgrade is None else inspect.getsource(upgrade)


def _is_legacy(revision: str) -> bool:
    return revision.isdigit() and POLICY_SINCE.isdigit() and int(revision) <= int(POLICY_SINCE)


def check(scripts: ScriptDirectory, current: str | None) -> CheckReport:
    """Pending migrations from ``current`` (None: an empty database) to the head."""
    head = scripts.get_current_head()
    report = CheckReport(current, head)
    chain = list(scripts.iterate_revisions("head", current or "base"))
    pending_ids = {s.revision for s in chain}
    for script in reversed(chain):  # oldest first
        module = script.module
        phase = str(getattr(module, "phase", "legacy" if _is_legacy(script.revision) else ""))
        report.pending.append(Pending(script.revision, phase or "undeclared", _summary(script)))
        problem = _problem(script.revision, module, phase, pending_ids)
        if problem is None:
            continue
        if current is None:  # nothing runs against an empty database yet
            report.warnings[script.revision] = problem
        else:
            report.unsafe[script.revision] = problem
    return report


def _problem(revision: str, module: ModuleType, phase: str, pending: set[str]) -> str | None:
    if phase == "legacy":
        return None
    if phase not in PHASES:
        return 'declares no phase: add phase = "expand" or "contract" (decision 0062)'
    if phase == "expand":
        found = _DESTRUCTIVE.search(_upgrade_source(module))
        if found:
            return (
                f"an expand migration must only add, but its upgrade has {found.group(0)!r}: "
                "split it, and contract in a later release"
            )
        return None
    after = getattr(module, "after", None)
    if not after:
        return 'a contract migration names no after = "<revision>" it is safe after'
    if after in pending:
        return (
            f"contracts what releases before {after} still use, and {after} is in this "
            f"same upgrade: deploy the release with {after} first, then this one"
        )
    return None
