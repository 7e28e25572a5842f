"""Encryption at rest of sessions and memory: what is sealed (`sealing`), the
store that seals and opens around a backend's (`sealed_store`), and
`session-state reencrypt`, which moves every stored value to the current key
(`reencrypt`, with each backend's walk)."""
