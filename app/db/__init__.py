"""Storage: tables, engine and the SQL of the repository."""
