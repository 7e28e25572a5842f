"""The `session-state` command."""
