"""The SQL of erasure and the sweeper on PostgreSQL (`PostgresLifecycle`);
the memory tables' statements an erasure shares with memory are
app.memory.postgresql_statements'."""

from ..sessions.postgresql_statements import expired

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
