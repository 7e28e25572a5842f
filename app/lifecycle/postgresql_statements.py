"""The SQL of erasure and the sweeper on PostgreSQL (`PostgresLifecycle`),
written with `:name` parameters; the memory tables' statements an erasure
shares with memory are app.memory.postgresql_statements'."""

from ..db.postgresql_statement import Statement
from ..sessions.postgresql_statements import expired

# -- the sweeper -------------------------------------------------------------

# Held by the process sweeping, for each batch's transaction (transaction-level:
# it works through a pooler in transaction mode and dies with its transaction).
TRY_SWEEP_LOCK = Statement.of(
    "SELECT pg_try_advisory_xact_lock(hashtextextended('session-state sweep', 0))"
)
# The next expired sessions (at :now), locked; one a request holds (an
# append pushing its expiry, a fork copying it) is left for the next pass.
EXPIRED_SESSIONS = Statement.of(f"""
SELECT app_name, user_id, id, revision FROM sessions
 WHERE {expired(":now::float8")}
 ORDER BY expire_time
 LIMIT :limit
 FOR UPDATE SKIP LOCKED
""")
DELETE_EVENTS_OF_ANY_SESSIONS = Statement.of("""
DELETE FROM events AS e USING unnest(:app_name::text[], :user_id::text[], :session_id::text[])
                               AS s(app_name, user_id, id)
 WHERE e.app_name = s.app_name AND e.user_id = s.user_id AND e.session_id = s.id
""")
DELETE_ANY_SESSIONS = Statement.of("""
DELETE FROM sessions AS x USING unnest(:app_name::text[], :user_id::text[], :session_id::text[])
                               AS s(app_name, user_id, id)
 WHERE x.app_name = s.app_name AND x.user_id = s.user_id AND x.id = s.id
""")
DELETE_MEMORIES_OF_ANY_SESSIONS = Statement.of("""
DELETE FROM memories AS m USING unnest(:app_name::text[], :user_id::text[], :session_id::text[])
                               AS s(app_name, user_id, id)
 WHERE m.app_name = s.app_name AND m.user_id = s.user_id AND m.session_id = s.id
""")
# Expired sessions not swept yet, for the backlog gauge (from the partial index).
EXPIRED_COUNT = Statement.of(f"SELECT count(*) FROM sessions WHERE {expired(':now::float8')}")

# -- erasure -----------------------------------------------------------------

# The next sessions of an app (of one user, when :user_id is not null) to erase,
# locked in the order every erasure takes them, with a bound of their event
# counts (a session's revision: one per event stored, and one per removal).
ERASABLE_SESSIONS = Statement.of("""
SELECT user_id, id, revision FROM sessions
 WHERE app_name = :app_name AND (:user_id::text IS NULL OR user_id = :user_id::text)
 ORDER BY user_id, id
 LIMIT :limit
 FOR UPDATE
""")
DELETE_EVENTS_OF_SESSIONS = Statement.of("""
DELETE FROM events AS e USING unnest(:user_ids::text[], :session_ids::text[]) AS s(user_id, id)
 WHERE e.app_name = :app_name AND e.user_id = s.user_id AND e.session_id = s.id
""")
DELETE_SESSIONS = Statement.of("""
DELETE FROM sessions AS x USING unnest(:user_ids::text[], :session_ids::text[]) AS s(user_id, id)
 WHERE x.app_name = :app_name AND x.user_id = s.user_id AND x.id = s.id
""")
DELETE_USER_STATE = Statement.of(
    "DELETE FROM user_states WHERE app_name = :app_name AND user_id = :user_id"
)
DELETE_APP_USER_STATES = Statement.of("DELETE FROM user_states WHERE app_name = :app_name")
DELETE_APP_STATE = Statement.of("DELETE FROM app_states WHERE app_name = :app_name")
DELETE_APP_MEMORIES = Statement.of("DELETE FROM memories WHERE app_name = :app_name")
DELETE_APP_FORGOTTEN = Statement.of("DELETE FROM forgotten_memories WHERE app_name = :app_name")
