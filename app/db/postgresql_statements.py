"""The PostgreSQL store's SQL, sent with asyncpg (`$n` parameters). JSONB
parameters are Python values (the pool's codec encodes them), except inside
arrays, where they go as JSON texts (asyncpg would take a list value for a
dimension of the array); identifiers are always parameters, never text."""

import re

from .memory_repository import TAKE_WHAT_FITS
from .session_listing import listing_sql

# -- the append and the session read -----------------------------------------

# One statement, one round trip, in autocommit: the session row is locked and
# bumped first, every other write joins on its result, so a missing or stale
# session writes nothing; state merges happen inside PostgreSQL (`||` for the
# session document, one row per app/user key upserted in key order so that
# writers of overlapping keys cannot deadlock).
#
# Size limits ($13): a delta that would take a scope past it bumps nothing, so
# writes nothing, and the sizes come back to say which scope. App and user
# keys carry their size ($14, $15: key -> bytes, measured by the caller), so
# only the keys written are read, and a scope is summed only when the delta
# makes it grow. Those reads see the rows committed when the statement starts:
# appends racing to grow one scope can each pass the limit by their own
# growth, never more. A session keeps an upper bound of its state's size
# (state_bytes), raised by $16 (twice the delta's compact JSON: JSONB prints
# more spaces); the state is measured, and the bound set exact, only when the
# bound would pass the limit.
#
# Expiry: an expired session ($17 is now) is missing. A session with an idle
# timeout (ttl_seconds) expires that long after this append; $18 replaces the
# expiry with $19 (a timeout) or $20 (a time), or none when both are null.
_APPEND = """
WITH app_delta AS (
    SELECT d.key, d.value, ($14::jsonb ->> d.key)::bigint AS size
      FROM jsonb_each($10::jsonb) AS d
), user_delta AS (
    SELECT d.key, d.value, ($15::jsonb ->> d.key)::bigint AS size
      FROM jsonb_each($11::jsonb) AS d
), growth AS (
    -- One index lookup per key written (a join here was planned as a scan of
    -- the whole scope).
    SELECT (SELECT coalesce(sum(n.size - coalesce(
                     (SELECT a.size FROM app_states AS a
                       WHERE a.app_name = $1 AND a.key = n.key), 0)), 0)
              FROM app_delta AS n) AS app_bytes,
           (SELECT coalesce(sum(n.size - coalesce(
                     (SELECT u.size FROM user_states AS u
                       WHERE u.app_name = $1 AND u.user_id = $2 AND u.key = n.key), 0)), 0)
              FROM user_delta AS n) AS user_bytes
), shared_bytes AS (
    SELECT CASE WHEN g.app_bytes <= 0 THEN 0 ELSE g.app_bytes +
             (SELECT coalesce(sum(a.size), 0) FROM app_states AS a WHERE a.app_name = $1)
           END AS app_bytes,
           CASE WHEN g.user_bytes <= 0 THEN 0 ELSE g.user_bytes +
             (SELECT coalesce(sum(u.size), 0) FROM user_states AS u
               WHERE u.app_name = $1 AND u.user_id = $2)
           END AS user_bytes
      FROM growth AS g
), free AS (
    SELECT 1 FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3
       FOR UPDATE {waits}
), bumped AS (
    UPDATE sessions
       SET state = state || $4::jsonb, revision = revision + {increment}, update_time = $5,
           ttl_seconds = CASE WHEN $18::boolean THEN $19::float8 ELSE ttl_seconds END,
           expire_time = CASE WHEN $18::boolean
                              THEN coalesce($17::float8 + $19::float8, $20::float8)
                              WHEN ttl_seconds IS NULL THEN expire_time
                              ELSE $17::float8 + ttl_seconds END,
           state_bytes = CASE WHEN $16 = 0 OR state_bytes + $16 <= $13
                              THEN state_bytes + $16
                              ELSE octet_length((state || $4::jsonb)::text) END
     WHERE app_name = $1 AND user_id = $2 AND id = $3
       AND (expire_time IS NULL OR expire_time > $17::float8)
       AND ($12::bigint IS NULL OR revision = $12::bigint)
       AND CASE WHEN $16 = 0 OR state_bytes + $16 <= $13 THEN true
                ELSE octet_length((state || $4::jsonb)::text) <= $13 END
       AND (SELECT app_bytes <= $13 AND user_bytes <= $13 FROM shared_bytes)
       AND EXISTS (SELECT 1 FROM free)
 RETURNING revision
), stored AS (
    INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author,
                        timestamp, data)
    {stored_rows}
 RETURNING seq
), app_written AS (
    INSERT INTO app_states (app_name, key, value, size)
    SELECT $1, delta.key, delta.value, delta.size
      FROM bumped, app_delta AS delta
     ORDER BY delta.key
    ON CONFLICT (app_name, key) DO UPDATE SET value = EXCLUDED.value, size = EXCLUDED.size
), user_written AS (
    INSERT INTO user_states (app_name, user_id, key, value, size)
    SELECT $1, $2, delta.key, delta.value, delta.size
      FROM bumped, user_delta AS delta
     ORDER BY delta.key
    ON CONFLICT (app_name, user_id, key) DO UPDATE SET value = EXCLUDED.value, size = EXCLUDED.size
)
SELECT stored.seq, shared.app_bytes, shared.user_bytes,
       CASE WHEN stored.seq IS NOT NULL OR $4::jsonb = '{}'::jsonb THEN 0 ELSE
         (SELECT octet_length((s.state || $4::jsonb)::text) FROM sessions AS s
           WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3) END,
       NOT EXISTS (SELECT 1 FROM free) AND EXISTS (SELECT 1 FROM sessions AS s
                     WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3) AS held_elsewhere
  FROM shared_bytes AS shared LEFT JOIN {stored_seq} ON true
"""


def _append_statement(*, waits: bool, many: bool) -> str:
    one = {
        "{increment}": "1",
        "{stored_rows}": "SELECT $1, $2, $3, revision, $6, $7, $8, $5, $9 FROM bumped",
        "{stored_seq}": "stored",
    }
    # Several events of one session (a batch append): $6..$9 and $21 are
    # arrays, an element per event, stored in order after the revision; the
    # deltas ($4, $10, $11) are the events' deltas merged in order (a key
    # written twice keeps its last value), so the state, the size checks and
    # the shared rows are written once, as for one event.
    many_events = {
        "{increment}": "cardinality($6::text[])",
        "{stored_rows}": (
            "SELECT $1, $2, $3, b.revision - cardinality($6::text[]) + e.ord, e.id,\n"
            "           e.invocation_id, e.author, e.event_time, e.data\n"
            "      FROM bumped AS b,\n"
            "           unnest($6::text[], $7::text[], $8::text[], $9::text[], $21::float8[])\n"
            "           WITH ORDINALITY AS e(id, invocation_id, author, data, event_time, ord)"
        ),
        "{stored_seq}": "(SELECT max(seq) AS seq FROM stored) AS stored",
    }
    statement = _APPEND.replace("{waits}", "" if waits else "SKIP LOCKED")
    for placeholder, text in (many_events if many else one).items():
        statement = statement.replace(placeholder, text)
    return statement


# Waits for a session another transaction holds.
APPEND = _append_statement(waits=True, many=False)
# Does not wait: a session another transaction holds makes the append write
# nothing and answer held_elsewhere (the batcher then sends it with APPEND,
# outside its batches, so that only this append waits).
APPEND_UNLESS_HELD = _append_statement(waits=False, many=False)
# A batch append: several events of one session, in one statement.
APPEND_MANY = _append_statement(waits=True, many=True)

# Several appends in one statement: one round trip, one plan and one commit
# for all of them (group commit, app/db/append_batches.py). Each item is the
# append above, with the same checks and the same answer, as one row in its
# order ($1 .. $20: one array element per item), plus whether its session was
# held by another transaction (then the item wrote nothing, and the caller
# sends it by itself, which waits for the lock). A batch holds at most one
# append per session (the batcher sees to it), so every session row is bumped
# at most once; shared keys written by several items of the batch are
# written once, with the value of the last item that wrote them (appends in
# one batch are concurrent requests: any order of them is an order they could
# have been served in, and the batch keeps its own). An event id already
# stored for its session makes its item write nothing (the caller looks for
# a retry, as after the single append); one stored by a concurrent
# transaction after this statement began fails the whole statement, and the
# caller then runs each item by itself.
APPEND_BATCH = """
WITH item AS (
    SELECT *
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::text[],
                  $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::bigint[],
                  $13::bigint[], $14::text[], $15::text[], $16::bigint[], $17::float8[],
                  $18::boolean[], $19::float8[], $20::float8[])
           WITH ORDINALITY AS i(app_name, user_id, session_id, session_text, event_time,
                                event_id, invocation_id, author, data, app_text, user_text,
                                expected, max_bytes, app_sizes_text, user_sizes_text,
                                session_growth, now, replace_expiry, ttl, expire_at, ord)
), delta AS (
    SELECT i.*, i.session_text::jsonb AS session_delta, i.app_text::jsonb AS app_delta,
           i.user_text::jsonb AS user_delta, i.app_sizes_text::jsonb AS app_sizes,
           i.user_sizes_text::jsonb AS user_sizes
      FROM item AS i
), app_delta AS (
    SELECT i.ord, i.app_name, d.key, d.value, (i.app_sizes ->> d.key)::bigint AS size
      FROM delta AS i, jsonb_each(i.app_delta) AS d
), user_delta AS (
    SELECT i.ord, i.app_name, i.user_id, d.key, d.value, (i.user_sizes ->> d.key)::bigint AS size
      FROM delta AS i, jsonb_each(i.user_delta) AS d
), growth AS (
    SELECT i.ord,
           (SELECT coalesce(sum(n.size - coalesce(
                     (SELECT a.size FROM app_states AS a
                       WHERE a.app_name = i.app_name AND a.key = n.key), 0)), 0)
              FROM app_delta AS n WHERE n.ord = i.ord) AS app_bytes,
           (SELECT coalesce(sum(n.size - coalesce(
                     (SELECT u.size FROM user_states AS u
                       WHERE u.app_name = i.app_name AND u.user_id = i.user_id
                         AND u.key = n.key), 0)), 0)
              FROM user_delta AS n WHERE n.ord = i.ord) AS user_bytes
      FROM delta AS i
), shared_bytes AS (
    SELECT g.ord,
           CASE WHEN g.app_bytes <= 0 THEN 0 ELSE g.app_bytes +
             (SELECT coalesce(sum(a.size), 0) FROM app_states AS a
               WHERE a.app_name = i.app_name)
           END AS app_bytes,
           CASE WHEN g.user_bytes <= 0 THEN 0 ELSE g.user_bytes +
             (SELECT coalesce(sum(u.size), 0) FROM user_states AS u
               WHERE u.app_name = i.app_name AND u.user_id = i.user_id)
           END AS user_bytes
      FROM growth AS g JOIN delta AS i ON i.ord = g.ord
), free AS (
    -- The sessions no other transaction holds, locked: a batch never waits
    -- on one session's lock (a fork's, another process's batch), so neither
    -- do the other appends in it, and batches cannot deadlock on sessions.
    SELECT i.ord FROM item AS i JOIN sessions AS s
        ON s.app_name = i.app_name AND s.user_id = i.user_id AND s.id = i.session_id
       FOR UPDATE OF s SKIP LOCKED
), bumped AS (
    UPDATE sessions AS s
       SET state = s.state || i.session_delta, revision = s.revision + 1,
           update_time = i.event_time,
           ttl_seconds = CASE WHEN i.replace_expiry THEN i.ttl ELSE s.ttl_seconds END,
           expire_time = CASE WHEN i.replace_expiry THEN coalesce(i.now + i.ttl, i.expire_at)
                              WHEN s.ttl_seconds IS NULL THEN s.expire_time
                              ELSE i.now + s.ttl_seconds END,
           state_bytes = CASE WHEN i.session_growth = 0
                                   OR s.state_bytes + i.session_growth <= i.max_bytes
                              THEN s.state_bytes + i.session_growth
                              ELSE octet_length((s.state || i.session_delta)::text) END
      FROM delta AS i JOIN shared_bytes AS shared ON shared.ord = i.ord
      JOIN free ON free.ord = i.ord
     WHERE s.app_name = i.app_name AND s.user_id = i.user_id AND s.id = i.session_id
       AND (s.expire_time IS NULL OR s.expire_time > i.now)
       AND (i.expected IS NULL OR s.revision = i.expected)
       AND CASE WHEN i.session_growth = 0 OR s.state_bytes + i.session_growth <= i.max_bytes
                THEN true
                ELSE octet_length((s.state || i.session_delta)::text) <= i.max_bytes END
       AND shared.app_bytes <= i.max_bytes AND shared.user_bytes <= i.max_bytes
       AND NOT EXISTS (SELECT 1 FROM events AS e
                        WHERE e.app_name = i.app_name AND e.user_id = i.user_id
                          AND e.session_id = i.session_id AND e.id = i.event_id)
 RETURNING i.ord, s.revision
), stored AS (
    INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author,
                        timestamp, data)
    SELECT i.app_name, i.user_id, i.session_id, b.revision, i.event_id, i.invocation_id,
           i.author, i.event_time, i.data
      FROM bumped AS b JOIN item AS i ON i.ord = b.ord
), app_written AS (
    INSERT INTO app_states (app_name, key, value, size)
    SELECT DISTINCT ON (d.app_name, d.key) d.app_name, d.key, d.value, d.size
      FROM bumped AS b JOIN app_delta AS d ON d.ord = b.ord
     ORDER BY d.app_name, d.key, d.ord DESC
    ON CONFLICT (app_name, key) DO UPDATE SET value = EXCLUDED.value, size = EXCLUDED.size
), user_written AS (
    INSERT INTO user_states (app_name, user_id, key, value, size)
    SELECT DISTINCT ON (d.app_name, d.user_id, d.key) d.app_name, d.user_id, d.key, d.value,
           d.size
      FROM bumped AS b JOIN user_delta AS d ON d.ord = b.ord
     ORDER BY d.app_name, d.user_id, d.key, d.ord DESC
    ON CONFLICT (app_name, user_id, key) DO UPDATE SET value = EXCLUDED.value, size = EXCLUDED.size
)
SELECT b.revision, shared.app_bytes, shared.user_bytes,
       CASE WHEN b.revision IS NOT NULL OR i.session_delta = '{}'::jsonb THEN 0 ELSE
         (SELECT octet_length((s.state || i.session_delta)::text) FROM sessions AS s
           WHERE s.app_name = i.app_name AND s.user_id = i.user_id AND s.id = i.session_id)
       END,
       free.ord IS NULL AND EXISTS (SELECT 1 FROM sessions AS s
                                     WHERE s.app_name = i.app_name AND s.user_id = i.user_id
                                       AND s.id = i.session_id) AS held_elsewhere
  FROM delta AS i JOIN shared_bytes AS shared ON shared.ord = i.ord
  LEFT JOIN free ON free.ord = i.ord
  LEFT JOIN bumped AS b ON b.ord = i.ord
 ORDER BY i.ord
"""

# One round trip for a whole session read; event texts are joined by the
# database, and only events up to the revision read with the session row are
# taken, so events, state and ETag describe one moment. Their size is read
# first (from the TOAST pointers, without reading the texts): when it passes
# $6 the texts are not joined at all, so no read can ask for a gigabyte.
SNAPSHOT = """
SELECT s.state, s.revision, s.update_time, s.expire_time,
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
   AND (s.expire_time IS NULL OR s.expire_time > $7::float8)
"""


# -- sessions ----------------------------------------------------------------

# An expired session ($4 is now) is missing.
READ_SESSION = """
SELECT state, revision, update_time, expire_time FROM sessions
 WHERE app_name = $1 AND user_id = $2 AND id = $3
   AND (expire_time IS NULL OR expire_time > $4::float8)
"""
# Kept from being deleted until the transaction ends.
READ_SESSION_FOR_SHARE = READ_SESSION + " FOR SHARE"

INSERT_SESSION = """
INSERT INTO sessions (app_name, user_id, id, state, initial_state, state_bytes, revision,
                      create_time, update_time, expire_time, ttl_seconds)
VALUES ($1, $2, $3, $4, $4, $5, 0, $6, $6, $7, $8)
ON CONFLICT DO NOTHING
RETURNING revision
"""

# The session row is locked first, as an append locks it first: deleting its
# events before it deadlocked with an append retrying a stored event id. An
# expired one is locked too (and deleted), but reported missing.
LOCK_SESSION = """
SELECT expire_time IS NULL OR expire_time > $4::float8 FROM sessions
 WHERE app_name = $1 AND user_id = $2 AND id = $3
 FOR UPDATE
"""
# An expired session whose id a new session takes: deleted first, with its
# events, in the new session's transaction.
LOCK_EXPIRED_SESSION = """
SELECT 1 FROM sessions
 WHERE app_name = $1 AND user_id = $2 AND id = $3 AND expire_time <= $4::float8
 FOR UPDATE
"""
DELETE_SESSION_EVENTS = """
DELETE FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3
"""
DELETE_SESSION = """
DELETE FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3
"""


def _positional(sql: str, names: list[str]) -> str:
    """`:name` parameters as asyncpg's `$n`, numbered in the order given."""
    numbers = {name: f"${index}" for index, name in enumerate(names, start=1)}
    return re.sub(r"(?<!:):(\w+)", lambda match: numbers[match.group(1)], sql)


def _listing(*, one_user: bool, after_cursor: bool) -> tuple[str, list[str]]:
    names = ["app_name", "now", "candidates", "per_session", "max_bytes"]
    if one_user:
        names.append("user_id")
    if after_cursor:
        names += ["after_time", "after_user", "after_id"]
    return _positional(listing_sql(one_user=one_user, after_cursor=after_cursor), names), names


# The same statement as the SQLite store's, numbered for asyncpg; with the
# parameter names in their order.
LISTINGS = {
    (one_user, after_cursor): _listing(one_user=one_user, after_cursor=after_cursor)
    for one_user in (False, True)
    for after_cursor in (False, True)
}

# A session's expiry replaced ($5: the idle timeout, $6: the time it gives
# or the absolute time), if it is not expired ($4 is now) and, when $7 is not
# null, still at that revision; the revision comes back.
SET_EXPIRY = """
UPDATE sessions SET ttl_seconds = $5, expire_time = $6
 WHERE app_name = $1 AND user_id = $2 AND id = $3
   AND (expire_time IS NULL OR expire_time > $4::float8)
   AND ($7::bigint IS NULL OR revision = $7::bigint)
RETURNING revision
"""

# -- fork --------------------------------------------------------------------

# The source of a fork, kept from being deleted until the copy commits.
FORK_SOURCE = """
SELECT state, revision, initial_state FROM sessions
 WHERE app_name = $1 AND user_id = $2 AND id = $3
   AND (expire_time IS NULL OR expire_time > $4::float8)
 FOR SHARE
"""
INSERT_FORK = """
INSERT INTO sessions (app_name, user_id, id, state, initial_state, state_bytes, revision,
                      create_time, update_time, expire_time, ttl_seconds)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10)
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
INITIAL_STATE = """
SELECT initial_state IS NOT NULL, initial_state FROM sessions
 WHERE app_name = $1 AND user_id = $2 AND id = $3
   AND (expire_time IS NULL OR expire_time > $4::float8)
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
NEWEST_KEPT_SEQ = """
SELECT s.revision,
       coalesce((SELECT e.seq FROM events AS e
                  WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3
                  ORDER BY e.seq DESC
                 OFFSET $4 LIMIT 1), 0)
  FROM sessions AS s
 WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
   AND (s.expire_time IS NULL OR s.expire_time > $5::float8)
"""
# Removes the events after seq $4 if the session is still at revision $5; the
# removal is a change like any write: the revision goes up by one (never back,
# so an If-Match taken before cannot match again), the update time is $6 and
# an idle timeout restarts. $7, when not null, replaces the session-scope
# state (measured as stored). The session row is locked first, as every
# writer locks it; an append waiting for it then finds the revision moved.
REMOVE_EVENTS = """
WITH bumped AS (
    UPDATE sessions
       SET revision = revision + 1, update_time = $6::float8,
           state = coalesce($7::jsonb, state),
           state_bytes = CASE WHEN $7::jsonb IS NULL THEN state_bytes
                              ELSE octet_length($7::jsonb::text) END,
           expire_time = CASE WHEN ttl_seconds IS NULL THEN expire_time
                              ELSE $6::float8 + ttl_seconds END
     WHERE app_name = $1 AND user_id = $2 AND id = $3 AND revision = $5::bigint
       AND (expire_time IS NULL OR expire_time > $6::float8)
 RETURNING revision
), removed AS (
    DELETE FROM events AS e USING bumped
     WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3 AND e.seq > $4::bigint
 RETURNING 1
)
SELECT bumped.revision, (SELECT count(*) FROM removed) FROM bumped
"""

# -- the sweeper -------------------------------------------------------------

# Held by the process sweeping, for each batch's transaction (transaction-level:
# it works through a pooler in transaction mode and dies with its transaction).
TRY_SWEEP_LOCK = "SELECT pg_try_advisory_xact_lock(hashtextextended('session-state sweep', 0))"
# The next expired sessions ($1 is now), locked; one a request holds (an
# append pushing its expiry, a fork copying it) is left for the next pass.
EXPIRED_SESSIONS = """
SELECT app_name, user_id, id, revision FROM sessions
 WHERE expire_time <= $1::float8
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
EXPIRED_COUNT = "SELECT count(*) FROM sessions WHERE expire_time <= $1::float8"

# -- state -------------------------------------------------------------------

READ_APP_STATE = "SELECT key, value FROM app_states WHERE app_name = $1"
READ_USER_STATE = "SELECT key, value FROM user_states WHERE app_name = $1 AND user_id = $2"
READ_USER_STATES = """
SELECT user_id, key, value FROM user_states WHERE app_name = $1 AND user_id = ANY($2::text[])
"""

# The written keys' current sizes, locked (in key order, as every writer
# locks them) so that they stay current until the write.
LOCK_APP_KEYS = """
SELECT key, size FROM app_states WHERE app_name = $1 AND key = ANY($2::text[])
 ORDER BY key FOR UPDATE
"""
LOCK_USER_KEYS = """
SELECT key, size FROM user_states WHERE app_name = $1 AND user_id = $2 AND key = ANY($3::text[])
 ORDER BY key FOR UPDATE
"""
APP_STATE_BYTES = "SELECT coalesce(sum(size), 0) FROM app_states WHERE app_name = $1"
USER_STATE_BYTES = """
SELECT coalesce(sum(size), 0) FROM user_states WHERE app_name = $1 AND user_id = $2
"""
UPSERT_APP_STATE = """
INSERT INTO app_states (app_name, key, value, size)
SELECT $1, entry.key, entry.value::jsonb, entry.size
  FROM unnest($2::text[], $3::text[], $4::bigint[]) AS entry(key, value, size)
 ORDER BY entry.key
ON CONFLICT (app_name, key) DO UPDATE SET value = EXCLUDED.value, size = EXCLUDED.size
"""
UPSERT_USER_STATE = """
INSERT INTO user_states (app_name, user_id, key, value, size)
SELECT $1, $2, entry.key, entry.value::jsonb, entry.size
  FROM unnest($3::text[], $4::text[], $5::bigint[]) AS entry(key, value, size)
 ORDER BY entry.key
ON CONFLICT (app_name, user_id, key) DO UPDATE SET value = EXCLUDED.value, size = EXCLUDED.size
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
                      content, custom_metadata, search_words, search_grams)
SELECT $1, $2, m.session_id, m.event_id, m.author, m.role, m.timestamp, m.text, m.content,
       m.custom_metadata, m.search_words, m.search_grams
  FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::text[],
              $9::text[], $10::text[], $11::text[], $12::text[])
       AS m(session_id, event_id, author, role, timestamp, text, content, custom_metadata,
            search_words, search_grams)
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
# character as the prefix of a pair. `matched` counts the distinct terms a
# memory holds (stemming may make two words one). The best `limit` matches
# are taken with their sizes first, then the texts of those that fit in the
# response ($7 bytes; always the first).
SEARCH_MEMORIES = (
    """
WITH term AS (
    SELECT DISTINCT query FROM (
        SELECT plainto_tsquery('english', word) AS query FROM unnest($3::text[]) AS word
        UNION ALL
        SELECT plainto_tsquery('simple', gram) FROM unnest($4::text[]) AS gram
        UNION ALL
        SELECT CAST(quote_literal(prefix) || ':*' AS tsquery) FROM unnest($5::text[]) AS prefix
    ) AS terms
     WHERE numnode(query) > 0
), matching AS (
    SELECT CAST(string_agg(CAST(query AS text), ' | ') AS tsquery) AS query FROM term
), top AS (
    SELECT m.id, m.timestamp,
           octet_length(m.text) + coalesce(octet_length(m.content), 0)
           + coalesce(octet_length(m.custom_metadata), 0) AS size,
           (SELECT count(*) FROM term WHERE m.search_vector @@ term.query) AS matched,
           -ts_rank_cd(m.search_vector, matching.query) AS rank_order
      FROM memories AS m, matching
     WHERE m.app_name = $1 AND m.user_id = $2
       AND m.search_vector @@ matching.query
     ORDER BY matched DESC, rank_order, m.timestamp DESC, m.id
     LIMIT $6
"""
    # What fits in the response ($7 bytes), as in the SQLite store's search.
    + TAKE_WHAT_FITS.replace(":budget", "$7")
)

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
