"""The SQL of long-term memory on PostgreSQL (`PostgresMemory`), written
with `:name` parameters and sent with asyncpg."""

from ..db.postgresql_statement import Statement
from .rules import KEYWORD_HITS_PER_TERM
from .search_sql import TAKE_WHAT_FITS

# A session's events after a seq, a batch at a time, for memory.
EVENTS_AFTER = Statement.of("""
SELECT seq, data FROM events
 WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
   AND seq > :after_seq
 ORDER BY seq
 LIMIT :limit
""")

# Serialises the writes of one user's memory until the transaction ends.
LOCK_USER_MEMORY = Statement.of("SELECT pg_advisory_xact_lock(hashtextextended(:owner, 1147))")

FORGOTTEN_AMONG = Statement.of("""
SELECT memory_id FROM forgotten_memories
 WHERE app_name = :app_name AND user_id = :user_id AND memory_id = ANY(:memory_ids::text[])
""")
# An event already taken (by an earlier or a concurrent ingestion) is
# skipped by the unique index, not by a list of known ids in memory.
INSERT_MEMORIES = Statement.of("""
INSERT INTO memories (app_name, user_id, session_id, event_id, author, role, timestamp, text,
                      content, custom_metadata, search_words, search_grams, embedding_model,
                      embedding, embedding_bits)
SELECT :app_name, :user_id, m.session_id, m.event_id, m.author, m.role, m.timestamp, m.text,
       m.content, m.custom_metadata, m.search_words, m.search_grams, m.embedding_model,
       m.embedding, m.embedding_bits
  FROM unnest(:session_ids::text[], :event_ids::text[], :authors::text[], :roles::text[],
              :timestamps::float8[], :texts::text[], :contents::text[],
              :custom_metadata::text[], :search_words::text[], :search_grams::text[],
              :embedding_models::text[], :embeddings::bytea[], :embedding_bits::varbit[])
       AS m(session_id, event_id, author, role, timestamp, text, content, custom_metadata,
            search_words, search_grams, embedding_model, embedding, embedding_bits)
ON CONFLICT (app_name, user_id, session_id, event_id) DO NOTHING
RETURNING id
""")
DELETE_MEMORIES_OF_IDS = Statement.of("""
DELETE FROM memories
 WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
   AND event_id = ANY(:event_ids::text[])
""")
UNFORGET = Statement.of("""
DELETE FROM forgotten_memories
 WHERE app_name = :app_name AND user_id = :user_id AND memory_id = ANY(:memory_ids::text[])
""")
DELETE_MEMORY = Statement.of("""
DELETE FROM memories WHERE app_name = :app_name AND user_id = :user_id AND event_id = :memory_id
""")
REMEMBER_FORGOTTEN = Statement.of("""
INSERT INTO forgotten_memories (app_name, user_id, memory_id)
VALUES (:app_name, :user_id, :memory_id)
ON CONFLICT DO NOTHING
""")
DELETE_SESSION_MEMORIES = Statement.of("""
DELETE FROM memories WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
""")
DELETE_USER_MEMORIES = Statement.of(
    "DELETE FROM memories WHERE app_name = :app_name AND user_id = :user_id"
)
DELETE_USER_FORGOTTEN = Statement.of(
    "DELETE FROM forgotten_memories WHERE app_name = :app_name AND user_id = :user_id"
)

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
        SELECT plainto_tsquery('english', word) AS query FROM unnest(:words::text[]) AS word
        UNION ALL
        SELECT plainto_tsquery('simple', gram) FROM unnest(:grams::text[]) AS gram
        UNION ALL
        SELECT CAST(quote_literal(prefix) || ':*' AS tsquery)
          FROM unnest(:prefixes::text[]) AS prefix
    ) AS terms
     WHERE numnode(query) > 0
), hit AS (
    SELECT DISTINCT m.id FROM term CROSS JOIN LATERAL (
        SELECT id FROM memories
         WHERE app_name || '' = :app_name AND user_id || '' = :user_id
           AND search_vector @@ term.query
         ORDER BY id + 0 DESC LIMIT {KEYWORD_HITS_PER_TERM}
    ) AS m
), grouped AS (
    SELECT m.id, m.timestamp, count(*) AS matched,
           -sum(ts_rank_cd(m.search_vector, term.query)) AS rank_order
      FROM hit JOIN memories AS m ON m.id = hit.id
      JOIN term ON m.search_vector @@ term.query
     GROUP BY m.id, m.timestamp
), best AS (
    SELECT * FROM grouped ORDER BY matched DESC, rank_order, timestamp DESC, id LIMIT :limit
)
"""
# The best `limit` matches are taken with their sizes first, then the texts
# of those that fit in the response (:budget bytes; always the first), each
# with the share of the question's terms it holds.
_KEYWORD_TOP = (
    _KEYWORD_GROUPED
    + """, top AS (
    SELECT best.*, best.matched::float8 / (SELECT count(*) FROM term) AS share_of_terms,
           octet_length(m.text) + coalesce(octet_length(m.content), 0)
           + coalesce(octet_length(m.custom_metadata), 0) AS size
      FROM best JOIN memories AS m ON m.id = best.id
"""
)
SEARCH_MEMORIES = Statement.of(_KEYWORD_TOP + TAKE_WHAT_FITS)
# The same ranking, ids only (the keyword side of a hybrid search), each
# with the share of the question's terms the memory holds (1: every term).
KEYWORD_MEMORY_IDS = Statement.of(
    _KEYWORD_GROUPED
    + """SELECT id, matched::float8 / (SELECT count(*) FROM term) AS share_of_terms FROM best
 ORDER BY matched DESC, rank_order, timestamp DESC, id"""
)

# The first pass of a search by meaning (app.memory.first_pass) counts in
# numpy over the sign bits of the user's memories embedded by :model: the
# newest row id (one step of ix_memories_vector_bits), and the rows above
# :after_id whose bits are :bit_count long, read from that index alone, ids
# and bits each joined into one bytea in their binary forms (8 bytes an id;
# the bit count, 4 bytes, then the bits). The components of the few kept are
# read after, if those rows are still the user's of that model.
NEWEST_MEMORY_ROW = Statement.of("""
SELECT max(id) FROM memories
 WHERE app_name = :app_name AND user_id = :user_id AND embedding_model = :model
""")
MEMORY_SIGN_BITS = Statement.of("""
SELECT string_agg(int8send(id), ''::bytea) AS ids,
       string_agg(varbit_send(embedding_bits), ''::bytea) AS bits
  FROM memories
 WHERE app_name = :app_name AND user_id = :user_id AND embedding_model = :model
   AND length(embedding_bits) = :bit_count AND id > :after_id
""")
MEMORY_COMPONENTS = Statement.of("""
SELECT id, embedding FROM memories
 WHERE id = ANY(:ids::bigint[]) AND app_name = :app_name AND user_id = :user_id
   AND embedding_model = :model
""")
# Memories by row id, in the order given, as many as fit in :budget bytes
# (always the first), as TAKE_WHAT_FITS takes them, each with its row id.
READ_MEMORIES = Statement.of("""
WITH sized AS (
    SELECT m.id, wanted.position,
           octet_length(m.text) + coalesce(octet_length(m.content), 0)
           + coalesce(octet_length(m.custom_metadata), 0) AS size
      FROM unnest(:ids::bigint[]) WITH ORDINALITY AS wanted(id, position)
      JOIN memories AS m ON m.id = wanted.id
     WHERE m.app_name = :app_name AND m.user_id = :user_id
), ranked AS (
    SELECT id, row_number() OVER best AS position, sum(size) OVER best AS running
      FROM sized WINDOW best AS (ORDER BY position)
)
SELECT m.session_id, m.event_id, m.author, m.role, m.timestamp, m.text,
       m.content, m.custom_metadata, m.id
  FROM ranked JOIN memories AS m ON m.id = ranked.id
 WHERE ranked.position = 1 OR ranked.running <= :budget
 ORDER BY ranked.position
""")
# A page of the user's memories, newest first: the next entries of
# ix_memories_app_user (app, user, row id).
LIST_MEMORY_IDS = Statement.of("""
SELECT id FROM memories
 WHERE app_name = :app_name AND user_id = :user_id
   AND (:before::bigint IS NULL OR id < :before::bigint)
 ORDER BY id DESC
 LIMIT :limit
""")
# Memories not embedded by the model :model (of app :app_name and user
# :user_id when given).
_WAITING = """
 WHERE (embedding_model IS NULL OR embedding_model <> :model)
   AND (:app_name::text IS NULL OR app_name = :app_name::text)
   AND (:user_id::text IS NULL OR user_id = :user_id::text)
"""
# At most :limit of them refused fewer than :max_tries times and not claimed
# at :now, in id order, claimed until :until. SKIP LOCKED: a row another
# process is claiming is left to it (its claim is then seen: the row is not
# taken twice).
CLAIM_MEMORIES_TO_EMBED = Statement.of(
    """
UPDATE memories AS m SET embedding_claimed_until = :until
  FROM (SELECT id FROM memories"""
    + _WAITING
    + """   AND embedding_failures < :max_tries
          AND (embedding_claimed_until IS NULL OR embedding_claimed_until <= :now)
        ORDER BY id LIMIT :limit FOR UPDATE SKIP LOCKED) AS claimed
 WHERE m.id = claimed.id
RETURNING m.id, m.text
"""
)
RELEASE_MEMORIES_TO_EMBED = Statement.of("""
UPDATE memories SET embedding_claimed_until = NULL WHERE id = ANY(:ids::bigint[])
""")
REFUSE_MEMORIES_TO_EMBED = Statement.of("""
UPDATE memories
   SET embedding_failures = embedding_failures + 1, embedding_claimed_until = :retry_at
 WHERE id = ANY(:ids::bigint[])
""")
RETRY_REFUSED_EMBEDDINGS = Statement.of(
    "UPDATE memories SET embedding_failures = 0, embedding_claimed_until = NULL"
    + _WAITING
    + " AND embedding_failures > 0"
)
COUNT_MEMORIES_TO_EMBED = Statement.of(
    "SELECT count(*) FILTER (WHERE embedding_failures < :max_tries) AS waiting,"
    " count(*) FILTER (WHERE embedding_failures >= :max_tries) AS given_up FROM memories" + _WAITING
)
# A row deleted meanwhile is skipped.
STORE_EMBEDDINGS = Statement.of("""
UPDATE memories AS m
   SET embedding_model = :model, embedding = v.embedding, embedding_bits = v.bits,
       embedding_claimed_until = NULL, embedding_failures = 0
  FROM unnest(:ids::bigint[], :embeddings::bytea[], :bits::varbit[]) AS v(id, embedding, bits)
 WHERE m.id = v.id
""")
