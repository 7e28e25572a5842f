"""PostgreSQL's app-wide filtered list (issue 29) goes one of three ways at
run time: the first walk holds the page (a common label), the label index
gives every match (a rare one), or the walk goes on. Each way gives the
rows of the plain walk, page after page, either order. The probe and the
guard are the statement's parameters: small ones here make a few dozen
sessions take every way."""

import json
import time
import uuid
from dataclasses import replace

import asyncpg

from session_state.db.postgresql_statement import Statement
from session_state.sessions import postgresql_statements as sql
from session_state.sessions.domain import ChangeHorizon, SessionPosition, SessionQuery
from session_state.sessions.labels import LabelFilter
from session_state.sessions.session_listing import listing_parameters, listing_sql, parse_horizon

PROBE, GUARD, PAGE = 6, 8, 3
SESSIONS = 60


def _labels(index: int) -> dict[str, str] | None:
    labels = {}
    if index % 5:
        labels["common"] = "yes"  # 48 of 60: 4 in the first 6 walked
    if index % 4 == 0:
        labels["some"] = "yes"  # 15: too few for the walk, too many for the guard
    if index % 20 == 7:
        labels["few"] = "yes"  # 3: fewer than the guard
    return labels or None


def _statement(guarded: bool, after: bool, descending: bool) -> Statement:
    dialect = replace(sql._LISTING_DIALECT, label_guard=guarded)
    return sql.Statement.of(
        listing_sql(
            dialect, one_user=False, after_cursor=after, descending=descending, labelled=True
        )
    )


async def _pages(connection, app, query, guarded, now):
    """Every page of the list, in order (a page's last row is the cursor)."""
    pages, after, horizon = [], None, None
    descending = query.order == "desc"
    while True:
        statement = _statement(guarded, after is not None, descending)
        values = listing_parameters(app, None, after, query, PAGE, 1 << 30, now)
        if guarded:
            assert "label_guard" in statement.names
            values.update(label_probe=PROBE, label_guard=GUARD)
        fetched = await connection.fetch(statement.text, *statement.arguments(values))
        if after is None and fetched:
            horizon = parse_horizon(fetched[-1][8])
        # Without the horizon: each walk reads its own.
        rows = [tuple(row)[:8] for row in fetched]
        page = rows[:PAGE]
        pages.append(page)
        if len(rows) <= PAGE:
            return pages
        last = page[-1]
        after = SessionPosition((last[4], last[0], last[1]), horizon)


async def test_every_way_of_a_filtered_list_gives_the_plain_walks_pages(postgres_url):
    app = f"plans-{uuid.uuid4().hex[:8]}"
    now = time.time()
    connection = await asyncpg.connect(
        postgres_url.replace("postgresql+asyncpg://", "postgresql://")
    )
    try:
        await connection.set_type_codec(
            "jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog"
        )
        rows = [
            (
                app,
                f"u{index % 3}",
                f"s{index:03d}",
                now - 1000 + index,
                # One expired session of each label: listed by no way.
                now - 1 if index in (7, 8, 9) else None,
                _labels(index),
            )
            for index in range(SESSIONS)
        ]
        await connection.executemany(
            "INSERT INTO sessions (app_name, user_id, id, state, initial_state, state_bytes,"
            " revision, create_time, update_time, expire_time, labels)"
            " VALUES ($1, $2, $3, '{}', '{}', 2, 0, $4, $4, $5, $6)",
            rows,
        )
        # Each way's scenario: "common" fills a page (PAGE + 1 rows) within
        # the first PROBE walked either way; "some" has GUARD or more
        # matches; "few" fewer.
        holders = {
            key: [i for i in range(SESSIONS) if key in (_labels(i) or {})]
            for key in ("common", "some", "few")
        }
        assert len(set(holders["common"]) & set(range(PROBE))) >= PAGE + 1
        assert len(set(holders["common"]) & set(range(SESSIONS - PROBE, SESSIONS))) >= PAGE + 1
        assert len(holders["some"]) >= GUARD > len(holders["few"])
        for labels, listed in (
            (("common",), 45),
            (("some",), 14),
            (("few",), 2),
            (("common", "some"), 11),
        ):
            for order in ("asc", "desc"):
                query = SessionQuery(
                    labels=LabelFilter({key: "yes" for key in labels}), order=order
                )
                plain = await _pages(connection, app, query, False, now)
                guarded = await _pages(connection, app, query, True, now)
                assert guarded == plain, (labels, order)
                found = [row[1] for page in plain for row in page]
                assert len(found) == len(set(found)) == listed, (labels, order)
    finally:
        await connection.execute("DELETE FROM sessions WHERE app_name = $1", app)
        await connection.close()


async def test_a_walk_s_later_pages_are_read_in_list_order_from_the_order_indexes(postgres_url):
    """The horizon that pins a walk is a filter on the rows the order index
    gives, never a sort of the app's sessions: with sorting priced out, each
    unlabelled page after the first still reads an order index."""
    connection = await asyncpg.connect(
        postgres_url.replace("postgresql+asyncpg://", "postgresql://")
    )
    try:
        async with connection.transaction():
            await connection.execute("SET LOCAL enable_sort = off")
            await connection.execute("SET LOCAL enable_seqscan = off")
            horizon = ChangeHorizon(1 << 40, (1 << 39, (1 << 39) + 5))
            after = SessionPosition((time.time(), "ada", "s1"), horizon)
            for one_user, index in (
                (False, "ix_sessions_app_order"),
                (True, "ix_sessions_app_user_order"),
            ):
                for order in ("asc", "desc"):
                    statement = sql.LISTINGS[(one_user, True, order == "desc", False)]
                    query = SessionQuery(order=order)
                    values = listing_parameters(
                        "plans",
                        "ada" if one_user else None,
                        after,
                        query,
                        PAGE,
                        1 << 30,
                        time.time(),
                    )
                    plan = "\n".join(
                        row[0]
                        for row in await connection.fetch(
                            "EXPLAIN " + statement.text, *statement.arguments(values)
                        )
                    )
                    assert index in plan, plan
                    # The page's rows are the first the index gives past the
                    # cursor: its scan is right under the LIMIT (what sorts
                    # after it sorts only those rows).
                    lines = [line.strip() for line in plan.splitlines()]
                    limit = next(i for i, line in enumerate(lines) if line.startswith("->  Limit"))
                    scan = "Index Scan Backward" if order == "desc" else "Index Scan"
                    assert lines[limit + 1].startswith(f"->  {scan} using {index} "), plan
    finally:
        await connection.close()
