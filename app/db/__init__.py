"""Storage: tables, engine, the `Store` protocol and its two implementations."""
