"""Live streams of a session's changes: change numbers, tombstones, the
listeners told of a change, and Server-Sent Events."""
