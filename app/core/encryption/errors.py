"""What opening a sealed value can fail with. Both name the key id and never
the value: a reader gets a clear error, never garbage."""


class EncryptionKeyMissing(Exception):
    def __init__(self, key_id: str) -> None:
        super().__init__(
            f"a stored value is sealed with encryption key {key_id!r}, which is not among "
            "SESSION_STATE_ENCRYPTION_KEYS; add it back (run `session-state reencrypt` "
            "before removing a key)"
        )
        self.key_id = key_id


class DamagedCiphertext(Exception):
    def __init__(self, key_id: str | None, why: str) -> None:
        where = f" (key {key_id!r})" if key_id is not None else ""
        super().__init__(f"a stored sealed value cannot be opened{where}: {why}")
        self.key_id = key_id
