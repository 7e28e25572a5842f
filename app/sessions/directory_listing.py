"""The statements of GET /apps and GET /apps/{app}/users, run by both stores
(named `:parameters`; PostgreSQL's statements number them): apps and users
that have live sessions, with counts, paged by name.

Cost: a page reads the order index entries of the sessions of the apps (or
users) on it (ix_sessions_app_order, ix_sessions_app_user_order) and nothing
else; it never reads state, labels or events."""

from .liveness_sql import live_sql

_LIVE = live_sql(":now", "s.")


def apps_sql(allowed_apps: str | None, *, after_cursor: bool) -> str:
    """`allowed_apps`: the store's condition that s.app_name is one of
    :allowed (a key's apps), or None for every app."""
    conditions = [_LIVE]
    if allowed_apps is not None:
        conditions.append(allowed_apps)
    if after_cursor:
        conditions.append("s.app_name > :after_app")
    return f"""
        SELECT s.app_name, count(*) AS sessions
          FROM sessions AS s
         WHERE {" AND ".join(conditions)}
         GROUP BY s.app_name
         ORDER BY s.app_name
         LIMIT :candidates
        """


def users_sql(*, after_cursor: bool) -> str:
    conditions = ["s.app_name = :app_name", _LIVE]
    if after_cursor:
        conditions.append("s.user_id > :after_user")
    return f"""
        SELECT s.user_id, count(*) AS sessions, max(s.update_time) AS last_update_time
          FROM sessions AS s
         WHERE {" AND ".join(conditions)}
         GROUP BY s.user_id
         ORDER BY s.user_id
         LIMIT :candidates
        """


def apps_variants() -> list[tuple[bool, bool]]:
    """(restricted to some apps, after a cursor), every combination."""
    return [(restricted, after) for restricted in (False, True) for after in (False, True)]


def directory_parameters(now: float, limit: int, **given: str | None) -> dict[str, object]:
    """The parameters of a page of `limit`; a cursor or app given as None is
    left out (its statement does not take it)."""
    parameters: dict[str, object] = {"now": now, "candidates": limit + 1}
    parameters.update({name: value for name, value in given.items() if value is not None})
    return parameters
