"""Benchmarks: session-state against ADK's DatabaseSessionService and the
minimal asyncpg transaction, side by side on one PostgreSQL."""
