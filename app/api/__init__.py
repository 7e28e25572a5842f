"""HTTP layer: routes, dependencies, error handlers."""
