"""Live streams (server-sent events): their heartbeat, slow readers, and how
far back a user stream can resume."""

from pydantic import Field

from .group import SettingGroup


class StreamSettings(SettingGroup):
    """The heartbeat and send timeout of every live stream, and how long user
    streams' tombstones are kept for resuming (the sweeper prunes older ones)."""

    title = "Live streams"

    stream_heartbeat_seconds: float = Field(
        default=15.0,
        gt=0,
        le=15,
        description="Live streams: a comment line goes out after this long without a "
        "message, and storage is read again (a lost change notification costs at most this).",
    )
    stream_send_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="Live streams: a reader that takes no data for this long, its "
        "connection's buffer full, is cut off (it resumes with Last-Event-ID).",
    )
    tombstone_retention_seconds: float = Field(
        default=7 * 24 * 3600.0,
        gt=0,
        le=10 * 365 * 24 * 3600.0,
        description="User streams: how long deletions and expiries are kept for a "
        "resuming stream; a cursor older than that gets `reset` (the sweeper prunes them).",
    )
