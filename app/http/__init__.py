"""What every route shares: middleware, API keys, problem+json, request bodies,
responses, page tokens and the OpenAPI layout. Features hold their own routes."""
