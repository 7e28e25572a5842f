"""Multilingual memory search: the index is built over the text's searchable
form (normalised words, and pairs of characters of the scripts written
without spaces) instead of the raw text.

Adds memories.search_words and memories.search_grams, fills them for the rows
stored before (in batches, with the frozen copy of app.memory.search_text below: the
app's copy may change, this revision's data may not), and rebuilds the search
index over them: on PostgreSQL the generated tsvector (English stemming for
words, 'simple' for pairs) and its GIN index, on SQLite the FTS5 table (its
tokenizer keeps every mark and accent, and splits only where we put spaces)
and its triggers. Downgrade restores revision 0005's index over the text.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

import functools
import itertools
import re
import unicodedata
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BACKFILL_BATCH_ROWS = 1000

# Frozen copy of app.memory.search_text.search_text as of this revision.
_MAX_INDEXED_GRAMS = 50_000
_UNSPACED_BLOCKS = (
    "\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u2e80-\u2fdf"
    "\u3005-\u3007\u3021-\u3029\u3038-\u303c\u3040-\u30ff\u3100-\u312f\u3130-\u318f"
    "\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff"
    "\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)


def _ranges(codepoints: list[int]) -> str:
    parts: list[str] = []
    start = previous = codepoints[0]
    for codepoint in [*codepoints[1:], -1]:
        if codepoint != previous + 1:
            parts.append(f"{chr(start)}-{chr(previous)}" if previous > start else chr(start))
            start = codepoint
        previous = codepoint
    return "".join(parts)


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The token and character patterns, built at first use: their classes
    come from a pass over every code point (a fraction of a second to a
    second of CPU, which every process start paid at import)."""
    marks = _ranges(
        [c for c in range(0x20000) if unicodedata.category(chr(c)).startswith("M")]
        + list(range(0xE0100, 0xE01F0))
    )
    unspaced = _ranges(
        [
            c
            for first, last in re.findall("(.)-(.)", _UNSPACED_BLOCKS)
            for c in range(ord(first), ord(last) + 1)
            if unicodedata.category(chr(c))[0] in "LMN"
        ]
    )
    token = re.compile(f"(?P<run>[{unspaced}]+)|(?:[^\\W_{unspaced}]|[{marks}])+")
    character = re.compile(f"[{marks}]*[^{marks}][{marks}]*")
    return token, character


def _search_text(text: str) -> dict[str, str]:
    words: list[str] = []
    grams: list[str] = []
    distinct: set[str] = set()
    normalized = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    for match in _patterns()[0].finditer(normalized):
        run = match.group("run")
        if run is None:
            words.append(match.group())
            continue
        characters = _patterns()[1].findall(run)
        if not characters:
            continue
        pairs = [a + b for a, b in itertools.pairwise(characters)]
        for gram in [*pairs, characters[-1]]:
            if gram not in distinct:
                if len(distinct) == _MAX_INDEXED_GRAMS:
                    continue
                distinct.add(gram)
            grams.append(gram)
    return {"search_words": " ".join(words), "search_grams": " ".join(grams)}


# End of the frozen copy.

_FTS5_TOKENIZER = "porter unicode61 remove_diacritics 0 categories ''L* N* Co M*''"


def _drop_search_index(postgresql: bool) -> None:
    if postgresql:
        op.execute("DROP INDEX ix_memories_search_vector")
        op.execute("ALTER TABLE memories DROP COLUMN search_vector")
    else:
        op.execute("DROP TRIGGER memories_fts_delete")
        op.execute("DROP TRIGGER memories_fts_insert")
        op.execute("DROP TABLE memories_fts")


def _create_search_index(
    postgresql: bool, vector: str, columns: Sequence[str], tokenizer: str
) -> None:
    if postgresql:
        op.execute(
            "ALTER TABLE memories ADD COLUMN search_vector tsvector "
            f"GENERATED ALWAYS AS ({vector}) STORED"
        )
        op.execute("CREATE INDEX ix_memories_search_vector ON memories USING gin (search_vector)")
        return
    listed = ", ".join(columns)
    new = ", ".join(f"new.{column}" for column in columns)
    old = ", ".join(f"old.{column}" for column in columns)
    op.execute(
        f"CREATE VIRTUAL TABLE memories_fts USING fts5({listed}, "
        f"content='memories', content_rowid='id', tokenize='{tokenizer}')"
    )
    op.execute(
        "CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN "
        f"INSERT INTO memories_fts(rowid, {listed}) VALUES (new.id, {new}); END"
    )
    op.execute(
        "CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN "
        f"INSERT INTO memories_fts(memories_fts, rowid, {listed}) "
        f"VALUES ('delete', old.id, {old}); END"
    )
    op.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")


def _backfill() -> None:
    connection = op.get_bind()
    select = sa.text("SELECT id, text FROM memories WHERE id > :after ORDER BY id LIMIT :rows")
    update = sa.text(
        "UPDATE memories SET search_words = :search_words, search_grams = :search_grams "
        "WHERE id = :id"
    )
    after = -1
    while rows := connection.execute(select, {"after": after, "rows": BACKFILL_BATCH_ROWS}).all():
        connection.execute(update, [{"id": id_, **_search_text(text)} for id_, text in rows])
        after = rows[-1][0]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    _drop_search_index(postgresql)
    op.add_column(
        "memories", sa.Column("search_words", sa.Text(), nullable=False, server_default="")
    )
    op.add_column(
        "memories", sa.Column("search_grams", sa.Text(), nullable=False, server_default="")
    )
    # Filled before the index exists: the tsvector is computed once per row.
    _backfill()
    _create_search_index(
        postgresql,
        "to_tsvector('english', search_words) || to_tsvector('simple', search_grams)",
        ["search_words", "search_grams"],
        _FTS5_TOKENIZER,
    )


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    _drop_search_index(postgresql)
    with op.batch_alter_table("memories") as batch:
        batch.drop_column("search_grams")
        batch.drop_column("search_words")
    _create_search_index(postgresql, "to_tsvector('english', text)", ["text"], "porter unicode61")
