"""Each backend's store: every feature's storage assembled on one database connection (a pool for PostgreSQL, an engine for SQLite). The composition root (app.stores) opens one."""
