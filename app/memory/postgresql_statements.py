"""The SQL of long-term memory on PostgreSQL (`PostgresMemory`), sent with
asyncpg."""

from .rules import KEYWORD_HITS_PER_TERM
from .sqlite_memory import TAKE_WHAT_FITS

# A session's events after a seq, a batch at a time, for memory.
EVENTS_AFTER = """
SELECT seq, data FROM events
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND seq > $4
 ORDER BY seq
 LIMIT $5
"""

# Serialises the writes of one user's memory until the transaction ends.
LOCK_USER_MEMORY = "SELECT pg_advisory_xact_lock(hashtextextended($1, 1147))"

FORGOTTEN_AMONG = """
SELECT memory_id FROM forgotten_memories
 WHERE app_name = $1 AND user_id = $2 AND memory_id = ANY($3::text[])
"""
# An event already taken (by an earlier or a concurrent ingestion) is
# skipped by the unique index, not by a list of known ids in memory.
INSERT_MEMORIES = """
INSERT INTO memories (app_name, user_id, session_id, event_id, author, role, timestamp, text,
                      content, custom_metadata, search_words, search_grams, embedding_model,
                      embedding, embedding_bits)
SELECT $1, $2, m.session_id, m.event_id, m.author, m.role, m.timestamp, m.text, m.content,
       m.custom_metadata, m.search_words, m.search_grams, m.embedding_model, m.embedding,
       m.embedding_bits
  FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::text[],
              $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bytea[],
              $15::varbit[])
       AS m(session_id, event_id, author, role, timestamp, text, content, custom_metadata,
            search_words, search_grams, embedding_model, embedding, embedding_bits)
ON CONFLICT (app_name, user_id, session_id, event_id) DO NOTHING
RETURNING id
"""
DELETE_MEMORIES_OF_IDS = """
DELETE FROM memories
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND event_id = ANY($4::text[])
"""
UNFORGET = """
DELETE FROM forgotten_memories
 WHERE app_name = $1 AND user_id = $2 AND memory_id = ANY($3::text[])
"""
DELETE_MEMORY = "DELETE FROM memories WHERE app_name = $1 AND user_id = $2 AND event_id = $3"
REMEMBER_FORGOTTEN = """
INSERT INTO forgotten_memories (app_name, user_id, memory_id) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING
"""
DELETE_SESSION_MEMORIES = """
DELETE FROM memories WHERE app_name = $1 AND user_id = $2 AND session_id = $3
"""
DELETE_USER_MEMORIES = "DELETE FROM memories WHERE app_name = $1 AND user_id = $2"
DELETE_USER_FORGOTTEN = "DELETE FROM forgotten_memories WHERE app_name = $1 AND user_id = $2"

# Each term is its own tsquery, built from a value, never parsed as tsquery
# syntax: words stemmed as the index stems them, pairs as they are, a single
# character as the prefix of a pair. Each term finds its rows through the
# GIN index; `matched` counts the distinct terms a memory holds (stemming may
# make two words one) and the score is the sum of the terms' ts_rank_cd (as
# SQLite sums bm25): one pass over each hit, where one OR query rechecked
# every term per row (docs/performance.md, "Memory search at 100,000
# memories", second round).
# Each term finds only the user's KEYWORD_HITS_PER_TERM memories stored last
# that hold it (app.memory.rules); a memory found is then scored by every term it
# holds (ts_rank_cd has no rarity weight, as bm25 has: counting only the rare
# term that found it would put it level with the newest common hits). The
# hits come from the GIN index alone, then are sorted: `id + 0` keeps the
# planner from walking the primary key backwards (filtering every row: the
# whole table for a rare term), `|| ''` from intersecting with every row of
# the user from ix_memories_app_user, which costs a rare term as much as a
# common one (docs/performance.md, third round).
_KEYWORD_GROUPED = f"""
WITH term AS (
    SELECT DISTINCT query FROM (
        SELECT plainto_tsquery('english', word) AS query FROM unnest($3::text[]) AS word
        UNION ALL
        SELECT plainto_tsquery('simple', gram) FROM unnest($4::text[]) AS gram
        UNION ALL
        SELECT CAST(quote_literal(prefix) || ':*' AS tsquery) FROM unnest($5::text[]) AS prefix
    ) AS terms
     WHERE numnode(query) > 0
), hit AS (
    SELECT DISTINCT m.id FROM term CROSS JOIN LATERAL (
        SELECT id FROM memories
         WHERE app_name || '' = $1 AND user_id || '' = $2 AND search_vector @@ term.query
         ORDER BY id + 0 DESC LIMIT {KEYWORD_HITS_PER_TERM}
    ) AS m
), grouped AS (
    SELECT m.id, m.timestamp, count(*) AS matched,
           -sum(ts_rank_cd(m.search_vector, term.query)) AS rank_order
      FROM hit JOIN memories AS m ON m.id = hit.id
      JOIN term ON m.search_vector @@ term.query
     GROUP BY m.id, m.timestamp
), best AS (
    SELECT * FROM grouped ORDER BY matched DESC, rank_order, timestamp DESC, id LIMIT $6
)
"""
# The best `limit` matches are taken with their sizes first, then the texts
# of those that fit in the response ($7 bytes; always the first).
_KEYWORD_TOP = (
    _KEYWORD_GROUPED
    + """, top AS (
    SELECT best.*, octet_length(m.text) + coalesce(octet_length(m.content), 0)
           + coalesce(octet_length(m.custom_metadata), 0) AS size
      FROM best JOIN memories AS m ON m.id = best.id
"""
)
SEARCH_MEMORIES = _KEYWORD_TOP + TAKE_WHAT_FITS.replace(":budget", "$7")
# The same ranking, ids only (the keyword side of a hybrid search), each
# with whether the memory holds every term of the question.
KEYWORD_MEMORY_IDS = (
    _KEYWORD_GROUPED
    + """SELECT id, matched >= (SELECT count(*) FROM term) FROM best
 ORDER BY matched DESC, rank_order, timestamp DESC, id"""
)

# The memories nearest the question's sign bits ($4) among those embedded by
# its model ($3): the first pass of a search by meaning, rescored exactly by
# the caller from the components. The ranking reads ix_memories_vector_bits
# only; the components of the few kept are read after. (Reading every id and
# bits, as SQLite does, and counting in numpy is slower here:
# docs/performance.md, "Memory search at 100,000 memories", third round.)
NEAREST_MEMORIES = """
WITH top AS (
    SELECT id FROM memories
     WHERE app_name = $1 AND user_id = $2 AND embedding_model = $3
       AND length(embedding_bits) = length($4::varbit)
     ORDER BY bit_count(embedding_bits # $4::varbit), id
     LIMIT $5
)
SELECT m.id, m.embedding FROM top JOIN memories AS m ON m.id = top.id
"""
# Memories by row id, in the order given, as many as fit in $4 bytes (always
# the first), as TAKE_WHAT_FITS takes them.
READ_MEMORIES = """
WITH sized AS (
    SELECT m.id, wanted.position,
           octet_length(m.text) + coalesce(octet_length(m.content), 0)
           + coalesce(octet_length(m.custom_metadata), 0) AS size
      FROM unnest($3::bigint[]) WITH ORDINALITY AS wanted(id, position)
      JOIN memories AS m ON m.id = wanted.id
     WHERE m.app_name = $1 AND m.user_id = $2
), ranked AS (
    SELECT id, row_number() OVER best AS position, sum(size) OVER best AS running
      FROM sized WINDOW best AS (ORDER BY position)
)
SELECT m.session_id, m.event_id, m.author, m.role, m.timestamp, m.text,
       m.content, m.custom_metadata
  FROM ranked JOIN memories AS m ON m.id = ranked.id
 WHERE ranked.position = 1 OR ranked.running <= $4
 ORDER BY ranked.position
"""
# Memories not embedded by the model $1 (of app $2 and user $3 when given).
_WAITING = """
 WHERE (embedding_model IS NULL OR embedding_model <> $1)
   AND ($2::text IS NULL OR app_name = $2::text) AND ($3::text IS NULL OR user_id = $3::text)
"""
# At most $7 of them refused fewer than $4 times and not claimed at $5, in id
# order, claimed until $6. SKIP LOCKED: a row another process is claiming is
# left to it (its claim is then seen: the row is not taken twice).
CLAIM_MEMORIES_TO_EMBED = (
    """
UPDATE memories AS m SET embedding_claimed_until = $6
  FROM (SELECT id FROM memories"""
    + _WAITING
    + """   AND embedding_failures < $4
          AND (embedding_claimed_until IS NULL OR embedding_claimed_until <= $5)
        ORDER BY id LIMIT $7 FOR UPDATE SKIP LOCKED) AS claimed
 WHERE m.id = claimed.id
RETURNING m.id, m.text
"""
)
RELEASE_MEMORIES_TO_EMBED = """
UPDATE memories SET embedding_claimed_until = NULL WHERE id = ANY($1::bigint[])
"""
REFUSE_MEMORIES_TO_EMBED = """
UPDATE memories SET embedding_failures = embedding_failures + 1, embedding_claimed_until = $2
 WHERE id = ANY($1::bigint[])
"""
RETRY_REFUSED_EMBEDDINGS = (
    "UPDATE memories SET embedding_failures = 0, embedding_claimed_until = NULL"
    + _WAITING
    + " AND embedding_failures > 0"
)
COUNT_MEMORIES_TO_EMBED = (
    "SELECT count(*) FILTER (WHERE embedding_failures < $4),"
    " count(*) FILTER (WHERE embedding_failures >= $4) FROM memories" + _WAITING
)
# A row deleted meanwhile is skipped.
STORE_EMBEDDINGS = """
UPDATE memories AS m
   SET embedding_model = $1, embedding = v.embedding, embedding_bits = v.bits,
       embedding_claimed_until = NULL, embedding_failures = 0
  FROM unnest($2::bigint[], $3::bytea[], $4::varbit[]) AS v(id, embedding, bits)
 WHERE m.id = v.id
"""
