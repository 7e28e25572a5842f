"""The session listing's page statement, run by both stores (named
`:parameters`; PostgreSQL's statements number them), and what a listed
session is counted for besides its state."""

import itertools
import math
from dataclasses import dataclass
from typing import Any

from ..core.limits import MAX_RUNNING_IN_HORIZON
from .domain import ChangeHorizon, SessionPosition, SessionQuery
from .labels import LabelFilter
from .liveness_sql import live_sql

# What a session in a list adds besides its state (ids, field names, time).
LISTED_SESSION_OVERHEAD_BYTES = 512


@dataclass(frozen=True)
class ListingDialect:
    """What a store's SQL says differently: the label filter (sessions
    holding every pair of :label_equal, a JSON object, and every key of
    :label_keys) and a session's labels' size in bytes."""

    has_labels: str
    labels_bytes: str
    # A walk's horizon as its first page reads it, in one statement with the
    # page: text as PostgreSQL writes a snapshot, `xmin:xmax:xip,...`
    # (parse_horizon).
    horizon: str
    # `{0}` (a change number) is none of :walk_running.
    not_running: str
    # Whether the store keeps a row per label in list order (SQLite's
    # session_labels, migration 0016), which an app-wide filtered list
    # walks from its driving label (:drive_key, and :drive_value when
    # driven by a value) instead of the app's labelled sessions.
    label_rows: bool = False
    # Whether an app's filtered list walks up to :label_probe sessions in
    # list order, which hold the page when the label is common; else takes
    # up to :label_guard matches through the label index (PostgreSQL's GIN,
    # migration 0011), all the app's when the label is rare, and sorts
    # them; else walks on. A cached (generic) plan cannot tell a common
    # label from a rare one: this decides at run time. docs/performance.md,
    # "Filtered session lists".
    label_guard: bool = False


# How many sessions such a list walks in list order first: a label held by
# a tenth of them fills a page of 100 within it.
LABEL_PROBE = 1000
# How many label matches it then takes through the label index: sorting up
# to that many costs about what walking past a 1% label's others does.
LABEL_GUARD = 2000


def listing_sql(
    dialect: ListingDialect,
    *,
    one_user: bool,
    after_cursor: bool,
    descending: bool,
    labelled: bool,
    driven_by_value: bool = False,
) -> str:
    """The page statement (both stores run it), static text per variant so
    that nothing is built per request (docs/performance.md, "The session
    listing"). Time bounds are always bound (infinite when not asked for):
    a range on the order index costs nothing and halves the variants."""
    # Label rows drive the walk (their order is the list's) when the
    # store has them and the list is the app's (a user's is walked on its
    # own index, never the app's).
    by_rows = labelled and dialect.label_rows and not one_user
    guarded = labelled and dialect.label_guard and not one_user
    direction = "DESC" if descending else "ASC"
    columns = (
        "s.user_id, s.id, s.state, s.revision, s.update_time, s.expire_time,"
        f" s.labels, s.state_bytes + {dialect.labels_bytes} AS listed_bytes"
    )

    def walk(alias: str, user: str, session: str) -> tuple[list[str], str]:
        """The conditions on the walked rows (`alias`: their table) beyond
        the app and the labels, and their order."""
        time = f"{alias}update_time"
        conditions = [
            # Label rows have no expiry: their session's is the one.
            live_sql(":now", "s." if alias == "l." else alias),
            f"{time} >= :updated_after",
            f"{time} < :updated_before",
        ]
        if one_user:
            conditions.append("s.user_id = :user_id")
        if after_cursor:
            beyond = "<" if descending else ">"
            conditions.append(
                f"({time}, {user}, {session}) {beyond} (:after_time, :after_user, :after_id)"
            )
            # The walk's pin: a session written since it began may have
            # moved past its position (never a clock: events carry agents').
            number = "s.change_number" if alias == "l." else f"{alias}change_number"
            conditions.append(f"{number} < :walk_bound AND {dialect.not_running.format(number)}")
        order = ", ".join(f"{name} {direction}" for name in (time, user, session))
        return conditions, order

    walked = ("l.", "l.user_id", "l.session_id") if by_rows else ("s.", "s.user_id", "s.id")
    conditions, walk_order = walk(*walked)
    conditions.insert(0, "s.app_name = :app_name")
    source = "sessions AS s"
    if by_rows:
        # CROSS JOIN: SQLite keeps the label rows as the outer loop.
        source = "session_labels AS l CROSS JOIN sessions AS s"
        conditions[:1] = [
            "l.app_name = :app_name",
            "l.label_key = :drive_key",
            *(["l.label_value = :drive_value"] if driven_by_value else []),
            "s.app_name = l.app_name AND s.user_id = l.user_id AND s.id = l.session_id",
        ]
    unlabelled = list(conditions)
    if labelled:
        conditions.append(dialect.has_labels)
    candidates = f"""
            SELECT {columns}
              FROM {source}
             WHERE {" AND ".join(conditions)}
             ORDER BY {walk_order}
             LIMIT :candidates"""
    matches = ""
    if guarded:
        # Each of the three ways runs only when the one-time filters on
        # the counts before it say so (a materialized CTE is read only
        # when asked for). The walks test the labels above an ordered
        # subquery (OFFSET 0: kept apart), which the label index cannot
        # answer, and which is planned for the page's rows (it keeps to
        # the list order index).
        few_conditions, few_order = walk("m.", "m.user_id", "m.id")

        def labels_walk(gates: list[str], limit: str) -> str:
            return f"""
            SELECT {columns}
              FROM (SELECT s.user_id, s.id, s.state, s.revision, s.update_time,
                           s.expire_time, s.labels, s.state_bytes,
                           {dialect.has_labels} AS hit
                      FROM sessions AS s
                     WHERE {" AND ".join([*gates, *unlabelled])}
                     ORDER BY {walk_order}
                     {limit}) AS s
             WHERE s.hit
             LIMIT :candidates"""

        common = "(SELECT count(*) FROM near) = :candidates"
        rare = "(SELECT count(*) FROM matches) < :label_guard"
        matches = f"""near AS MATERIALIZED ({labels_walk([], "LIMIT :label_probe")}
        ), matches AS MATERIALIZED (
            SELECT s.user_id, s.id, s.update_time, s.expire_time, s.change_number
              FROM sessions AS s
             WHERE s.app_name = :app_name AND {dialect.has_labels}
             LIMIT :label_guard
        ), """
        candidates = f"""
            SELECT * FROM near WHERE {common}
            UNION ALL
            SELECT {columns}
              FROM (SELECT m.user_id, m.id FROM matches AS m
                     WHERE NOT {common} AND {rare}
                       AND {" AND ".join(few_conditions)}
                     ORDER BY {few_order}
                     LIMIT :candidates) AS few
              JOIN sessions AS s
                ON s.app_name = :app_name AND s.user_id = few.user_id AND s.id = few.id
            UNION ALL
            ({labels_walk([f"NOT {common}", f"NOT {rare}"], "OFFSET 0")})"""
    user_of_row = ":user_id" if one_user else "candidates.user_id"
    # A first page reads where its walk is pinned, as of the page's rows.
    horizon = "" if after_cursor else f",\n               {dialect.horizon} AS horizon"
    order = ", ".join(f"{{0}}{name} {direction}" for name in ("update_time", "user_id", "id"))
    return f"""
        WITH {matches}candidates AS ({candidates}
        ), windowed AS (
            SELECT candidates.*,
                   row_number() OVER listed AS position,
                   CAST(sum(candidates.listed_bytes + :per_session
                            + (SELECT coalesce(sum(u.size), 0) FROM user_states AS u
                                WHERE u.app_name = :app_name AND u.user_id = {user_of_row}))
                        OVER listed AS BIGINT)
                   + row_number() OVER listed
                     * (SELECT coalesce(sum(a.size), 0) FROM app_states AS a
                         WHERE a.app_name = :app_name) AS running,
                   count(*) OVER () AS fetched
              FROM candidates
            WINDOW listed AS (ORDER BY {order.format("candidates.")})
        )
        SELECT user_id, id, state, revision, update_time, expire_time, labels, fetched{horizon}
          FROM windowed
         WHERE position = 1 OR running <= :max_bytes
         ORDER BY position
        """


def listing_variants() -> list[tuple[bool, bool, bool, bool]]:
    """(one_user, after_cursor, descending, labelled), every combination."""
    return [
        (one_user, after_cursor, descending, labelled)
        for one_user, after_cursor, descending, labelled in itertools.product(
            (False, True), repeat=4
        )
    ]


def listing_parameters(
    app_name: str,
    user_id: str | None,
    after: SessionPosition | None,
    query: SessionQuery,
    limit: int,
    max_bytes: int,
    now: float,
) -> dict[str, Any]:
    """The statement's parameters, by name (`listing_key` picks the
    statement); the label filter's as Python values."""
    parameters: dict[str, Any] = {
        "app_name": app_name,
        "now": now,
        "candidates": limit + 1,
        "per_session": LISTED_SESSION_OVERHEAD_BYTES,
        "max_bytes": max_bytes,
        "updated_after": -math.inf if query.updated_after is None else query.updated_after,
        "updated_before": math.inf if query.updated_before is None else query.updated_before,
    }
    if user_id is not None:
        parameters["user_id"] = user_id
    if after is not None:
        after_time, after_user, after_id = after.cursor
        parameters.update(after_time=after_time, after_user=after_user, after_id=after_id)
        parameters.update(walk_bound=after.horizon.bound, walk_running=list(after.horizon.running))
    if not query.labels.empty:
        labels = query.labels
        parameters.update(label_equal=labels.equal, label_keys=list(labels.present))
    return parameters


def label_guard_parameters() -> dict[str, int]:
    """What a statement of a store with a label guard takes besides
    `listing_parameters` when it is labelled and the app's."""
    return {"label_probe": LABEL_PROBE, "label_guard": LABEL_GUARD}


def driving_label(labels: LabelFilter) -> dict[str, str]:
    """The label whose rows a store with label rows walks (`drive_key`,
    and `drive_value` when driven by a value): a pair when one is asked
    for (fewer rows), else a key."""
    if labels.equal:
        drive_key = min(labels.equal)
        return {"drive_key": drive_key, "drive_value": labels.equal[drive_key]}
    return {"drive_key": labels.present[0]}


def parse_horizon(text: str) -> ChangeHorizon:
    """A walk's horizon from a snapshot's text (`xmin:xmax:xip,...`, the
    listing's `horizon` column): the numbers below xmax, but not the
    transactions then in flight. Past MAX_RUNNING_IN_HORIZON of them, the
    bound is the first left out: the sessions written by the newest leave
    the walk (never listed twice)."""
    _, bound, listed = text.split(":")
    running = sorted(int(number) for number in listed.split(",") if number)
    if len(running) > MAX_RUNNING_IN_HORIZON:
        return ChangeHorizon(
            running[MAX_RUNNING_IN_HORIZON], tuple(running[:MAX_RUNNING_IN_HORIZON])
        )
    return ChangeHorizon(int(bound), tuple(running))


def listing_key(
    user_id: str | None, after: SessionPosition | None, query: SessionQuery
) -> tuple[bool, bool, bool, bool]:
    """Which variant of the statement a list runs (`listing_variants`)."""
    return (user_id is not None, after is not None, query.order == "desc", not query.labels.empty)
