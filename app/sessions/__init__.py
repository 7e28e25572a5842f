"""Sessions, their events and scoped state: rules, routes, fast paths, and the
stores on PostgreSQL and SQLite."""
