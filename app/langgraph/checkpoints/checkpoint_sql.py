"""The statements on a checkpoint's own row (lg_checkpoints) that read the
same in both dialects, with `:name` parameters; the backends
(app.langgraph.checkpoints.postgresql, .sqlite) run them."""

from ..dialects import Dialect
from ..expiry import LIVE

# A checkpoint stored again under its id replaces the one stored before.
ON_CHECKPOINT_CONFLICT = """
ON CONFLICT (app_name, thread_id, checkpoint_ns, checkpoint_id) DO UPDATE
   SET parent_checkpoint_id = excluded.parent_checkpoint_id, run_id = excluded.run_id,
       checkpoint_type = excluded.checkpoint_type, checkpoint = excluded.checkpoint,
       channel_versions = excluded.channel_versions, metadata = excluded.metadata"""
UPSERT_CHECKPOINT = f"""
INSERT INTO lg_checkpoints
       (app_name, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id,
        checkpoint_type, checkpoint, channel_versions, metadata)
VALUES (:app_name, :thread_id, :checkpoint_ns, :checkpoint_id, :parent, :run_id,
        :checkpoint_type, :checkpoint, :channel_versions, :metadata)
{ON_CHECKPOINT_CONFLICT}
"""


def app_list(dialect: Dialect, contains: str) -> str:
    """A page of the checkpoints of an app's live threads (LangGraph's list
    with no config), `:user_id`'s only when given: newest id first, then
    thread id and namespace descending, after (`:after_id`, `:after_thread`,
    `:after_ns`) when given; `contains` is the metadata filter's condition on
    `c.metadata`. Like PostgresSaver's list(None), it reads the app's
    checkpoints in id order: no index serves an app-wide order by id."""

    def given(name: str) -> str:
        return f"{dialect.typed(':' + name, 'text')} IS NULL"

    after = ", ".join(dialect.typed(f":{name}", "text") for name in _AFTER)
    return f"""
SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id,
       c.checkpoint_type, c.checkpoint, c.metadata, c.channel_versions
  FROM lg_checkpoints AS c
  JOIN lg_threads AS t ON t.app_name = c.app_name AND t.thread_id = c.thread_id
 WHERE c.app_name = :app_name AND {LIVE}
   AND ({given("user_id")} OR t.user_id = :user_id)
   AND ({given("checkpoint_ns")} OR c.checkpoint_ns = :checkpoint_ns)
   AND ({given("before")} OR c.checkpoint_id < :before)
   AND ({given("after_id")} OR (c.checkpoint_id, c.thread_id, c.checkpoint_ns) < ({after}))
   AND {contains}
 ORDER BY c.checkpoint_id DESC, c.thread_id DESC, c.checkpoint_ns DESC
 LIMIT :limit
"""


_AFTER = ("after_id", "after_thread", "after_ns")
