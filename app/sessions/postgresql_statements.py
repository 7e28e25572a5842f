"""The PostgreSQL store's SQL, sent with asyncpg (`$n` parameters). JSONB
parameters are Python values (the pool's codec encodes them), except inside
arrays, where they go as JSON texts (asyncpg would take a list value for a
dimension of the array); identifiers are always parameters, never text."""

from collections.abc import Mapping
from dataclasses import dataclass

from ..db.postgresql_statement import Statement
from ..memory.rules import KEYWORD_HITS_PER_TERM
from ..memory.sqlite_memory import TAKE_WHAT_FITS
from .directory_listing import apps_sql, apps_variants, users_sql
from .session_listing import ListingDialect, listing_sql, listing_variants

# -- rules every statement on a session keeps --------------------------------


def not_expired(now: str, table: str = "") -> str:
    """A session not expired at `now`: an expired one is missing to every
    read and write (the sweeper deletes it later)."""
    return f"({table}expire_time IS NULL OR {table}expire_time > {now})"


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


def _append(item: str, events: _Events, *, waits: bool) -> Statement:
    """Answers a row per item, in order: the revision (null when nothing was
    written), the app, user and session sizes the write would give, and
    whether another transaction held the session (only when not `waits`)."""
    return Statement.of(f"""
WITH item AS (
    {item}
), {_SHARED_SIZES}, free AS (
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
), {_shared_writes("bumped")}
SELECT b.revision, shared.app_bytes, shared.user_bytes,
       CASE WHEN b.revision IS NOT NULL OR i.session_delta = '{{}}'::jsonb THEN 0 ELSE
         (SELECT {_STATE_AFTER} FROM sessions AS s WHERE {_SESSION_OF_ITEM}) END,
       free.ord IS NULL AND EXISTS (SELECT 1 FROM sessions AS s WHERE {_SESSION_OF_ITEM})
  FROM item AS i JOIN shared_bytes AS shared ON shared.ord = i.ord
  LEFT JOIN free ON free.ord = i.ord
  LEFT JOIN bumped AS b ON b.ord = i.ord
 ORDER BY i.ord
""")


# Waits for a session another transaction holds.
APPEND = _append(_one_item(_CHANGE | _ONE_EVENT), _ONE, waits=True)
# Does not wait: a session another transaction holds makes the append write
# nothing and answer held_elsewhere (the batcher then sends it with APPEND,
# outside its batches, so that only this append waits).
APPEND_UNLESS_HELD = _append(_one_item(_CHANGE | _ONE_EVENT), _ONE, waits=False)
# One request's several events, of one session.
APPEND_MANY = _append(_one_item(_CHANGE | _MANY_EVENTS), _MANY, waits=True)
# Several appends, of different sessions (the batcher sees to it: each
# session row is bumped at most once): one round trip, one plan and one
# commit for all of them. It never waits on a session's lock (a fork's,
# another process's batch), so neither do the other appends in it, and
# batches cannot deadlock on sessions. Shared keys written by several of its
# appends take the last one's value: appends in one batch are concurrent
# requests, and any order of them is one they could have been served in.
APPEND_BATCH = _append(_items(_CHANGE | _ONE_EVENT), _ONE, waits=False)

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
# $6 the texts are not joined at all, so no read can ask for a gigabyte.
SNAPSHOT = f"""
SELECT s.state, s.revision, s.update_time, s.expire_time, s.labels,
       (SELECT jsonb_object_agg(a.key, a.value) FROM app_states AS a
         WHERE a.app_name = $1) AS app_state,
       (SELECT jsonb_object_agg(u.key, u.value) FROM user_states AS u
         WHERE u.app_name = $1 AND u.user_id = $2) AS user_state,
       sized.bytes,
       CASE WHEN sized.bytes <= $6 THEN
       (SELECT string_agg(recent.data, ',' ORDER BY recent.seq)
          FROM (SELECT e.seq, e.data FROM events AS e
                 WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3
                   AND e.seq <= s.revision
                   AND ($4::float8 IS NULL OR e.timestamp >= $4::float8)
                 ORDER BY e.seq DESC
                 LIMIT $5::bigint) AS recent) END AS events
  FROM sessions AS s,
       LATERAL (SELECT coalesce(sum(octet_length(recent.data)), 0) AS bytes
                  FROM (SELECT e.data FROM events AS e
                         WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3
                           AND e.seq <= s.revision
                           AND ($4::float8 IS NULL OR e.timestamp >= $4::float8)
                         ORDER BY e.seq DESC
                         LIMIT $5::bigint) AS recent) AS sized
 WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
   AND {not_expired("$7::float8", "s.")}
"""


# -- sessions ----------------------------------------------------------------

# An expired session ($4 is now) is missing.
READ_SESSION = f"""
SELECT state, revision, update_time, expire_time, labels FROM sessions
 WHERE app_name = $1 AND user_id = $2 AND id = $3
   AND {not_expired("$4::float8")}
"""
# Kept from being deleted until the transaction ends.
READ_SESSION_FOR_SHARE = READ_SESSION + " FOR SHARE"

INSERT_SESSION = f"""
INSERT INTO sessions (app_name, user_id, id, state, initial_state, state_bytes, revision,
                      create_time, update_time, expire_time, ttl_seconds, labels, change_number)
VALUES ($1, $2, $3, $4, $4, $5, 0, $6, $6, $7, $8, $9, {CHANGE_NUMBER})
ON CONFLICT DO NOTHING
RETURNING revision
"""

# The session row is locked first, as an append locks it first: deleting its
# events before it would deadlock with an append retrying a stored event id. An
# expired one is locked too (and deleted), but reported missing.
LOCK_SESSION = f"""
SELECT {not_expired("$4::float8")} FROM sessions
 WHERE app_name = $1 AND user_id = $2 AND id = $3
 FOR UPDATE
"""
# An expired session whose id a new session takes: deleted first, with its
# events, in the new session's transaction.
LOCK_EXPIRED_SESSION = f"""
SELECT 1 FROM sessions
 WHERE app_name = $1 AND user_id = $2 AND id = $3 AND {expired("$4::float8")}
 FOR UPDATE
"""
DELETE_SESSION_EVENTS = """
DELETE FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3
"""
DELETE_SESSION = """
DELETE FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3
"""


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

# A session's expiry replaced ($5: the idle timeout, $6: the time it gives
# or the absolute time), if it is not expired ($4 is now) and, when $7 is not
# null, still at that revision; the revision comes back.
SET_EXPIRY = f"""
UPDATE sessions SET ttl_seconds = $5, expire_time = $6, change_number = {CHANGE_NUMBER}
 WHERE app_name = $1 AND user_id = $2 AND id = $3
   AND {not_expired("$4::float8")}
   AND ($7::bigint IS NULL OR revision = $7::bigint)
RETURNING revision
"""

# A session's labels replaced ($5; NULL: none) and, when $6 is true, its
# expiry too ($7, $8 as SET_EXPIRY's $5, $6); the rest as SET_EXPIRY.
SET_LABELS = f"""
UPDATE sessions SET labels = $5, change_number = {CHANGE_NUMBER},
       ttl_seconds = CASE WHEN $6::boolean THEN $7 ELSE ttl_seconds END,
       expire_time = CASE WHEN $6::boolean THEN $8 ELSE expire_time END
 WHERE app_name = $1 AND user_id = $2 AND id = $3
   AND {not_expired("$4::float8")}
   AND ($9::bigint IS NULL OR revision = $9::bigint)
RETURNING revision
"""

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
FORK_SOURCE = f"""
SELECT state, revision, initial_state, labels FROM sessions
 WHERE app_name = $1 AND user_id = $2 AND id = $3
   AND {not_expired("$4::float8")}
 FOR SHARE
"""
INSERT_FORK = f"""
INSERT INTO sessions (app_name, user_id, id, state, initial_state, state_bytes, revision,
                      create_time, update_time, expire_time, ttl_seconds, labels, change_number)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10, $11, {CHANGE_NUMBER})
ON CONFLICT DO NOTHING
RETURNING revision
"""
# One batch of the source's events ($4 < seq <= $5) copied into the fork ($6).
COPY_EVENTS = """
INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author, timestamp,
                    data)
SELECT app_name, user_id, $6, seq, id, invocation_id, author, timestamp, data FROM events
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND seq > $4 AND seq <= $5
"""
INITIAL_STATE = f"""
SELECT initial_state IS NOT NULL, initial_state FROM sessions
 WHERE app_name = $1 AND user_id = $2 AND id = $3
   AND {not_expired("$4::float8")}
"""
EVENTS_BETWEEN = """
SELECT seq, data FROM events
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND seq > $4 AND seq <= $5
 ORDER BY seq
 LIMIT $6
"""
# Whether the event a fork stops at is still there: events are only ever
# removed from the end and a seq is never used twice, so while it is, every
# event before it is the one the fork's state was derived from.
EVENT_AT_SEQ = """
SELECT EXISTS (SELECT 1 FROM events
                WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND seq = $4)
"""

# -- removing events ---------------------------------------------------------

# The session's revision and the seq that is newest once its newest $4 events
# go (0: none is left), read together; no row when it is missing ($5 is now).
NEWEST_KEPT_SEQ = f"""
SELECT s.revision,
       coalesce((SELECT e.seq FROM events AS e
                  WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3
                  ORDER BY e.seq DESC
                 OFFSET $4 LIMIT 1), 0)
  FROM sessions AS s
 WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
   AND {not_expired("$5::float8", "s.")}
"""
# The session's revision and its newest $4 events (seq, data), read together;
# one row with null seq when it has none, no row when it is missing ($5 is now).
NEWEST_EVENTS = f"""
SELECT s.revision, e.seq, e.data
  FROM sessions AS s
  LEFT JOIN LATERAL (SELECT e.seq, e.data FROM events AS e
                      WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3
                      ORDER BY e.seq DESC
                      LIMIT $4) AS e ON true
 WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
   AND {not_expired("$5::float8", "s.")}
"""
# Removes the events after seq $4 if the session is still at revision $5; the
# removal is a change like any write: the revision goes up by one (never back,
# so an If-Match taken before cannot match again), the update time is $6 and
# an idle timeout restarts. $7, when not null, replaces the session-scope
# state (measured as stored). The session row is locked first, as every
# writer locks it; an append waiting for it then finds the revision moved.
REMOVE_EVENTS = f"""
WITH bumped AS (
    UPDATE sessions
       SET revision = revision + 1, update_time = $6::float8, change_number = {CHANGE_NUMBER},
           state = coalesce($7::jsonb, state),
           state_bytes = CASE WHEN $7::jsonb IS NULL THEN state_bytes
                              ELSE octet_length($7::jsonb::text) END,
           expire_time = {idle_expiry("$6::float8")}
     WHERE app_name = $1 AND user_id = $2 AND id = $3 AND revision = $5::bigint
       AND {not_expired("$6::float8")}
 RETURNING revision
), removed AS (
    DELETE FROM events AS e USING bumped
     WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3 AND e.seq > $4::bigint
 RETURNING e.id, e.seq
), recorded AS (
    INSERT INTO event_removals (app_name, user_id, session_id, revision, event_ids)
    SELECT $1, $2, $3, bumped.revision,
           (SELECT coalesce(json_agg(id ORDER BY seq), '[]'::json)::text FROM removed)
      FROM bumped
)
SELECT bumped.revision, (SELECT count(*) FROM removed) FROM bumped
"""
# Whether the event `g` changed session-scope state: its delta
# (actions.stateDelta, else actions.state_delta, as app.sessions.events reads it) has
# a key without a scope prefix (app.sessions.state.split_delta). As `json`, not
# `jsonb`: only parsed, never converted, and a repeated key's last value
# counts, as in Python.
_CHANGES_SESSION_STATE = """
EXISTS (SELECT 1
          FROM (SELECT coalesce(actions -> 'stateDelta', actions -> 'state_delta') AS delta
                  FROM (SELECT CAST(g.data AS json) -> 'actions' AS actions) AS a) AS d
         WHERE CASE WHEN json_typeof(d.delta) = 'object' THEN
                    EXISTS (SELECT 1 FROM json_object_keys(d.delta) AS k (key)
                             WHERE k.key NOT LIKE 'app:%' AND k.key NOT LIKE 'user:%'
                               AND k.key NOT LIKE 'temp:%')
               END)
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
SELECT v.revision, v.changes_state,
       after.state, after.revision, after.update_time, after.expire_time, after.labels,
       (SELECT jsonb_object_agg(a.key, a.value) FROM app_states AS a
         WHERE a.app_name = :app_name) AS app_state,
       (SELECT jsonb_object_agg(u.key, u.value) FROM user_states AS u
         WHERE {_of_user("u")}) AS user_state,
       (SELECT array_agg(g.data ORDER BY g.seq) FROM going AS g) AS events,
       (SELECT array_agg(g.seq ORDER BY g.seq) FROM going AS g) AS seqs,
       CASE WHEN EXISTS (SELECT 1 FROM bumped) THEN (SELECT count(*) FROM removed) END
  FROM verdict AS v, after
""")
# The oldest transaction still running, and the next id to be given: rows
# numbered below the first are all committed (or never will be); no cursor
# a stream sent is past the second. In the reader's snapshot.
CHANGE_HORIZON = """
SELECT pg_snapshot_xmin(s)::text::bigint, pg_snapshot_xmax(s)::text::bigint
  FROM pg_current_snapshot() AS s
"""
# A user's live sessions changed after the cursor ($3, $4: change number and
# session id) and numbered below the horizon ($5), in change order, at most
# $7; `removed`: the revision is a removal's. CHANGES_PAST_HORIZON: whether
# any waits for the horizon to pass it.
USER_CHANGES = f"""
SELECT id, revision, update_time, change_number,
       EXISTS (SELECT 1 FROM event_removals AS r
                WHERE r.app_name = $1 AND r.user_id = $2 AND r.session_id = sessions.id
                  AND r.revision = sessions.revision) AS removed
  FROM sessions
 WHERE app_name = $1 AND user_id = $2
   AND (change_number, id) > ($3::bigint, $4::text) AND change_number < $5::bigint
   AND {not_expired("$6::float8")}
 ORDER BY change_number, id
 LIMIT $7
"""
# Below the next id ($4) only: a number past it was not given by this
# cluster (rows restored from another's dump) and waits for nothing.
CHANGES_PAST_HORIZON = """
SELECT EXISTS (SELECT 1 FROM sessions
                WHERE app_name = $1 AND user_id = $2
                  AND change_number >= $3::bigint AND change_number < $4::bigint)
"""
# A session's revision and expiry time; no row when it is missing ($4 is now).
READ_REVISION = f"""
SELECT revision, expire_time FROM sessions
 WHERE app_name = $1 AND user_id = $2 AND id = $3
   AND {not_expired("$4::float8")}
"""
# A session's events after seq $4 (at most $5): their JSON while the bytes
# before them are under $6 (the first always), NULL past that.
CHANGED_EVENTS = """
SELECT seq, CASE WHEN before = 0 OR before < $6 THEN data END FROM (
    SELECT seq, data,
           sum(octet_length(data)) OVER (ORDER BY seq) - octet_length(data) AS before
      FROM (SELECT seq, data FROM events
             WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND seq > $4
             ORDER BY seq
             LIMIT $5) AS first_rows
) AS running
 ORDER BY seq
"""
# A session's removals with $4 < revision <= $5 (app.streams.live reads them).
READ_REMOVALS = """
SELECT revision, event_ids FROM event_removals
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND revision > $4 AND revision <= $5
 ORDER BY revision
"""

# -- the sweeper -------------------------------------------------------------

# Held by the process sweeping, for each batch's transaction (transaction-level:
# it works through a pooler in transaction mode and dies with its transaction).
TRY_SWEEP_LOCK = "SELECT pg_try_advisory_xact_lock(hashtextextended('session-state sweep', 0))"
# The next expired sessions ($1 is now), locked; one a request holds (an
# append pushing its expiry, a fork copying it) is left for the next pass.
EXPIRED_SESSIONS = f"""
SELECT app_name, user_id, id, revision FROM sessions
 WHERE {expired("$1::float8")}
 ORDER BY expire_time
 LIMIT $2
 FOR UPDATE SKIP LOCKED
"""
DELETE_EVENTS_OF_ANY_SESSIONS = """
DELETE FROM events AS e USING unnest($1::text[], $2::text[], $3::text[])
                               AS s(app_name, user_id, id)
 WHERE e.app_name = s.app_name AND e.user_id = s.user_id AND e.session_id = s.id
"""
DELETE_ANY_SESSIONS = """
DELETE FROM sessions AS x USING unnest($1::text[], $2::text[], $3::text[])
                               AS s(app_name, user_id, id)
 WHERE x.app_name = s.app_name AND x.user_id = s.user_id AND x.id = s.id
"""
DELETE_MEMORIES_OF_ANY_SESSIONS = """
DELETE FROM memories AS m USING unnest($1::text[], $2::text[], $3::text[])
                               AS s(app_name, user_id, id)
 WHERE m.app_name = s.app_name AND m.user_id = s.user_id AND m.session_id = s.id
"""
# Expired sessions not swept yet, for the backlog gauge (from the partial index).
EXPIRED_COUNT = f"SELECT count(*) FROM sessions WHERE {expired('$1::float8')}"

# -- state -------------------------------------------------------------------

READ_APP_STATE = "SELECT key, value FROM app_states WHERE app_name = $1"
READ_USER_STATE = "SELECT key, value FROM user_states WHERE app_name = $1 AND user_id = $2"
READ_USER_STATES = """
SELECT user_id, key, value FROM user_states WHERE app_name = $1 AND user_id = ANY($2::text[])
"""

# -- events ------------------------------------------------------------------

FIND_EVENT = """
SELECT seq, data FROM events
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND id = $4
"""
FIND_EVENTS = """
SELECT id, seq, data FROM events
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND id = ANY($4::text[])
"""
# Sizes first (from the TOAST pointers, without reading the texts), so that
# no event is read that the page will not carry.
EVENT_SIZES = {
    order: f"""
SELECT seq, octet_length(data) FROM events
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3
   AND ($4::float8 IS NULL OR timestamp >= $4::float8)
   AND ($5::bigint IS NULL OR seq {"> $5::bigint" if order == "asc" else "< $5::bigint"})
 ORDER BY seq {order.upper()}
 LIMIT $6
"""
    for order in ("asc", "desc")
}
EVENTS_BY_SEQ = """
SELECT seq, data FROM events
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND seq = ANY($4::bigint[])
"""
EVENTS_AFTER = """
SELECT seq, data FROM events
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND seq > $4
 ORDER BY seq
 LIMIT $5
"""

# -- memory ------------------------------------------------------------------

# Serialises the writes of one user's memory until the transaction ends.
LOCK_USER_MEMORY = "SELECT pg_advisory_xact_lock(hashtextextended($1, 1147))"

FORGOTTEN_AMONG = """
SELECT memory_id FROM forgotten_memories
 WHERE app_name = $1 AND user_id = $2 AND memory_id = ANY($3::text[])
"""
# An event already taken (by an earlier or a concurrent ingestion) is
# skipped by the unique index, not by a list of known ids in memory.
INSERT_MEMORIES = """
INSERT INTO memories (app_name, user_id, session_id, event_id, author, role, timestamp, text,
                      content, custom_metadata, search_words, search_grams, embedding_model,
                      embedding, embedding_bits)
SELECT $1, $2, m.session_id, m.event_id, m.author, m.role, m.timestamp, m.text, m.content,
       m.custom_metadata, m.search_words, m.search_grams, m.embedding_model, m.embedding,
       m.embedding_bits
  FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::text[],
              $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bytea[],
              $15::varbit[])
       AS m(session_id, event_id, author, role, timestamp, text, content, custom_metadata,
            search_words, search_grams, embedding_model, embedding, embedding_bits)
ON CONFLICT (app_name, user_id, session_id, event_id) DO NOTHING
RETURNING id
"""
DELETE_MEMORIES_OF_IDS = """
DELETE FROM memories
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND event_id = ANY($4::text[])
"""
UNFORGET = """
DELETE FROM forgotten_memories
 WHERE app_name = $1 AND user_id = $2 AND memory_id = ANY($3::text[])
"""
DELETE_MEMORY = "DELETE FROM memories WHERE app_name = $1 AND user_id = $2 AND event_id = $3"
REMEMBER_FORGOTTEN = """
INSERT INTO forgotten_memories (app_name, user_id, memory_id) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING
"""
DELETE_SESSION_MEMORIES = """
DELETE FROM memories WHERE app_name = $1 AND user_id = $2 AND session_id = $3
"""
DELETE_USER_MEMORIES = "DELETE FROM memories WHERE app_name = $1 AND user_id = $2"
DELETE_USER_FORGOTTEN = "DELETE FROM forgotten_memories WHERE app_name = $1 AND user_id = $2"

# Each term is its own tsquery, built from a value, never parsed as tsquery
# syntax: words stemmed as the index stems them, pairs as they are, a single
# character as the prefix of a pair. Each term finds its rows through the
# GIN index; `matched` counts the distinct terms a memory holds (stemming may
# make two words one) and the score is the sum of the terms' ts_rank_cd (as
# SQLite sums bm25): one pass over each hit, where one OR query rechecked
# every term per row (docs/performance.md, "Memory search at 100,000
# memories", second round).
# Each term finds only the user's KEYWORD_HITS_PER_TERM memories stored last
# that hold it (app.memory.rules); a memory found is then scored by every term it
# holds (ts_rank_cd has no rarity weight, as bm25 has: counting only the rare
# term that found it would put it level with the newest common hits). The
# hits come from the GIN index alone, then are sorted: `id + 0` keeps the
# planner from walking the primary key backwards (filtering every row: the
# whole table for a rare term), `|| ''` from intersecting with every row of
# the user from ix_memories_app_user, which costs a rare term as much as a
# common one (docs/performance.md, third round).
_KEYWORD_GROUPED = f"""
WITH term AS (
    SELECT DISTINCT query FROM (
        SELECT plainto_tsquery('english', word) AS query FROM unnest($3::text[]) AS word
        UNION ALL
        SELECT plainto_tsquery('simple', gram) FROM unnest($4::text[]) AS gram
        UNION ALL
        SELECT CAST(quote_literal(prefix) || ':*' AS tsquery) FROM unnest($5::text[]) AS prefix
    ) AS terms
     WHERE numnode(query) > 0
), hit AS (
    SELECT DISTINCT m.id FROM term CROSS JOIN LATERAL (
        SELECT id FROM memories
         WHERE app_name || '' = $1 AND user_id || '' = $2 AND search_vector @@ term.query
         ORDER BY id + 0 DESC LIMIT {KEYWORD_HITS_PER_TERM}
    ) AS m
), grouped AS (
    SELECT m.id, m.timestamp, count(*) AS matched,
           -sum(ts_rank_cd(m.search_vector, term.query)) AS rank_order
      FROM hit JOIN memories AS m ON m.id = hit.id
      JOIN term ON m.search_vector @@ term.query
     GROUP BY m.id, m.timestamp
), best AS (
    SELECT * FROM grouped ORDER BY matched DESC, rank_order, timestamp DESC, id LIMIT $6
)
"""
# The best `limit` matches are taken with their sizes first, then the texts
# of those that fit in the response ($7 bytes; always the first).
_KEYWORD_TOP = (
    _KEYWORD_GROUPED
    + """, top AS (
    SELECT best.*, octet_length(m.text) + coalesce(octet_length(m.content), 0)
           + coalesce(octet_length(m.custom_metadata), 0) AS size
      FROM best JOIN memories AS m ON m.id = best.id
"""
)
SEARCH_MEMORIES = _KEYWORD_TOP + TAKE_WHAT_FITS.replace(":budget", "$7")
# The same ranking, ids only (the keyword side of a hybrid search), each
# with the share of the question's terms the memory holds (1: every term).
KEYWORD_MEMORY_IDS = (
    _KEYWORD_GROUPED
    + """SELECT id, matched::float8 / (SELECT count(*) FROM term) FROM best
 ORDER BY matched DESC, rank_order, timestamp DESC, id"""
)

# The first pass of a search by meaning (app.memory.first_pass) counts in
# numpy over the sign bits of the user's memories embedded by the model $3:
# the newest row id (one step of ix_memories_vector_bits), and the rows
# above $5 whose bits are $4 long, read from that index alone, ids and bits
# each joined into one bytea in their binary forms (8 bytes an id; the bit
# count, 4 bytes, then the bits). The components of the few kept are read
# after, if those rows are still the user's of that model.
NEWEST_MEMORY_ROW = """
SELECT max(id) FROM memories WHERE app_name = $1 AND user_id = $2 AND embedding_model = $3
"""
MEMORY_SIGN_BITS = """
SELECT string_agg(int8send(id), ''::bytea), string_agg(varbit_send(embedding_bits), ''::bytea)
  FROM memories
 WHERE app_name = $1 AND user_id = $2 AND embedding_model = $3 AND length(embedding_bits) = $4
   AND id > $5
"""
MEMORY_COMPONENTS = """
SELECT id, embedding FROM memories
 WHERE id = ANY($4::bigint[]) AND app_name = $1 AND user_id = $2 AND embedding_model = $3
"""
# Memories by row id, in the order given, as many as fit in $4 bytes (always
# the first), as TAKE_WHAT_FITS takes them.
READ_MEMORIES = """
WITH sized AS (
    SELECT m.id, wanted.position,
           octet_length(m.text) + coalesce(octet_length(m.content), 0)
           + coalesce(octet_length(m.custom_metadata), 0) AS size
      FROM unnest($3::bigint[]) WITH ORDINALITY AS wanted(id, position)
      JOIN memories AS m ON m.id = wanted.id
     WHERE m.app_name = $1 AND m.user_id = $2
), ranked AS (
    SELECT id, row_number() OVER best AS position, sum(size) OVER best AS running
      FROM sized WINDOW best AS (ORDER BY position)
)
SELECT m.session_id, m.event_id, m.author, m.role, m.timestamp, m.text,
       m.content, m.custom_metadata
  FROM ranked JOIN memories AS m ON m.id = ranked.id
 WHERE ranked.position = 1 OR ranked.running <= $4
 ORDER BY ranked.position
"""
# Memories not embedded by the model $1 (of app $2 and user $3 when given).
_WAITING = """
 WHERE (embedding_model IS NULL OR embedding_model <> $1)
   AND ($2::text IS NULL OR app_name = $2::text) AND ($3::text IS NULL OR user_id = $3::text)
"""
# At most $7 of them refused fewer than $4 times and not claimed at $5, in id
# order, claimed until $6. SKIP LOCKED: a row another process is claiming is
# left to it (its claim is then seen: the row is not taken twice).
CLAIM_MEMORIES_TO_EMBED = (
    """
UPDATE memories AS m SET embedding_claimed_until = $6
  FROM (SELECT id FROM memories"""
    + _WAITING
    + """   AND embedding_failures < $4
          AND (embedding_claimed_until IS NULL OR embedding_claimed_until <= $5)
        ORDER BY id LIMIT $7 FOR UPDATE SKIP LOCKED) AS claimed
 WHERE m.id = claimed.id
RETURNING m.id, m.text
"""
)
RELEASE_MEMORIES_TO_EMBED = """
UPDATE memories SET embedding_claimed_until = NULL WHERE id = ANY($1::bigint[])
"""
REFUSE_MEMORIES_TO_EMBED = """
UPDATE memories SET embedding_failures = embedding_failures + 1, embedding_claimed_until = $2
 WHERE id = ANY($1::bigint[])
"""
RETRY_REFUSED_EMBEDDINGS = (
    "UPDATE memories SET embedding_failures = 0, embedding_claimed_until = NULL"
    + _WAITING
    + " AND embedding_failures > 0"
)
COUNT_MEMORIES_TO_EMBED = (
    "SELECT count(*) FILTER (WHERE embedding_failures < $4),"
    " count(*) FILTER (WHERE embedding_failures >= $4) FROM memories" + _WAITING
)
# A row deleted meanwhile is skipped.
STORE_EMBEDDINGS = """
UPDATE memories AS m
   SET embedding_model = $1, embedding = v.embedding, embedding_bits = v.bits,
       embedding_claimed_until = NULL, embedding_failures = 0
  FROM unnest($2::bigint[], $3::bytea[], $4::varbit[]) AS v(id, embedding, bits)
 WHERE m.id = v.id
"""

# -- erasure -----------------------------------------------------------------

# The next sessions of an app (of one user, when $2 is not null) to erase,
# locked in the order every erasure takes them, with a bound of their event
# counts (a session's revision: one per event stored, and one per removal).
ERASABLE_SESSIONS = """
SELECT user_id, id, revision FROM sessions
 WHERE app_name = $1 AND ($2::text IS NULL OR user_id = $2::text)
 ORDER BY user_id, id
 LIMIT $3
 FOR UPDATE
"""
DELETE_EVENTS_OF_SESSIONS = """
DELETE FROM events AS e USING unnest($2::text[], $3::text[]) AS s(user_id, id)
 WHERE e.app_name = $1 AND e.user_id = s.user_id AND e.session_id = s.id
"""
DELETE_SESSIONS = """
DELETE FROM sessions AS x USING unnest($2::text[], $3::text[]) AS s(user_id, id)
 WHERE x.app_name = $1 AND x.user_id = s.user_id AND x.id = s.id
"""
DELETE_USER_STATE = "DELETE FROM user_states WHERE app_name = $1 AND user_id = $2"
DELETE_APP_USER_STATES = "DELETE FROM user_states WHERE app_name = $1"
DELETE_APP_STATE = "DELETE FROM app_states WHERE app_name = $1"
DELETE_APP_MEMORIES = "DELETE FROM memories WHERE app_name = $1"
DELETE_APP_FORGOTTEN = "DELETE FROM forgotten_memories WHERE app_name = $1"

# -- operations --------------------------------------------------------------

# The schema's revision; None (no table) for an empty database.
SCHEMA_REVISION = "SELECT version_num FROM alembic_version"
# A standby, or a server set read-only: it takes no writes.
IS_READ_ONLY = "SELECT current_setting('transaction_read_only') = 'on'"
# Seconds a replica's replay is behind its primary. One that has replayed all
# it received is not behind, however old its last replayed transaction (an
# idle primary sends none); one not in recovery is a primary (promoted).
REPLAY_LAG = """
SELECT CASE
    WHEN NOT pg_is_in_recovery() THEN 0.0
    WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0.0
    ELSE coalesce(
        extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8, 'Infinity'
    )
END
"""
