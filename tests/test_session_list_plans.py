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

from session_state.db import postgresql_statements as sql
from session_state.db.session_listing import listing_parameters, listing_sql
from session_state.domain import SessionQuery
from session_state.labels import LabelFilter

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


def _statement(guarded: bool, after: bool, descending: bool) -> sql.Statement:
    dialect = replace(sql._LISTING_DIALECT, label_guard=guarded)
    return sql.Statement.of(
        listing_sql(
            dialect, one_user=False, after_cursor=after, descending=descending, labelled=True
        )
    )


async def _pages(connection, app, query, guarded, now):
    """Every page of the list, in order (a page's last row is the cursor)."""
    pages, after = [], None
    descending = query.order == "desc"
    while True:
        statement = _statement(guarded, after is not None, descending)
        values = listing_parameters(app, None, after, query, PAGE, 1 << 30, now)
        if guarded:
            assert "label_guard" in statement.names
            values.update(label_probe=PROBE, label_guard=GUARD)
        rows = [
            tuple(row)
            for row in await connection.fetch(statement.text, *statement.arguments(values))
        ]
        page = rows[:PAGE]
        pages.append(page)
        if len(rows) <= PAGE:
            return pages
        last = page[-1]
        after = (last[4], last[0], last[1])


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
