"""When LangGraph's rows expire (a thread of checkpoints, a store item),
written once for both tables and both dialects: every statement that reads,
writes, refreshes or sweeps them says it with these. A row expires its TTL
after its last write (or a read that refreshes it); NULL TTL: never. SQL
parameters: `:now` (the service's clock) and `:batch`."""

from .dialects import Dialect


def expired(row: str = "") -> str:
    """The row has expired; `row`: the alias its columns are qualified with
    (an upsert's target, where they are ambiguous)."""
    at = f"{row}.expire_time" if row else "expire_time"
    return f"({at} IS NOT NULL AND {at} <= :now)"


EXPIRED = expired()
LIVE = "(expire_time IS NULL OR expire_time > :now)"


def expiry(ttl: str) -> str:
    """When a row written at :now with the TTL `ttl` (SQL) expires."""
    return f":now + {ttl}"


def refreshed(new_ttl: str | None = None) -> str:
    """The SET of a TTL refresh at :now: the row's expiry pushed out by its
    TTL, or by `new_ttl` (SQL), which becomes its TTL, when that is not NULL."""
    if new_ttl is None:
        return f"expire_time = {expiry('ttl_seconds')}"
    ttl = f"coalesce({new_ttl}, ttl_seconds)"
    return f"ttl_seconds = {ttl}, expire_time = {expiry(ttl)}"


def sweep(table: str, dialect: Dialect) -> str:
    """Deletes a batch of the table's expired rows."""
    return f"""
DELETE FROM {table} WHERE {dialect.row_id} IN (
    SELECT {dialect.row_id} FROM {table} WHERE {EXPIRED} LIMIT :batch{dialect.skip_locked})
"""


def has_expired(expire_time: float | None, now: float) -> bool:
    """EXPIRED, for a row already read."""
    return expire_time is not None and expire_time <= now
