"""``tether migrate --check`` (decision 0062): pending migrations, and those that would
break the release still serving during a rolling upgrade."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory

from tether.core import migrations
from tether.core.migration_policy import POLICY_SINCE, check

HEADER = '''"""{doc}"""
from alembic import op
import sqlalchemy as sa

revision = "{rev}"
down_revision = {down}
{extra}

def upgrade() -> None:
    {body}


def downgrade() -> None:
    pass
'''


def _scripts(tmp_path: Path, chain: list[tuple[str, str, str]]) -> ScriptDirectory:
    versions = tmp_path / "versions"
    versions.mkdir()
    down = None
    for rev, extra, body in chain:
        text = HEADER.format(doc=f"step {rev}", rev=rev, down=repr(down), extra=extra, body=body)
        (versions / f"{rev}_step.py").write_text(text)
        down = rev
    (tmp_path / "script.py.mako").write_text("")
    config = Config()
    config.set_main_option("script_location", str(tmp_path))
    return ScriptDirectory.from_config(config)


ADD = 'op.add_column("t", sa.Column("c", sa.Text()))'
DROP = 'op.drop_column("t", "old")'


def test_an_expand_only_upgrade_is_safe_and_lists_what_is_pending(tmp_path: Path) -> None:
    scripts = _scripts(tmp_path, [("0100", "", "pass"), ("0101", 'phase = "expand"', ADD)])
    report = check(scripts, "0100")
    assert [p.revision for p in report.pending] == ["0101"]
    assert report.pending[0].phase == "expand"
    assert report.ok


def test_an_expand_migration_that_drops_a_column_is_unsafe(tmp_path: Path) -> None:
    scripts = _scripts(tmp_path, [("0100", "", "pass"), ("0101", 'phase = "expand"', DROP)])
    report = check(scripts, "0100")
    assert not report.ok
    assert "drop_column" in report.unsafe["0101"]


@pytest.mark.parametrize(
    "sql", ["ALTER TABLE t DROP COLUMN old", "ALTER TABLE t RENAME COLUMN a TO b"]
)
def test_destructive_sql_in_an_expand_migration_is_unsafe(tmp_path: Path, sql: str) -> None:
    body = f'op.execute("{sql}")'
    scripts = _scripts(tmp_path, [("0100", "", "pass"), ("0101", 'phase = "expand"', body)])
    assert "0101" in check(scripts, "0100").unsafe


def test_a_contract_in_the_same_upgrade_as_the_release_that_stops_using_it_is_unsafe(
    tmp_path: Path,
) -> None:
    chain = [
        ("0100", "", "pass"),
        ("0101", 'phase = "expand"', ADD),  # the release that stops reading "old"
        ("0102", 'phase = "contract"\nafter = "0101"', DROP),
    ]
    scripts = _scripts(tmp_path, chain)
    together = check(scripts, "0100")
    assert set(together.unsafe) == {"0102"}
    assert "deploy the release with 0101 first" in together.unsafe["0102"]
    # One release later, the previous release no longer needs the column.
    assert check(scripts, "0101").ok


def test_a_contract_without_after_or_a_migration_without_a_phase_is_unsafe(
    tmp_path: Path,
) -> None:
    chain = [("0100", "", "pass"), ("0101", 'phase = "contract"', DROP), ("0102", "", ADD)]
    report = check(_scripts(tmp_path, chain), "0100")
    assert set(report.unsafe) == {"0101", "0102"}
    assert "declares no phase" in report.unsafe["0102"]


def test_an_empty_database_has_nothing_running_to_break(tmp_path: Path) -> None:
    scripts = _scripts(tmp_path, [("0100", "", "pass"), ("0101", 'phase = "expand"', DROP)])
    report = check(scripts, None)
    assert report.ok
    assert "0101" in report.warnings


def test_our_migrations_since_the_policy_declare_a_phase_and_are_safe() -> None:
    scripts = ScriptDirectory.from_config(migrations.alembic_config("postgresql://unused"))
    report = check(scripts, POLICY_SINCE)
    assert report.pending, "a migration after the policy exists"
    assert report.unsafe == {}
    assert all(p.phase in ("expand", "contract") for p in report.pending)


def test_only_an_unknown_later_revision_is_newer_than_the_head() -> None:
    """What /ready accepts during a rolling upgrade: a schema a later release migrated."""
    head = migrations.head_revision()
    assert not migrations.is_newer_than_head(head)
    assert not migrations.is_newer_than_head(POLICY_SINCE)  # known, older: behind
    assert migrations.is_newer_than_head(f"{int(head) + 1:04d}")
    assert not migrations.is_newer_than_head("0000")  # unknown, but not later
    assert not migrations.is_newer_than_head("a1b2c3")  # not ours
