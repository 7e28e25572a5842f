"""The SQL of live streams on PostgreSQL (`PostgresChangeLog`), written with
`:name` parameters: a session's changes by revision, and a user's sessions
by change number (the tombstones' SQL is `postgresql_tombstones.py`'s)."""

from ..db.postgresql_statement import Statement
from ..sessions.postgresql_statements import not_expired

# The oldest transaction still running, and the next id to be given: rows
# numbered below the first are all committed (or never will be); no cursor
# a stream sent is past the second. In the reader's snapshot.
CHANGE_HORIZON = Statement.of("""
SELECT pg_snapshot_xmin(s)::text::bigint AS horizon,
       pg_snapshot_xmax(s)::text::bigint AS next_change
  FROM pg_current_snapshot() AS s
""")
# A user's live sessions changed after the cursor (:after_change,
# :after_id: change number and session id) and numbered below the
# :horizon, in change order, at most :limit; `removed`: the revision is a
# removal's. CHANGES_PAST_HORIZON: whether
# any waits for the horizon to pass it.
USER_CHANGES = Statement.of(f"""
SELECT id, revision, update_time, change_number,
       EXISTS (SELECT 1 FROM event_removals AS r
                WHERE r.app_name = :app_name AND r.user_id = :user_id AND r.session_id = sessions.id
                  AND r.revision = sessions.revision) AS removed
  FROM sessions
 WHERE app_name = :app_name AND user_id = :user_id
   AND (change_number, id) > (:after_change::bigint, :after_id::text)
   AND change_number < :horizon::bigint
   AND {not_expired(":now::float8")}
 ORDER BY change_number, id
 LIMIT :limit
""")
# Below the next id (:next_change) only: a number past it was not given by this
# cluster (rows restored from another's dump) and waits for nothing.
CHANGES_PAST_HORIZON = Statement.of("""
SELECT EXISTS (SELECT 1 FROM sessions
                WHERE app_name = :app_name AND user_id = :user_id
                  AND change_number >= :horizon::bigint AND change_number < :next_change::bigint)
""")
# A session's revision and expiry time; no row when it is missing.
READ_REVISION = Statement.of(f"""
SELECT revision, expire_time FROM sessions
 WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id
   AND {not_expired(":now::float8")}
""")
# A session's events after seq :after_seq (at most :limit): their JSON while
# the bytes before them are under :max_bytes (the first always), NULL past
# that.
CHANGED_EVENTS = Statement.of("""
SELECT seq, CASE WHEN before = 0 OR before < :max_bytes THEN data END AS data FROM (
    SELECT seq, data,
           sum(octet_length(data)) OVER (ORDER BY seq) - octet_length(data) AS before
      FROM (SELECT seq, data FROM events
             WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
               AND seq > :after_seq
             ORDER BY seq
             LIMIT :limit) AS first_rows
) AS running
 ORDER BY seq
""")
# A session's removals with :after_revision < revision <= :up_to_revision
# (app.streams.live reads them).
READ_REMOVALS = Statement.of("""
SELECT revision, event_ids FROM event_removals
 WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
   AND revision > :after_revision AND revision <= :up_to_revision
 ORDER BY revision
""")
