"""Moving data in and out: the dump format, `session-state export` and
`session-state import`."""
