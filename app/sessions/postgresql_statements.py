"""The SQL of sessions on PostgreSQL, written with `:name` parameters and
sent with asyncpg (app.db.postgresql_statement), and the rules every
statement on a session keeps, which other features'
statements (app.streams, app.memory, app.lifecycle) build on. JSONB
parameters are Python values (the pool's codec encodes them), except inside
arrays, where they go as JSON texts (asyncpg would take a list value for a
dimension of the array); identifiers are always parameters, never text."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..db.postgresql_statement import Statement
from .directory_listing import apps_sql, apps_variants, users_sql
from .domain import SessionKey
from .liveness_sql import live_sql
from .session_listing import ListingDialect, listing_sql, listing_variants

# -- rules every statement on a session keeps --------------------------------


def session_values(key: SessionKey, **values: Any) -> dict[str, Any]:
    """A statement's values naming a session (:app_name, :user_id,
    :session_id), with the others given."""
    return {
        "app_name": key.app_name,
        "user_id": key.user_id,
        "session_id": key.session_id,
        **values,
    }


def not_expired(now: str, table: str = "") -> str:
    """A session not expired at `now`: an expired one is missing to every
    read and write (the sweeper deletes it later)."""
    return live_sql(now, table)


def expired(now: str) -> str:
    return f"expire_time <= {now}"


def idle_expiry(now: str, table: str = "") -> str:
    """The expiry after a change at `now`: an idle timeout restarts."""
    return (
        f"CASE WHEN {table}ttl_seconds IS NULL THEN {table}expire_time"
        f" ELSE {now} + {table}ttl_seconds END"
    )


# -- change numbers ------------------------------------------------------------

# The number every write of a session row gives it (the user stream's order,
# app.streams.live): the writing transaction's id. Ids are taken at a
# transaction's first write, not at its commit, so a reader takes only rows
# numbered below the oldest transaction still running (CHANGE_HORIZON): none
# of those can commit later. One column of the row's write: no statement more.
CHANGE_NUMBER = "pg_current_xact_id()::text::bigint"

# -- the append ----------------------------------------------------------------

# One statement, one round trip, in autocommit, for one append, one request's
# several events, or a batch of appends (group commit,
# app/sessions/append_batches.py). Each append is a row of `item`; the session row
# is locked and bumped first and every other write joins on its result, so a
# missing, expired or stale session writes nothing; state merges happen inside
# PostgreSQL (`||` for the session document, one row per app/user key upserted
# in key order so that writers of overlapping keys cannot deadlock).
#
# Size limits (max_bytes): a delta that would take a scope past it bumps
# nothing, so writes nothing, and the sizes come back to say which scope. App
# and user keys carry their size (app_sizes, user_sizes: key -> bytes,
# measured by the caller), so only the keys written are read, and a scope is
# summed only when the delta makes it grow. Those reads see the rows committed
# when the statement starts: appends racing to grow one scope can each pass
# the limit by their own growth, never more. A session keeps an upper bound
# of its state's size (state_bytes), raised by session_growth (twice the
# delta's compact JSON: JSONB prints more spaces); the state is measured, and
# the bound set exact, only when the bound would pass the limit.
#
# Expiry: replace_expiry sets the timeout `ttl` (from now) or the time
# `expire_at`, or none when both are null; otherwise an idle timeout restarts.
#
# An event id already stored for its session makes its append write nothing
# (the caller looks for a retry); one stored by a concurrent transaction
# after the statement began fails it (a unique violation).

# An append's values, with their types: one row of `item`.
_CHANGE = {
    "app_name": "text",
    "user_id": "text",
    "session_id": "text",
    "expected": "bigint",  # the revision required (If-Match), or null
    "now": "float8",
    "update_time": "float8",  # the (last) event's time
    "session_delta": "jsonb",
    "session_growth": "bigint",
    "app_delta": "jsonb",
    "app_sizes": "jsonb",
    "user_delta": "jsonb",
    "user_sizes": "jsonb",
    "max_bytes": "bigint",
    "replace_expiry": "boolean",
    "ttl": "float8",
    "expire_at": "float8",
}
_ONE_EVENT = {
    "event_id": "text",
    "invocation_id": "text",
    "author": "text",
    "event_time": "float8",
    "data": "text",
}
_MANY_EVENTS = {
    "event_ids": "text[]",
    "invocation_ids": "text[]",
    "authors": "text[]",
    "event_times": "float8[]",
    "event_data": "text[]",
}
# The app and user state written with a new session.
_SHARED_CHANGE = {
    name: _CHANGE[name]
    for name in ("app_name", "user_id", "app_delta", "app_sizes", "user_delta", "user_sizes")
} | {"max_bytes": "bigint"}


def _one_item(columns: Mapping[str, str]) -> str:
    """`item` as one row of the parameters."""
    values = ", ".join(f":{name}::{kind} AS {name}" for name, kind in columns.items())
    return f"SELECT {values}, 1::bigint AS ord"


def _items(columns: Mapping[str, str]) -> str:
    """`item` as a row per element of the parameters' arrays (JSON as texts)."""
    arrays = ", ".join(
        f":{name}::{'text' if kind == 'jsonb' else kind}[]" for name, kind in columns.items()
    )
    values = ", ".join(
        f"u.{name}::jsonb AS {name}" if kind == "jsonb" else f"u.{name}"
        for name, kind in columns.items()
    )
    return (
        f"SELECT {values}, u.ord\n"
        f"      FROM unnest({arrays})\n"
        f"           WITH ORDINALITY AS u({', '.join(columns)}, ord)"
    )


@dataclass(frozen=True)
class _SharedScope:
    name: str
    table: str
    owner: tuple[str, ...]

    def matches(self, row: str, item: str = "i") -> str:
        return " AND ".join(f"{row}.{column} = {item}.{column}" for column in self.owner)


_APP = _SharedScope("app", "app_states", ("app_name",))
_USER = _SharedScope("user", "user_states", ("app_name", "user_id"))


def _delta(scope: _SharedScope) -> str:
    """The scope's keys written by each item, with their sizes."""
    return f"""{scope.name}_delta AS (
    SELECT i.ord, d.key, d.value, (i.{scope.name}_sizes ->> d.key)::bigint AS size
      FROM item AS i, jsonb_each(i.{scope.name}_delta) AS d
)"""


def _growth(scope: _SharedScope) -> str:
    # One index lookup per key written (a join here is planned as a scan of
    # the whole scope).
    return f"""(SELECT coalesce(sum(n.size - coalesce(
                     (SELECT x.size FROM {scope.table} AS x
                       WHERE {scope.matches("x")} AND x.key = n.key), 0)), 0)
              FROM {scope.name}_delta AS n WHERE n.ord = i.ord) AS {scope.name}_bytes"""


def _size_after(scope: _SharedScope) -> str:
    """The scope's size after the write when it grows; 0 when it does not."""
    name = scope.name
    return f"""CASE WHEN g.{name}_bytes <= 0 THEN 0 ELSE g.{name}_bytes +
             (SELECT coalesce(sum(x.size), 0) FROM {scope.table} AS x
               WHERE {scope.matches("x")})
           END AS {name}_bytes"""


def _upsert(scope: _SharedScope, applied: str) -> str:
    """The scope's keys of the items in `applied`, in key order; a key written
    by several items takes the last one's value."""
    owner = ", ".join(scope.owner)
    owner_of_item = ", ".join(f"i.{column}" for column in scope.owner)
    return f"""{scope.name}_written AS (
    INSERT INTO {scope.table} ({owner}, key, value, size)
    SELECT DISTINCT ON ({owner_of_item}, d.key) {owner_of_item}, d.key, d.value, d.size
      FROM {applied} AS b JOIN item AS i ON i.ord = b.ord
      JOIN {scope.name}_delta AS d ON d.ord = b.ord
     ORDER BY {owner_of_item}, d.key, d.ord DESC
    ON CONFLICT ({owner}, key) DO UPDATE SET value = EXCLUDED.value, size = EXCLUDED.size
)"""


# The shared scopes' sizes after each item's write (`shared_bytes`, 0 for a
# scope the item does not grow), and whether they stay within the limit.
_SHARED_SIZES = f"""{_delta(_APP)}, {_delta(_USER)}, growth AS (
    SELECT i.ord,
           {_growth(_APP)},
           {_growth(_USER)}
      FROM item AS i
), shared_bytes AS (
    SELECT g.ord,
           {_size_after(_APP)},
           {_size_after(_USER)}
      FROM growth AS g JOIN item AS i ON i.ord = g.ord
)"""
# For appends that write no app or user key: nothing grows, and the steps that
# would look their sizes up and write them are left out of the plan.
_NO_SHARED_SIZES = """shared_bytes AS (
    SELECT i.ord, 0::numeric AS app_bytes, 0::numeric AS user_bytes FROM item AS i
)"""
_SHARED_FITS = "shared.app_bytes <= i.max_bytes AND shared.user_bytes <= i.max_bytes"


def _shared_writes(applied: str) -> str:
    return ", ".join(_upsert(scope, applied) for scope in (_APP, _USER))


_SESSION_OF_ITEM = "s.app_name = i.app_name AND s.user_id = i.user_id AND s.id = i.session_id"
_EVENT_OF_ITEM = "e.app_name = i.app_name AND e.user_id = i.user_id AND e.session_id = i.session_id"
# Whether the session's size bound stays within the limit (no measure needed).
_BOUND_FITS = "i.session_growth = 0 OR s.state_bytes + i.session_growth <= i.max_bytes"
_STATE_AFTER = "octet_length((s.state || i.session_delta)::text)"


@dataclass(frozen=True)
class _Events:
    """How an item's events are stored: how many, whether one is stored
    already, and their rows after the bumped revision."""

    count: str
    stored: str
    rows: str


_ONE = _Events(
    count="1",
    stored="e.id = i.event_id",
    rows="""SELECT i.app_name, i.user_id, i.session_id, b.revision, i.event_id, i.invocation_id,
           i.author, i.event_time, i.data
      FROM bumped AS b JOIN item AS i ON i.ord = b.ord""",
)
# Several events of one session (a batch append): stored in order after the
# revision; the deltas are the events' deltas merged in order (a key written
# twice keeps its last value), so the state, the size checks and the shared
# rows are written once, as for one event.
_MANY = _Events(
    count="cardinality(i.event_ids)",
    stored="e.id = ANY(i.event_ids)",
    rows="""SELECT i.app_name, i.user_id, i.session_id,
           b.revision - cardinality(i.event_ids) + e.ord, e.id, e.invocation_id, e.author,
           e.event_time, e.data
      FROM bumped AS b JOIN item AS i ON i.ord = b.ord,
           unnest(i.event_ids, i.invocation_ids, i.authors, i.event_times, i.event_data)
           WITH ORDINALITY AS e(id, invocation_id, author, event_time, data, ord)""",
)


@dataclass(frozen=True)
class AppendStatement:
    """An append statement in two forms: one that writes the items' app and
    user keys too, and one for items that write neither (most events), whose
    plan leaves the shared scopes' steps out, at about half the cost for a
    single append (docs/performance.md, seventh round). Both take the same
    parameters and answer alike for such items."""

    shared: Statement
    session_only: Statement

    def writing(self, shared: bool) -> Statement:
        """The form for items of which some (`shared`) or none write app or
        user keys."""
        return self.shared if shared else self.session_only


def _append_forms(item: str, events: _Events, *, waits: bool) -> AppendStatement:
    return AppendStatement(
        shared=_append(item, events, waits=waits, shared=True),
        session_only=_append(item, events, waits=waits, shared=False),
    )


def _append(item: str, events: _Events, *, waits: bool, shared: bool) -> Statement:
    """Answers a row per item, in order: the revision (null when nothing was
    written), the app, user and session sizes the write would give, and
    whether another transaction held the session (only when not `waits`)."""
    shared_writes = f", {_shared_writes('bumped')}" if shared else ""
    return Statement.of(f"""
WITH item AS (
    {item}
), {_SHARED_SIZES if shared else _NO_SHARED_SIZES}, free AS (
    SELECT i.ord FROM item AS i JOIN sessions AS s ON {_SESSION_OF_ITEM}
       FOR UPDATE OF s{"" if waits else " SKIP LOCKED"}
), bumped AS (
    UPDATE sessions AS s
       SET state = s.state || i.session_delta, revision = s.revision + {events.count},
           update_time = i.update_time, change_number = {CHANGE_NUMBER},
           ttl_seconds = CASE WHEN i.replace_expiry THEN i.ttl ELSE s.ttl_seconds END,
           expire_time = CASE WHEN i.replace_expiry THEN coalesce(i.now + i.ttl, i.expire_at)
                              ELSE {idle_expiry("i.now", "s.")} END,
           state_bytes = CASE WHEN {_BOUND_FITS} THEN s.state_bytes + i.session_growth
                              ELSE {_STATE_AFTER} END
      FROM item AS i JOIN shared_bytes AS shared ON shared.ord = i.ord
      JOIN free ON free.ord = i.ord
     WHERE {_SESSION_OF_ITEM}
       AND {not_expired("i.now", "s.")}
       AND (i.expected IS NULL OR s.revision = i.expected)
       AND CASE WHEN {_BOUND_FITS} THEN true ELSE {_STATE_AFTER} <= i.max_bytes END
       AND {_SHARED_FITS}
       AND NOT EXISTS (SELECT 1 FROM events AS e WHERE {_EVENT_OF_ITEM} AND {events.stored})
 RETURNING i.ord, s.revision
), stored AS (
    INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author,
                        timestamp, data)
    {events.rows}
){shared_writes}
SELECT b.revision, shared.app_bytes, shared.user_bytes,
       CASE WHEN b.revision IS NOT NULL OR i.session_delta = '{{}}'::jsonb THEN 0 ELSE
         (SELECT {_STATE_AFTER} FROM sessions AS s WHERE {_SESSION_OF_ITEM}) END
         AS session_bytes,
       free.ord IS NULL AND EXISTS (SELECT 1 FROM sessions AS s WHERE {_SESSION_OF_ITEM})
         AS held_elsewhere
  FROM item AS i JOIN shared_bytes AS shared ON shared.ord = i.ord
  LEFT JOIN free ON free.ord = i.ord
  LEFT JOIN bumped AS b ON b.ord = i.ord
 ORDER BY i.ord
""")


# Waits for a session another transaction holds.
APPEND = _append_forms(_one_item(_CHANGE | _ONE_EVENT), _ONE, waits=True)
# Does not wait: a session another transaction holds makes the append write
# nothing and answer held_elsewhere (the batcher then sends it with APPEND,
# outside its batches, so that only this append waits).
APPEND_UNLESS_HELD = _append_forms(_one_item(_CHANGE | _ONE_EVENT), _ONE, waits=False)
# One request's several events, of one session.
APPEND_MANY = _append_forms(_one_item(_CHANGE | _MANY_EVENTS), _MANY, waits=True)
# Several appends, of different sessions (the batcher sees to it: each
# session row is bumped at most once): one round trip, one plan and one
# commit for all of them. It never waits on a session's lock (a fork's,
# another process's batch), so neither do the other appends in it, and
# batches cannot deadlock on sessions. Shared keys written by several of its
# appends take the last one's value: appends in one batch are concurrent
# requests, and any order of them is one they could have been served in.
APPEND_BATCH = _append_forms(_items(_CHANGE | _ONE_EVENT), _ONE, waits=False)

# The app and user state given with a new session, within the same limits as
# an append's (in the creating transaction): the sizes the write would give
# come back, and nothing is written when one passes max_bytes.
WRITE_SHARED_STATE = Statement.of(f"""
WITH item AS (
    {_one_item(_SHARED_CHANGE)}
), {_SHARED_SIZES}, fits AS (
    SELECT i.ord FROM item AS i JOIN shared_bytes AS shared ON shared.ord = i.ord
     WHERE {_SHARED_FITS}
), {_shared_writes("fits")}
SELECT shared.app_bytes, shared.user_bytes FROM shared_bytes AS shared
""")

# One round trip for a whole session read; event texts are joined by the
# database, and only events up to the revision read with the session row are
# taken, so events, state and ETag describe one moment. Their size is read
# first (from the TOAST pointers, without reading the texts): when it passes
# :max_events_bytes the texts are not joined at all, so no read can ask for
# a gigabyte.
SNAPSHOT = Statement.of(f"""
SELECT s.state, s.revision, s.update_time, s.expire_time, s.labels,
       (SELECT jsonb_object_agg(a.key, a.value) FROM app_states AS a
         WHERE a.app_name = :app_name) AS app_state,
       (SELECT jsonb_object_agg(u.key, u.value) FROM user_states AS u
         WHERE u.app_name = :app_name AND u.user_id = :user_id) AS user_state,
       sized.bytes AS events_bytes,
       CASE WHEN sized.bytes <= :max_events_bytes THEN
       (SELECT string_agg(recent.data, ',' ORDER BY recent.seq)
          FROM (SELECT e.seq, e.data FROM events AS e
                 WHERE e.app_name = :app_name AND e.user_id = :user_id
                   AND e.session_id = :session_id AND e.seq <= s.revision
                   AND (:after_timestamp::float8 IS NULL
                        OR e.timestamp >= :after_timestamp::float8)
                 ORDER BY e.seq DESC
                 LIMIT :limit::bigint) AS recent) END AS events
  FROM sessions AS s,
       LATERAL (SELECT coalesce(sum(octet_length(recent.data)), 0) AS bytes
                  FROM (SELECT e.data FROM events AS e
                         WHERE e.app_name = :app_name AND e.user_id = :user_id
                           AND e.session_id = :session_id AND e.seq <= s.revision
                           AND (:after_timestamp::float8 IS NULL
                                OR e.timestamp >= :after_timestamp::float8)
                         ORDER BY e.seq DESC
                         LIMIT :limit::bigint) AS recent) AS sized
 WHERE s.app_name = :app_name AND s.user_id = :user_id AND s.id = :session_id
   AND {not_expired(":now::float8", "s.")}
""")


# -- sessions ----------------------------------------------------------------

# An expired session (at :now) is missing.
_READ_SESSION = f"""
SELECT state, revision, update_time, expire_time, labels FROM sessions
 WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id
   AND {not_expired(":now::float8")}
"""
READ_SESSION = Statement.of(_READ_SESSION)
# Kept from being deleted until the transaction ends.
READ_SESSION_FOR_SHARE = Statement.of(_READ_SESSION + " FOR SHARE")

INSERT_SESSION = Statement.of(f"""
INSERT INTO sessions (app_name, user_id, id, state, initial_state, state_bytes, revision,
                      create_time, update_time, expire_time, ttl_seconds, labels, change_number)
VALUES (:app_name, :user_id, :session_id, :state, :state, :state_bytes, 0, :now, :now,
        :expire_time, :ttl_seconds, :labels, {CHANGE_NUMBER})
ON CONFLICT DO NOTHING
RETURNING revision
""")

# The session row is locked first, as an append locks it first: deleting its
# events before it would deadlock with an append retrying a stored event id. An
# expired one is locked too (and deleted), but reported missing.
LOCK_SESSION = Statement.of(f"""
SELECT {not_expired(":now::float8")} AS alive FROM sessions
 WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id
 FOR UPDATE
""")
# An expired session whose id a new session takes: deleted first, with its
# events, in the new session's transaction.
LOCK_EXPIRED_SESSION = Statement.of(f"""
SELECT 1 FROM sessions
 WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id
   AND {expired(":now::float8")}
 FOR UPDATE
""")
DELETE_SESSION_EVENTS = Statement.of("""
DELETE FROM events WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
""")
DELETE_SESSION = Statement.of("""
DELETE FROM sessions WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id
""")


# Containment and "has every key" are what the GIN index on labels answers.
_LISTING_DIALECT = ListingDialect(
    has_labels="s.labels @> CAST(:label_equal AS jsonb)"
    " AND s.labels ?& CAST(:label_keys AS text[])",
    labels_bytes="coalesce(octet_length(CAST(s.labels AS text)), 0)",
    # The statement's snapshot: change numbers are writers' transaction ids.
    horizon="CAST(pg_current_snapshot() AS text)",
    not_running="{0} <> ALL(CAST(:walk_running AS bigint[]))",
    label_guard=True,
)

# The same statements as the SQLite store's, numbered for asyncpg, by
# (one_user, after_cursor, descending, labelled) (session_listing.listing_key).
LISTINGS = {
    variant: Statement.of(
        listing_sql(
            _LISTING_DIALECT,
            one_user=variant[0],
            after_cursor=variant[1],
            descending=variant[2],
            labelled=variant[3],
        )
    )
    for variant in listing_variants()
}

# A session's expiry replaced (:ttl_seconds: the idle timeout, :expire_time:
# the time it gives or the absolute time), if it is not expired at :now and,
# when :expected is not null, still at that revision; the revision comes back.
SET_EXPIRY = Statement.of(f"""
UPDATE sessions
   SET ttl_seconds = :ttl_seconds, expire_time = :expire_time, change_number = {CHANGE_NUMBER}
 WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id
   AND {not_expired(":now::float8")}
   AND (:expected::bigint IS NULL OR revision = :expected::bigint)
RETURNING revision
""")

# A session's labels replaced (:labels; NULL: none) and, when
# :replace_expiry is true, its expiry too (:ttl_seconds, :expire_time as
# SET_EXPIRY's); the rest as SET_EXPIRY.
SET_LABELS = Statement.of(f"""
UPDATE sessions SET labels = :labels, change_number = {CHANGE_NUMBER},
       ttl_seconds = CASE WHEN :replace_expiry::boolean THEN :ttl_seconds ELSE ttl_seconds END,
       expire_time = CASE WHEN :replace_expiry::boolean THEN :expire_time ELSE expire_time END
 WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id
   AND {not_expired(":now::float8")}
   AND (:expected::bigint IS NULL OR revision = :expected::bigint)
RETURNING revision
""")

# GET /apps and GET /apps/{app}/users, by (restricted, after_cursor) and after_cursor.
APPS = {
    (restricted, after_cursor): Statement.of(
        apps_sql(
            "s.app_name = ANY(CAST(:allowed AS text[]))" if restricted else None,
            after_cursor=after_cursor,
        )
    )
    for restricted, after_cursor in apps_variants()
}
USERS = {after: Statement.of(users_sql(after_cursor=after)) for after in (False, True)}

# -- fork --------------------------------------------------------------------

# The source of a fork, kept from being deleted until the copy commits.
FORK_SOURCE = Statement.of(f"""
SELECT state, revision, initial_state, labels FROM sessions
 WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id
   AND {not_expired(":now::float8")}
 FOR SHARE
""")
INSERT_FORK = Statement.of(f"""
INSERT INTO sessions (app_name, user_id, id, state, initial_state, state_bytes, revision,
                      create_time, update_time, expire_time, ttl_seconds, labels, change_number)
VALUES (:app_name, :user_id, :session_id, :state, :initial_state, :state_bytes, :revision,
        :now, :now, :expire_time, :ttl_seconds, :labels, {CHANGE_NUMBER})
ON CONFLICT DO NOTHING
RETURNING revision
""")
# One batch of the source's events (:after_seq < seq <= :up_to_seq) copied
# into the fork (:fork_id).
COPY_EVENTS = Statement.of("""
INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author, timestamp,
                    data)
SELECT app_name, user_id, :fork_id, seq, id, invocation_id, author, timestamp, data FROM events
 WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
   AND seq > :after_seq AND seq <= :up_to_seq
""")
INITIAL_STATE = Statement.of(f"""
SELECT initial_state IS NOT NULL AS has_initial_state, initial_state FROM sessions
 WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id
   AND {not_expired(":now::float8")}
""")
EVENTS_BETWEEN = Statement.of("""
SELECT seq, data FROM events
 WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
   AND seq > :after_seq AND seq <= :up_to_seq
 ORDER BY seq
 LIMIT :limit
""")
# Whether the event a fork stops at is still there: events are only ever
# removed from the end and a seq is never used twice, so while it is, every
# event before it is the one the fork's state was derived from.
EVENT_AT_SEQ = Statement.of("""
SELECT EXISTS (SELECT 1 FROM events
                WHERE app_name = :app_name AND user_id = :user_id
                  AND session_id = :session_id AND seq = :seq)
""")

# -- removing events ---------------------------------------------------------

# The session's revision and the seq that is newest once its newest :count
# events go (0: none is left), read together; no row when it is missing.
NEWEST_KEPT_SEQ = Statement.of(f"""
SELECT s.revision,
       coalesce((SELECT e.seq FROM events AS e
                  WHERE e.app_name = :app_name AND e.user_id = :user_id
                    AND e.session_id = :session_id
                  ORDER BY e.seq DESC
                 OFFSET :count LIMIT 1), 0) AS kept_seq
  FROM sessions AS s
 WHERE s.app_name = :app_name AND s.user_id = :user_id AND s.id = :session_id
   AND {not_expired(":now::float8", "s.")}
""")
# The session's revision and its newest :count events (seq, data), read
# together; one row with null seq when it has none, no row when it is missing.
NEWEST_EVENTS = Statement.of(f"""
SELECT s.revision, e.seq, e.data
  FROM sessions AS s
  LEFT JOIN LATERAL (SELECT e.seq, e.data FROM events AS e
                      WHERE e.app_name = :app_name AND e.user_id = :user_id
                        AND e.session_id = :session_id
                      ORDER BY e.seq DESC
                      LIMIT :count) AS e ON true
 WHERE s.app_name = :app_name AND s.user_id = :user_id AND s.id = :session_id
   AND {not_expired(":now::float8", "s.")}
""")
# Removes the events after seq :after_seq if the session is still at revision
# :expected; the
# removal is a change like any write: the revision goes up by one (never back,
# so an If-Match taken before cannot match again), the update time is :now
# and an idle timeout restarts. :state, when not null, replaces the session-scope
# state (measured as stored). The session row is locked first, as every
# writer locks it; an append waiting for it then finds the revision moved.
REMOVE_EVENTS = Statement.of(f"""
WITH bumped AS (
    UPDATE sessions
       SET revision = revision + 1, update_time = :now::float8, change_number = {CHANGE_NUMBER},
           state = coalesce(:state::jsonb, state),
           state_bytes = CASE WHEN :state::jsonb IS NULL THEN state_bytes
                              ELSE octet_length(:state::jsonb::text) END,
           expire_time = {idle_expiry(":now::float8")}
     WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id
       AND revision = :expected::bigint
       AND {not_expired(":now::float8")}
 RETURNING revision
), removed AS (
    DELETE FROM events AS e USING bumped
     WHERE e.app_name = :app_name AND e.user_id = :user_id AND e.session_id = :session_id
       AND e.seq > :after_seq::bigint
 RETURNING e.id, e.seq
), recorded AS (
    INSERT INTO event_removals (app_name, user_id, session_id, revision, event_ids)
    SELECT :app_name, :user_id, :session_id, bumped.revision,
           (SELECT coalesce(json_agg(id ORDER BY seq), '[]'::json)::text FROM removed)
      FROM bumped
)
SELECT bumped.revision, (SELECT count(*) FROM removed) AS removed FROM bumped
""")
# Whether the event `g` changed session-scope state: its delta
# (actions.stateDelta, else actions.state_delta, as app.sessions.events reads it) has
# a key without a scope prefix (app.sessions.state.split_delta). As `json`, not
# `jsonb`: only parsed, never converted, and a repeated key's last value
# counts, as in Python. A sealed event (encryption at rest) counts as one that
# did: the service then derives the state after from the opened events.
_CHANGES_SESSION_STATE = """
CASE WHEN left(g.data, 5) = chr(1) || 'ss1:' THEN true ELSE EXISTS (SELECT 1
          FROM (SELECT coalesce(actions -> 'stateDelta', actions -> 'state_delta') AS delta
                  FROM (SELECT CAST(g.data AS json) -> 'actions' AS actions) AS a) AS d
         WHERE CASE WHEN json_typeof(d.delta) = 'object' THEN
                    EXISTS (SELECT 1 FROM json_object_keys(d.delta) AS k (key)
                             WHERE k.key NOT LIKE 'app:%' AND k.key NOT LIKE 'user:%'
                               AND k.key NOT LIKE 'temp:%')
               END) END
"""
_NOW = "CAST(:now AS float8)"


def _of_user(table: str) -> str:
    return f"{table}.app_name = :app_name AND {table}.user_id = :user_id"


# A pop (DELETE .../events?last=n&returnRemoved=true) in one round trip: the
# newest :count events and the session, read in the statement's snapshot,
# then REMOVE_EVENTS' writes (the same rows: revision one up, update time,
# idle expiry, the removal recorded with the events' ids) if the session is
# still at the revision read when its row is locked (so a pop racing another
# takes nothing, and an append racing it is never removed). Nothing is
# written when there are no events, :expected (not null) is not the
# revision, the events' JSON passes :max_bytes, or one of them changed
# session-scope state (the service derives the state after and removes them
# with REMOVE_EVENTS). One row, unless the session is missing: the revision
# read, whether the events change state, the session after (or as read,
# when nothing was written) with its app and user state, the events oldest
# first and how many were removed (NULL: nothing written).
POP_NEWEST = Statement.of(f"""
WITH found AS (
    SELECT s.state, s.revision, s.update_time, s.expire_time, s.labels FROM sessions AS s
     WHERE {_of_user("s")} AND s.id = :session_id AND {not_expired(_NOW, "s.")}
), going AS (
    SELECT e.seq, e.data FROM events AS e
     WHERE {_of_user("e")} AND e.session_id = :session_id
     ORDER BY e.seq DESC
     LIMIT CAST(:count AS bigint)
), verdict AS (
    SELECT found.revision,
           EXISTS (SELECT 1 FROM going AS g WHERE {_CHANGES_SESSION_STATE}) AS changes_state,
           (SELECT coalesce(sum(octet_length(g.data)), 0) FROM going AS g) AS bytes,
           EXISTS (SELECT 1 FROM going) AS any_events
      FROM found
), bumped AS (
    UPDATE sessions AS s
       SET revision = s.revision + 1, update_time = {_NOW}, change_number = {CHANGE_NUMBER},
           expire_time = {idle_expiry(_NOW, "s.")}
      FROM verdict AS v
     WHERE {_of_user("s")} AND s.id = :session_id AND {not_expired(_NOW, "s.")}
       AND s.revision = v.revision
       AND (CAST(:expected AS bigint) IS NULL OR v.revision = CAST(:expected AS bigint))
       AND v.any_events AND NOT v.changes_state AND v.bytes <= CAST(:max_bytes AS bigint)
 RETURNING s.state, s.revision, s.update_time, s.expire_time, s.labels
), removed AS (
    DELETE FROM events AS e USING bumped
     WHERE {_of_user("e")} AND e.session_id = :session_id
       AND e.seq IN (SELECT g.seq FROM going AS g)
 RETURNING e.id, e.seq
), recorded AS (
    INSERT INTO event_removals (app_name, user_id, session_id, revision, event_ids)
    SELECT :app_name, :user_id, :session_id, bumped.revision,
           (SELECT coalesce(json_agg(id ORDER BY seq), '[]'::json)::text FROM removed)
      FROM bumped
), after AS (
    SELECT * FROM bumped
    UNION ALL
    SELECT * FROM found WHERE NOT EXISTS (SELECT 1 FROM bumped)
)
SELECT v.revision AS read_revision, v.changes_state,
       after.state, after.revision, after.update_time, after.expire_time, after.labels,
       (SELECT jsonb_object_agg(a.key, a.value) FROM app_states AS a
         WHERE a.app_name = :app_name) AS app_state,
       (SELECT jsonb_object_agg(u.key, u.value) FROM user_states AS u
         WHERE {_of_user("u")}) AS user_state,
       (SELECT array_agg(g.data ORDER BY g.seq) FROM going AS g) AS events,
       (SELECT array_agg(g.seq ORDER BY g.seq) FROM going AS g) AS seqs,
       CASE WHEN EXISTS (SELECT 1 FROM bumped) THEN (SELECT count(*) FROM removed) END
         AS removed
  FROM verdict AS v, after
""")

# -- state -------------------------------------------------------------------

READ_APP_STATE = Statement.of("SELECT key, value FROM app_states WHERE app_name = :app_name")
READ_USER_STATE = Statement.of(
    "SELECT key, value FROM user_states WHERE app_name = :app_name AND user_id = :user_id"
)
READ_USER_STATES = Statement.of("""
SELECT user_id, key, value FROM user_states
 WHERE app_name = :app_name AND user_id = ANY(:user_ids::text[])
""")

# -- events ------------------------------------------------------------------

FIND_EVENT = Statement.of("""
SELECT seq, data FROM events
 WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id AND id = :event_id
""")
FIND_EVENTS = Statement.of("""
SELECT id, seq, data FROM events
 WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
   AND id = ANY(:event_ids::text[])
""")
# Sizes first (from the TOAST pointers, without reading the texts), so that
# no event is read that the page will not carry.
EVENT_SIZES = {
    order: Statement.of(f"""
SELECT seq, octet_length(data) AS size FROM events
 WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
   AND (:after_timestamp::float8 IS NULL OR timestamp >= :after_timestamp::float8)
   AND (:after_seq::bigint IS NULL
        OR seq {"> :after_seq::bigint" if order == "asc" else "< :after_seq::bigint"})
 ORDER BY seq {order.upper()}
 LIMIT :limit
""")
    for order in ("asc", "desc")
}
EVENTS_BY_SEQ = Statement.of("""
SELECT seq, data FROM events
 WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
   AND seq = ANY(:seqs::bigint[])
""")
