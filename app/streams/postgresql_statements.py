"""The SQL of live streams on PostgreSQL (`PostgresChangeLog`): a session's
changes by revision, and a user's sessions by change number (the
tombstones' SQL is `postgresql_tombstones.py`'s)."""

from ..sessions.postgresql_statements import not_expired

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
