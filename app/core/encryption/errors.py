"""What opening a sealed value can fail with. Both name the key id and never
the value: a reader gets a clear error, never garbage.

Both are service errors (500, each with its code): the request is sound, the
deployment is not (a key removed too early, a row damaged), so the operator
is the one to act; every layer that opens values (sessions, memory,
LangGraph) reports them alike."""

from ..errors import ServiceError


class EncryptionKeyMissing(ServiceError):
    status = 500
    code = "encryption_key_missing"
    title = "Encryption key missing"

    def __init__(self, key_id: str) -> None:
        super().__init__(
            f"a stored value is sealed with encryption key {key_id!r}, which is not among "
            "SESSION_STATE_ENCRYPTION_KEYS; add it back (run `session-state reencrypt` "
            "before removing a key)"
        )
        self.key_id = key_id


class DamagedCiphertext(ServiceError):
    status = 500
    code = "stored_value_damaged"
    title = "Stored value damaged"

    def __init__(self, key_id: str | None, why: str) -> None:
        where = f" (key {key_id!r})" if key_id is not None else ""
        super().__init__(f"a stored sealed value cannot be opened{where}: {why}")
        self.key_id = key_id
