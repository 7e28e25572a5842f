"""The statements on a thread's row (lg_threads) and on the thread as a
whole, written once for both dialects with `:name` parameters: how a thread is
made and kept alive by its writes (the TTL refresh), read while live, listed
by its app, copied, deleted, erased and swept (app.langgraph.expiry has the
rules). The backends (app.langgraph.checkpoints.postgresql, .sqlite) run them."""

from ..dialects import Dialect
from ..expiry import EXPIRED, LIVE, expiry, refreshed, sweep

THREAD = "app_name = :app_name AND thread_id = :thread_id"
_COLUMNS = "app_name, thread_id, user_id, create_time, update_time, expire_time, ttl_seconds"


class ThreadSql:
    """The statements of one dialect."""

    def __init__(self, dialect: Dialect) -> None:
        ttl = dialect.typed(":ttl", "float8")
        # Every write stamps its thread (the app's list of threads is in that
        # order) and pushes its expiry out, taking the TTL it names. The stamp
        # never moves back (a server whose clock is behind another's), so a
        # walk of the list never meets a thread twice.
        refresh = f"update_time = {dialect.greatest}(update_time, :now), {refreshed(ttl)}"
        self.expiry = f"SELECT expire_time, ttl_seconds FROM lg_threads WHERE {THREAD}"
        # An expired thread not swept yet is deleted before a write makes it anew.
        self.delete_if_expired = f"DELETE FROM lg_threads WHERE {THREAD} AND {EXPIRED}"
        insert = f"""
INSERT INTO lg_threads ({_COLUMNS})
VALUES (:app_name, :thread_id, :user_id, :now, :now, {expiry(ttl)}, {ttl})
ON CONFLICT (app_name, thread_id) DO"""
        self.insert = f"{insert} NOTHING"
        self.upsert = f"{insert} UPDATE SET {refresh}"
        self.refresh = f"UPDATE lg_threads SET {refresh} WHERE {THREAD}"
        self.live = f"SELECT 1 FROM lg_threads WHERE {THREAD} AND {LIVE}"
        self.user = f"SELECT user_id FROM lg_threads WHERE {THREAD}"
        self.live_user = f"SELECT user_id FROM lg_threads WHERE {THREAD} AND {LIVE}"
        self.delete = f"DELETE FROM lg_threads WHERE {THREAD}"
        # The copy is a new thread with the source's owner and TTL.
        self.copy = f"""
INSERT INTO lg_threads ({_COLUMNS})
SELECT :target_app, :target, user_id, :now, :now, {expiry("ttl_seconds")}, ttl_seconds
  FROM lg_threads WHERE {THREAD}
ON CONFLICT DO NOTHING
"""
        self.copy_rows = (
            f"""
INSERT INTO lg_checkpoints
SELECT :target_app, :target, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id,
       checkpoint_type, checkpoint, channel_versions, metadata
  FROM lg_checkpoints WHERE {THREAD}
""",
            f"""
INSERT INTO lg_channel_values
SELECT :target_app, :target, checkpoint_ns, channel, version, value_type, value
  FROM lg_channel_values WHERE {THREAD}
""",
            f"""
INSERT INTO lg_writes
SELECT :target_app, :target, checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel,
       value_type, value
  FROM lg_writes WHERE {THREAD}
""",
        )
        # Erased with the rest of the user or app (app.lifecycle.erasure).
        self.erase_user = "DELETE FROM lg_threads WHERE app_name = :app_name AND user_id = :user_id"
        self.erase_app = "DELETE FROM lg_threads WHERE app_name = :app_name"
        self.sweep = sweep("lg_threads", dialect)
        self._dialect = dialect

    def page(self, *, of_user: bool, after: bool) -> str:
        """A page of an app's live threads (`:user_id`'s only when `of_user`),
        latest write first, after (`:after_time`, `:after_thread`) when
        `after`; `:limit` rows. Each walks the index of its order
        (ix_lg_threads_app_activity, ix_lg_threads_app_user) and probes the
        checkpoints' key once per row for the root graph's latest."""
        conditions = ["t.app_name = :app_name", LIVE]
        if of_user:
            conditions.append("t.user_id = :user_id")
        if after:
            time = self._dialect.typed(":after_time", "float8")
            thread = self._dialect.typed(":after_thread", "text")
            conditions.append(f"(t.update_time, t.thread_id) < ({time}, {thread})")
        return f"""
SELECT t.thread_id, t.user_id, t.create_time, t.update_time, t.expire_time,
       (SELECT c.checkpoint_id FROM lg_checkpoints AS c
         WHERE c.app_name = t.app_name AND c.thread_id = t.thread_id AND c.checkpoint_ns = ''
         ORDER BY c.checkpoint_id DESC LIMIT 1) AS latest_checkpoint_id
  FROM lg_threads AS t
 WHERE {" AND ".join(conditions)}
 ORDER BY t.update_time DESC, t.thread_id DESC
 LIMIT :limit
"""
