"""Comparing JSON values exactly, number types and float bits included."""


def exactly(value):
    """`value` with every number tagged by its type, and floats by their bits,
    so that a comparison fails on 1 vs 1.0, 0.0 vs -0.0 or a last-bit change."""
    if isinstance(value, dict):
        return {key: exactly(item) for key, item in value.items()}
    if isinstance(value, list):
        return [exactly(item) for item in value]
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, bool | int):
        return (type(value).__name__, value)
    return value
