"""The store routes' own errors (mapped to problem+json with the rest)."""

from ...core.errors import ServiceError


class ItemNotFound(ServiceError):
    status = 404
    code = "item_not_found"
    title = "Item not found"


class ItemTooLarge(ServiceError):
    status = 422
    code = "item_too_large"
    title = "Item too large"
