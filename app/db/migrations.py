"""Alembic, driven from code: upgrade, downgrade, and where the schema stands."""

import functools
import importlib.util
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from .table_base import WRITTEN_BY_HAND


def _migrations_directory() -> Path:
    """Where the migration scripts are: installed, the subpackage
    `migrations` of the server package (`session_state.migrations`, mapped
    from the repository's top-level `migrations/`); run from a source tree
    by its folder name (`python -m app.cli`, as `bench.before_after` runs a
    checkout), the top-level package `migrations` beside it."""
    server_package = __name__.split(".")[0]
    spec = importlib.util.find_spec(f"{server_package}.migrations") or importlib.util.find_spec(
        "migrations"
    )
    if spec is None or spec.origin is None:
        raise RuntimeError(f"the migration scripts of {server_package} are not installed")
    return Path(spec.origin).parent


MIGRATIONS_DIRECTORY = _migrations_directory()


class SchemaNotCurrent(RuntimeError):
    """The database schema is not at the latest migration."""

    def __init__(self, current: str | None, head: str | None) -> None:
        self.current = current
        self.head = head
        super().__init__(self.told())

    def told(self, database: str | None = None) -> str:
        """The message, naming `database` (as cli_reports.database_shown
        writes it) when the caller knows which one it looked at."""
        of = f" of {database}" if database else ""
        return (
            f"the database schema{of} is at revision "
            f"{self.current or 'none (empty database)'}, the latest is {self.head}: "
            "run `session-state migrate` (with the same SESSION_STATE_DATABASE_URL) first"
        )


class UnknownRevision(ValueError):
    """A migration target that is not in the history."""


def include_object(
    _object: object, name: str | None, _type: str, _reflected: bool, _compare_to: object
) -> bool:
    """For autogenerate: what the migrations write by hand per dialect (the
    table modules' WRITTEN_BY_HAND, known once they are imported, as their
    tables are) is not part of the shared models."""
    return name not in WRITTEN_BY_HAND


def alembic_config(database_url: str | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIRECTORY))
    if database_url is not None:
        config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


@functools.cache
def head_revision() -> str | None:
    """The latest revision of the installed scripts (read once per process:
    parsing every script is slow, and /readyz asks)."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def _current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def _upgrade(connection: Connection, target: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, target)


def _downgrade(connection: Connection, target: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.downgrade(config, target)


def revisions() -> list[str]:
    """The history, oldest first (it is linear: one head, no branches)."""
    script = ScriptDirectory.from_config(alembic_config())
    return [revision.revision for revision in reversed(list(script.walk_revisions()))]


async def move_to(engine: AsyncEngine, target: str) -> None:
    """Upgrades or downgrades to `target`: a revision, `head` or `base`."""
    history = revisions()
    position = {"base": -1, "head": len(history) - 1} | {
        revision: index for index, revision in enumerate(history)
    }
    if target not in position:
        raise UnknownRevision(
            f"unknown revision {target!r}: the revisions are {', '.join(history)} (or head, base)"
        )
    current = await current_revision(engine)
    if current is not None and current not in position:
        raise UnknownRevision(
            f"the database is at revision {current!r}, which this version of session-state "
            "does not know: a newer version migrated it"
        )
    if position[target] < (position[current] if current is not None else -1):
        await downgrade(engine, target)
    else:
        await upgrade(engine, target)


async def current_revision(engine: AsyncEngine) -> str | None:
    async with engine.connect() as connection:
        return await connection.run_sync(_current_revision)


async def upgrade_to_head(engine: AsyncEngine) -> None:
    """Upgrades an embedded database that is behind; one that is current is
    left alone without loading Alembic's scripts (a start-up then costs one
    query)."""
    if await current_revision(engine) != head_revision():
        await upgrade(engine)


async def upgrade(engine: AsyncEngine, target: str = "head") -> None:
    async with engine.begin() as connection:
        await connection.run_sync(_upgrade, target)


async def downgrade(engine: AsyncEngine, target: str) -> None:
    async with engine.begin() as connection:
        await connection.run_sync(_downgrade, target)


async def require_current_schema(engine: AsyncEngine) -> None:
    require_revision_current(await current_revision(engine))


def require_revision_current(current: str | None) -> None:
    """SchemaNotCurrent unless `current` (the database's revision, None for
    an empty database) is the latest."""
    head = head_revision()
    if current != head:
        raise SchemaNotCurrent(current, head)
