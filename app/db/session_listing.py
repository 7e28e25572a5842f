"""The session listing's page statement, run by both stores (named
`:parameters`; PostgreSQL's statements number them), and what a listed
session is counted for besides its state."""

# What a session in a list adds besides its state (ids, field names, time).
LISTED_SESSION_OVERHEAD_BYTES = 512


def listing_sql(*, one_user: bool, after_cursor: bool) -> str:
    """The page statement (both stores run it), static text so that nothing
    is built per request (docs/performance.md, "The session listing")."""
    conditions = ["s.app_name = :app_name", "(s.expire_time IS NULL OR s.expire_time > :now)"]
    if one_user:
        conditions.append("s.user_id = :user_id")
    if after_cursor:
        conditions.append(
            "(s.update_time, s.user_id, s.id) > (:after_time, :after_user, :after_id)"
        )
    user_of_row = ":user_id" if one_user else "candidates.user_id"
    return f"""
        WITH candidates AS (
            SELECT s.user_id, s.id, s.state, s.revision, s.update_time, s.expire_time,
                   s.state_bytes
              FROM sessions AS s
             WHERE {" AND ".join(conditions)}
             ORDER BY s.update_time, s.user_id, s.id
             LIMIT :candidates
        ), windowed AS (
            SELECT candidates.*,
                   row_number() OVER listed AS position,
                   CAST(sum(candidates.state_bytes + :per_session
                            + (SELECT coalesce(sum(u.size), 0) FROM user_states AS u
                                WHERE u.app_name = :app_name AND u.user_id = {user_of_row}))
                        OVER listed AS BIGINT)
                   + row_number() OVER listed
                     * (SELECT coalesce(sum(a.size), 0) FROM app_states AS a
                         WHERE a.app_name = :app_name) AS running,
                   count(*) OVER () AS fetched
              FROM candidates
            WINDOW listed AS (ORDER BY candidates.update_time, candidates.user_id, candidates.id)
        )
        SELECT user_id, id, state, revision, update_time, expire_time, fetched
          FROM windowed
         WHERE position = 1 OR running <= :max_bytes
         ORDER BY position
        """
