"""LangGraph's store searches in the database: each item keeps the text a
keyword query looks in (its strings, normalised and case-folded), so a
search with keywords reads one page instead of every item under the prefix
(app.langgraph.store.matching.searchable_text).

Adds lg_store_items.search_text and fills it for the items stored before,
in batches, with the frozen copy of searchable_text below.

Revision ID: 0014
Revises: 0011
Create Date: 2026-11-26
"""

import json
import unicodedata
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BACKFILL_BATCH_ROWS = 1000


# Frozen copy of app.langgraph.store.matching.searchable_text as of this revision.
def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _searchable_text(value: Any) -> str:
    text = " ".join(_strings(value))
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def _backfill() -> None:
    connection = op.get_bind()
    select = sa.text(
        "SELECT app_name, namespace, key, value FROM lg_store_items"
        " WHERE (app_name, namespace, key) > (:app_name, :namespace, :key)"
        " ORDER BY app_name, namespace, key LIMIT :rows"
    )
    update = sa.text(
        "UPDATE lg_store_items SET search_text = :search_text"
        " WHERE app_name = :app_name AND namespace = :namespace AND key = :key"
    )
    after = {"app_name": "", "namespace": "", "key": ""}
    while rows := connection.execute(select, {**after, "rows": BACKFILL_BATCH_ROWS}).all():
        connection.execute(
            update,
            [
                {
                    "app_name": app_name,
                    "namespace": namespace,
                    "key": key,
                    # asyncpg's codec gives JSONB decoded; SQLite gives the text.
                    "search_text": _searchable_text(
                        json.loads(value) if isinstance(value, str) else value
                    ),
                }
                for app_name, namespace, key, value in rows
            ],
        )
        after = {"app_name": rows[-1][0], "namespace": rows[-1][1], "key": rows[-1][2]}


def upgrade() -> None:
    op.add_column(
        "lg_store_items", sa.Column("search_text", sa.Text(), nullable=False, server_default="")
    )
    _backfill()


def downgrade() -> None:
    with op.batch_alter_table("lg_store_items") as batch:
        batch.drop_column("search_text")
