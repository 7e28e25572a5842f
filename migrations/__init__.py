"""Alembic migrations of session-state (one history for SQLite and PostgreSQL)."""
