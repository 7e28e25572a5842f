"""The statements on a checkpoint's own row (lg_checkpoints) that read the
same in both dialects, with `:name` parameters; the backends
(app.langgraph.checkpoints.postgresql, .sqlite) run them."""

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
