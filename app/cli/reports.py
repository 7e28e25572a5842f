"""What `serve` and `migrate` tell the operator they are doing: which
database, where, in which mode, at which schema revision. A setting that
silently did not apply (a misspelled name, a file in another folder) shows
here first."""

from pathlib import Path

from sqlalchemy.engine import make_url

from ..core.config import Settings
from ..core.database_url import is_postgresql_url, parse_postgresql_url

BASE = "base (no tables)"


def database_shown(database_url: str) -> str:
    """The database a URL names, never its user or password: `SQLite file
    /abs/path.db` or `PostgreSQL host:port/database`, every server of a
    multi-host URL named (`h1:5432,h2:5432/db?target_session_attrs=...`)."""
    if is_postgresql_url(database_url):
        return f"PostgreSQL {parse_postgresql_url(database_url).shown()}"
    url = make_url(database_url)
    if not url.database or url.database == ":memory:":
        return "SQLite in memory"
    return f"SQLite file {Path(url.database).resolve()}"


def sqlite_file(database_url: str) -> Path | None:
    """The file of a SQLite URL; None for PostgreSQL or memory."""
    if is_postgresql_url(database_url):
        return None
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def serving(
    settings: Settings, api_key_count: int, revision: str | None
) -> tuple[str, dict[str, object]]:
    """`serve`'s start-up line, and the same facts as fields for JSON logs."""
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    address = f"{host}:{settings.port}"
    database = database_shown(settings.database_url)
    workers = f"{settings.workers} worker{'s' if settings.workers > 1 else ''}"
    keys = (
        f"API keys on ({api_key_count} key{'s' if api_key_count > 1 else ''})"
        if api_key_count
        else "no API keys"
        if settings.jwt_jwks is not None
        else "open mode (no API keys)"
    )
    if settings.jwt_jwks is not None:
        keys += ", end-user tokens on"
    message = (
        f"serving http://{address} with {workers}, {keys}, from {database} "
        f"at schema revision {revision or BASE}"
    )
    fields: dict[str, object] = {
        "address": address,
        "workers": settings.workers,
        "api_keys": api_key_count,
        "end_user_tokens": settings.jwt_jwks is not None,
        "database": database,
        "schema_revision": revision,
    }
    if settings.read_database_url is not None:
        replicas = database_shown(settings.read_database_url)
        lag = f"{settings.max_replica_lag_seconds:g}"
        message += f"; reads from {replicas} while at most {lag} s behind"
        fields["read_database"] = replicas
    return message, fields


def migration(database: str, before: str | None, after: str | None, history: list[str]) -> str:
    """What moving from revision `before` to `after` did (None: no tables),
    given the history oldest first."""
    position = {revision: index for index, revision in enumerate(history)}
    start = position[before] if before is not None else -1
    end = position[after] if after is not None else -1
    where = "the latest" if after is not None and after == history[-1] else None
    at = f"revision {after}" if after is not None else BASE
    at_and_where = f"{at}, {where}" if where else at
    if start == end:
        return f"{database} is already at {at_and_where}: nothing to do"
    if start < end:
        moved = history[start + 1 : end + 1]
        verb, preposition = "applied", "to"
    else:
        moved = list(reversed(history[end + 1 : start + 1]))
        verb, preposition = "reverted", "of"
    revisions = f"revision {moved[0]}" if len(moved) == 1 else f"revisions {moved[0]}..{moved[-1]}"
    return f"{verb} {revisions} {preposition} {database}; the schema is at {at_and_where}"
